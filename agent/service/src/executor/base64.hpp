#pragma once
// Base64 (OpenSSL's EVP encoder) for file contents in code requests and results.
#include <optional>
#include <string>
#include <string_view>

namespace sandcell::agent_service {

std::string base64_encode(std::string_view bytes);
// nullopt when `text` is not valid base64.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sandcell::agent_service
