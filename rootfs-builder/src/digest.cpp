#include "sandcell/rootfs_builder/digest.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

#include <array>

#include "file_chunks.hpp"
#include "sandcell/runtime/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
  ~Context() { EVP_MD_CTX_free(md); }
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  ctx_->md = EVP_MD_CTX_new();
  if (ctx_->md == nullptr || EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) != 1)
    throw Error(ENOMEM, "sha256 init");
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, std::size_t size) {
  if (size != 0 && EVP_DigestUpdate(ctx_->md, data, size) != 1) throw Error(EIO, "sha256 update");
}

std::string Sha256::finish_hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx_->md, md.data(), &len) != 1) throw Error(EIO, "sha256 final");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(len * 2);
  for (unsigned int i = 0; i < len; ++i) {
    hex.push_back(kHex[md[i] >> 4]);
    hex.push_back(kHex[md[i] & 0xf]);
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
