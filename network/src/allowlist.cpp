// The allowlist: entries of a host pattern (an exact name, a "*.suffix" wildcard or a literally
// listed IP address) and a port rule, all stored normalised so matching is plain comparison.
// The grammar (host_policy.hpp):
//   HOST | HOST:PORT | HOST:LOW-HIGH | *.DOMAIN[:PORT[-PORT]] | [IPv6][:PORT[-PORT]] | IPv6
#include <charconv>
#include <fstream>
#include <sstream>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

constexpr uint16_t kDefaultConnectPort = 443;
constexpr uint16_t kDefaultHttpPort = 80;

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// Decimal digits only (no sign, no spaces, no hex), 1-65535.
uint16_t parse_port(std::string_view text) {
  if (text.empty()) throw Error::invalid("missing port number");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range || (ec == std::errc() && value > 65535))
    throw Error::invalid("port " + std::string(text) + " is out of range (1-65535)");
  if (ec != std::errc() || end != text.data() + text.size())
    throw Error::invalid("port '" + std::string(text) + "' is not a number");
  if (value == 0) throw Error::invalid("port 0 is out of range (1-65535)");
  return static_cast<uint16_t>(value);
}

PortRule parse_ports(std::string_view text) {
  if (text.empty()) throw Error::invalid("missing port after ':'");
  const auto dash = text.find('-');
  const uint16_t low = parse_port(text.substr(0, dash));
  const uint16_t high = dash == std::string_view::npos ? low : parse_port(text.substr(dash + 1));
  if (high < low)
    throw Error::invalid("port range " + std::string(text) + " runs backwards");
  return PortRule{.low = low, .high = high};
}

// Splits "host:ports", "[v6]:ports" and a bare IPv6 literal (which takes no port).
std::pair<std::string_view, std::optional<std::string_view>> split_host_ports(
    std::string_view text) {
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos) throw Error::invalid("'[' without ']'");
    const auto rest = text.substr(close + 1);
    if (rest.empty()) return {text, std::nullopt};
    if (rest[0] != ':') throw Error::invalid("only ':PORT' may follow ']'");
    return {text.substr(0, close + 1), rest.substr(1)};
  }
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) return {text, std::nullopt};
  if (text.find(':', colon + 1) != std::string_view::npos) return {text, std::nullopt};  // IPv6
  if (colon == 0) throw Error::invalid("missing host before ':'");
  return {text.substr(0, colon), text.substr(colon + 1)};
}

std::string port_refusal(const std::vector<const AllowlistEntry*>& named, uint16_t port) {
  std::string reason = "port " + std::to_string(port) + " not allowed:";
  for (const AllowlistEntry* entry : named) {
    reason += (entry == named.front() ? " " : "; ") + entry->to_string();
    reason += entry->ports.is_default()
                  ? " opens CONNECT to 443 and HTTP to 80 only"
                  : " opens " + entry->ports.to_string().substr(1) + " only";
  }
  return reason;
}

}  // namespace

bool PortRule::allows(uint16_t port, bool connect) const {
  if (is_default()) return port == (connect ? kDefaultConnectPort : kDefaultHttpPort);
  return port >= low && port <= high;
}

std::string PortRule::to_string() const {
  if (is_default()) return "";
  if (low == high) return ":" + std::to_string(low);
  return ":" + std::to_string(low) + "-" + std::to_string(high);
}

AllowlistEntry AllowlistEntry::parse(std::string_view text) {
  try {
    auto [host_text, port_text] = split_host_ports(text);
    AllowlistEntry entry;
    if (port_text) entry.ports = parse_ports(*port_text);
    if (host_text.starts_with("*.")) {
      entry.wildcard = true;
      host_text.remove_prefix(2);
    } else if (host_text.find('*') != std::string_view::npos) {
      throw Error::invalid("a wildcard must be a whole leading label (*.example.com)");
    }
    const NormalisedHost host = normalise_host(host_text);
    if (entry.wildcard && host.ip_literal) throw Error::invalid("wildcard over an IP address");
    entry.host = host.name;
    entry.ip_literal = host.ip_literal;
    return entry;
  } catch (const Error& e) {
    throw Error::invalid("allowlist entry '" + std::string(text) + "': " + e.what());
  }
}

bool AllowlistEntry::matches(const NormalisedHost& requested) const {
  if (!wildcard) return requested.name == host;
  // "*.b.com" matches "x.b.com" (longer than ".b.com"), never "b.com" or "xb.com".
  return !requested.ip_literal && requested.name.size() > host.size() + 1 &&
         requested.name.ends_with(host) &&
         requested.name[requested.name.size() - host.size() - 1] == '.';
}

std::string AllowlistEntry::to_string() const {
  if (wildcard) return "*." + host + ports.to_string();
  if (ip_literal && host.find(':') != std::string::npos) return "[" + host + "]" + ports.to_string();
  return host + ports.to_string();
}

Allowlist Allowlist::parse(std::string_view spec) {
  if (spec.starts_with("allow:")) spec.remove_prefix(6);
  Allowlist list;
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const auto entry = trim(spec.substr(0, comma));
    if (entry.empty()) throw Error::invalid("--net allow: empty domain in the list");
    list.add(entry);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
    if (spec.empty()) throw Error::invalid("--net allow: empty domain in the list");
  }
  return list;
}

Allowlist Allowlist::from_file(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw Error(errno, "open allow file " + file.string());
  Allowlist list;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const auto entry = trim(std::string_view(line).substr(0, line.find('#')));
    if (entry.empty()) continue;
    try {
      list.add(entry);
    } catch (const Error& e) {
      throw Error::invalid(file.string() + ":" + std::to_string(number) + ": " + e.what());
    }
  }
  return list;
}

void Allowlist::add(std::string_view entry) {
  entries_.insert(AllowlistEntry::parse(entry));
}

void Allowlist::merge(const Allowlist& other) {
  entries_.insert(other.entries_.begin(), other.entries_.end());
}

bool Allowlist::allows(const NormalisedHost& host) const {
  for (const auto& entry : entries_)
    if (entry.matches(host)) return true;
  return false;
}

std::optional<std::string> Allowlist::refusal(const NormalisedHost& host, uint16_t port,
                                              bool connect) const {
  std::vector<const AllowlistEntry*> named;
  for (const auto& entry : entries_) {
    if (!entry.matches(host)) continue;
    if (entry.ports.allows(port, connect)) return std::nullopt;
    named.push_back(&entry);
  }
  if (named.empty()) return host.ip_literal ? "ip literal" : "not in allowlist";
  return port_refusal(named, port);
}

std::vector<std::string> Allowlist::entries() const {
  std::vector<std::string> out;
  for (const auto& entry : entries_) out.push_back(entry.to_string());
  return out;
}

}  // namespace sandcell::network
