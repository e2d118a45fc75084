#pragma once
// Base64 (RFC 4648 §4, padded) through OpenSSL: Basic credentials and Docker's "auth" fields.
#include <optional>
#include <string>

namespace sandcell::rootfs_builder {

std::string base64_encode(const std::string& bytes);
std::optional<std::string> base64_decode(const std::string& text);  // nullopt: not base64

}  // namespace sandcell::rootfs_builder
