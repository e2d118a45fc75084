// normalise_host(): the one place a requested host becomes comparable. The order matters: bytes
// are checked before anything interprets them (a NUL would cut the name short in C APIs, an '@'
// means userinfo), IP literals are recognised before IDNA (inet_aton's legacy forms "127.1" and
// "2130706433" must not pass as names), and the A-label result is checked again, IP forms included.
#include <arpa/inet.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>

#include "dynamic_libs.hpp"
#include "sandcell/network/address_policy.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

constexpr size_t kMaxName = 253;
constexpr size_t kMaxLabel = 63;

[[noreturn]] void bad_host(const std::string& why) {
  throw Error::invalid("bad host: " + why);
}

void check_bytes(std::string_view raw) {
  for (unsigned char c : raw) {
    if (c == '\0') bad_host("contains a NUL byte");
    if (c < 0x20 || c == 0x7f) bad_host("contains a control character");
    if (c == ' ') bad_host("contains whitespace");
    if (c == '@') bad_host("contains '@' (userinfo)");
    if (c == ':') bad_host("contains ':'");
    if (c >= 0x80) continue;  // UTF-8, for IDNA
    if (!std::isalnum(c) && c != '-' && c != '.' && c != '_')
      bad_host(std::string("contains '") + static_cast<char>(c) + "'");
  }
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return c < 0x80 ? std::tolower(c) : c; });
  return out;
}

std::optional<NormalisedHost> ipv6_literal(std::string_view raw) {
  if (raw.size() >= 2 && raw.front() == '[' && raw.back() == ']')
    raw = raw.substr(1, raw.size() - 2);
  if (raw.find(':') == std::string_view::npos || raw.find('%') != std::string_view::npos) {
    return std::nullopt;  // zone ids ("fe80::1%eth0") are never a destination
  }
  auto address = IpAddress::parse(raw);
  if (!address) bad_host("contains ':'");
  return NormalisedHost{.name = address->to_string(), .ip_literal = true};
}

std::optional<NormalisedHost> ipv4_literal(const std::string& name) {
  in_addr address{};
  // inet_aton accepts every legacy form browsers and curl accept: 127.1, 2130706433, 0x7f000001,
  // 0177.0.0.1. Our byte check already refused the whitespace it would stop at.
  if (inet_aton(name.c_str(), &address) == 1) {
    char text[INET_ADDRSTRLEN] = {};
    inet_ntop(AF_INET, &address, text, sizeof text);
    return NormalisedHost{.name = text, .ip_literal = true};
  }
  // WHATWG URL rule: a name whose last label is numeric is an IPv4 address or invalid.
  const auto last = name.substr(name.rfind('.') + 1);
  const bool decimal = !last.empty() && std::all_of(last.begin(), last.end(), ::isdigit);
  const bool hex = last.size() >= 2 && last[0] == '0' && last[1] == 'x';
  if (decimal || hex) bad_host("invalid IPv4 literal");
  return std::nullopt;
}

std::string to_a_label(const std::string& name) {
  char* out = nullptr;
  const int rc = idn2().to_ascii_8z(name.c_str(), &out, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
  std::unique_ptr<char, decltype(&std::free)> owned(out, &std::free);
  if (rc != IDN2_OK) bad_host(std::string("IDNA: ") + idn2().strerror(rc));
  return lower_ascii(owned.get());
}

// Before IDNA only the structure is checked; lengths and characters are the A-label's.
void check_labels(const std::string& name, bool a_label) {
  if (name.empty()) bad_host("empty name");
  if (a_label && name.size() > kMaxName) bad_host("name longer than 253 bytes");
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    const size_t length = (dot == std::string::npos ? name.size() : dot) - start;
    if (length == 0) bad_host("empty label");
    if (a_label && length > kMaxLabel) bad_host("label longer than 63 bytes");
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (unsigned char c : name) {
    if (!a_label) break;
    if (!std::isalnum(c) && c != '-' && c != '.' && c != '_')
      bad_host("not a host name after IDNA");
  }
}

}  // namespace

NormalisedHost normalise_host(std::string_view raw) {
  if (raw.empty()) bad_host("empty name");
  if (raw.find(':') != std::string_view::npos) {
    if (raw.find('\0') != std::string_view::npos) bad_host("contains a NUL byte");
    if (auto v6 = ipv6_literal(raw)) return *v6;
  }
  check_bytes(raw);
  std::string name = lower_ascii(raw);
  if (name.back() == '.') name.pop_back();
  if (name.empty()) bad_host("empty name");
  check_labels(name, false);  // idn2 would quietly accept some empty labels
  if (auto v4 = ipv4_literal(name)) return *v4;
  // UTS #46 maps before it encodes: ignorable code points vanish (U+034F) and full-width digits
  // and dots become ASCII, so "\u034f0" is "0" and "１２７．０．０．１" is "127.0.0.1". The result
  // is checked as if it had been typed, or an IP address would pass as a host name.
  name = to_a_label(name);
  if (!name.empty() && name.back() == '.') name.pop_back();
  check_labels(name, true);
  if (auto v4 = ipv4_literal(name)) return *v4;
  return NormalisedHost{.name = name, .ip_literal = false};
}

}  // namespace sandcell::network
