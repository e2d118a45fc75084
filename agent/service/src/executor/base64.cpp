#include "executor/base64.hpp"

#include <openssl/evp.h>

#include <vector>

namespace sandcell::agent_service {

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  std::string clean;
  for (char c : text)
    if (c != '\n' && c != '\r' && c != ' ') clean += c;
  if (clean.size() % 4 != 0) return std::nullopt;
  if (clean.empty()) return std::string();
  std::string out(clean.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
  if (n < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  size_t padding = clean.ends_with("==") ? 2 : clean.ends_with('=') ? 1 : 0;
  out.resize(static_cast<size_t>(n) - padding);
  return out;
}

}  // namespace sandcell::agent_service
