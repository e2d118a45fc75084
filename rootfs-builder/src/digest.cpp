#include "sandcell/rootfs_builder/digest.hpp"

#include <fcntl.h>
#include <openssl/opensslconf.h>
#include <unistd.h>

// OpenSSL 3's EVP digests go through a provider, and the first one in a process initialises the
// library: it reads openssl.cnf and loads the default provider's algorithm tables, ~0.8 ms on
// the CI VM, paid by every image run (the store checks the digests of the manifest and config
// it reads) and so by every `sandcell code`. The SHA256_* functions are the same implementation
// (SHA-NI/AVX2 assembly) without any of that: +0.02 ms for a first digest (bench/README.md,
// "Session 15"). They are deprecated in OpenSSL 3, not removed; a libcrypto built without the
// deprecated API (OPENSSL_NO_DEPRECATED_3_0) gets the EVP path. Nothing else of the library is
// initialised by a digest this way: TLS (libcurl, loaded for pulls) reads the configuration as
// it always did.
#if defined(OPENSSL_NO_DEPRECATED_3_0)
#define SANDCELL_SHA256_EVP 1
#include <openssl/evp.h>
#else
#define SANDCELL_SHA256_EVP 0
#include <openssl/sha.h>
#endif

#include <array>

#include "file_chunks.hpp"
#include "sandcell/base/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {

#if SANDCELL_SHA256_EVP
struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw Error(ENOMEM, "sha256 init");
}

void Sha256::update(const void* data, std::size_t size) {
  if (size != 0 && EVP_DigestUpdate(ctx_->md, data, size) != 1) throw Error(EIO, "sha256 update");
}
#else
// Deprecated in OpenSSL 3 (see above): the warnings are for these three calls only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
namespace {
bool sha256_init(SHA256_CTX& sha) {
  return SHA256_Init(&sha) == 1;
}
bool sha256_update(SHA256_CTX& sha, const void* data, std::size_t size) {
  return SHA256_Update(&sha, data, size) == 1;
}
bool sha256_final(SHA256_CTX& sha, unsigned char* md) {
  return SHA256_Final(md, &sha) == 1;
}
}  // namespace
#pragma GCC diagnostic pop

struct Sha256::Context {
  SHA256_CTX sha{};
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  if (!sha256_init(ctx_->sha)) throw Error(EIO, "sha256 init");
}

void Sha256::update(const void* data, std::size_t size) {
  if (size != 0 && !sha256_update(ctx_->sha, data, size)) throw Error(EIO, "sha256 update");
}
#endif

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

std::string Sha256::finish_hex() {
  std::array<unsigned char, 32> md{};
#if SANDCELL_SHA256_EVP
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md.data(), &len) != 1 || len != md.size())
    throw Error(EIO, "sha256 final");
#else
  if (!sha256_final(ctx_->sha, md.data())) throw Error(EIO, "sha256 final");
#endif
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(md.size() * 2);
  for (unsigned char byte : md) {
    hex.push_back(kHex[byte >> 4]);
    hex.push_back(kHex[byte & 0xf]);
  }
  return hex;
}

std::string sha256_digest(std::string_view data) {
  Sha256 sha;
  sha.update(data);
  return sha.finish();
}

std::string sha256_file_digest(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  Sha256 sha;
  for_each_chunk(fd.get(), path, [&](const char* data, size_t size) { sha.update(data, size); });
  return sha.finish();
}

bool is_valid_digest(std::string_view digest) {
  constexpr std::string_view kPrefix = "sha256:";
  if (digest.size() != kPrefix.size() + 64 || !digest.starts_with(kPrefix)) return false;
  for (char c : digest.substr(kPrefix.size()))
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::string digest_hex(std::string_view digest) {
  if (!is_valid_digest(digest)) throw Error::invalid("invalid digest: " + std::string(digest));
  return std::string(digest.substr(7));
}

}  // namespace sandcell::rootfs_builder
