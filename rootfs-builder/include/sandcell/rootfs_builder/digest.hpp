#pragma once
// Content digests as the OCI image-spec writes them: "sha256:<64 lowercase hex>".
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace sandcell::rootfs_builder {

// Streaming SHA-256 (OpenSSL EVP). finish() may be called once.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;

  void update(const void* data, std::size_t size);
  void update(std::string_view data) { update(data.data(), data.size()); }
  std::string finish_hex();  // 64 lowercase hex characters
  std::string finish() { return "sha256:" + finish_hex(); }

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

std::string sha256_digest(std::string_view data);         // "sha256:<hex>"
std::string sha256_file_digest(const std::string& path);  // streams the file

// Only sha256 digests are accepted: the algorithm every OCI tool must support, and the only
// one we can verify.
bool is_valid_digest(std::string_view digest);
// The hex part of a valid digest; throws Error::invalid otherwise.
std::string digest_hex(std::string_view digest);

}  // namespace sandcell::rootfs_builder
