#pragma once
// Which host names a sandbox may reach through the proxy (`--net allow:...`).
// Every name is normalised before it is compared, so "Allowed.TEST." and "allowed.test" are the
// same host and "bücher.example" is compared as its A-label "xn--bcher-kva.example".
#include <compare>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::network {

struct NormalisedHost {
  std::string name;  // lower-case A-label without trailing dot, or an IP literal in canonical text
  bool ip_literal = false;
};

// Lower-cases, strips one trailing dot, converts to the IDNA A-label (UTS 46 non-transitional,
// NFC input) and rejects anything that is not a plain host name: NUL and control bytes,
// whitespace, userinfo ('@'), ports (':'), '/', '%', empty labels, over-long names, and all-numeric
// last labels that are not a valid IPv4 literal. IPv4 literals in any inet_aton form ("127.1",
// "2130706433", "0x7f000001") and IPv6 literals (bare or in brackets) are recognised and returned
// canonical ("127.0.0.1", "::1") with ip_literal set, so they cannot sneak past as names.
// Throws Error::invalid("bad host: <why>").
NormalisedHost normalise_host(std::string_view raw);

// Which ports an allowlist entry opens. A bare HOST opens 443 to CONNECT and 80 to plain HTTP, the
// ports Squid's default SSL_ports/Safe_ports rules tunnel and forward to: an allowlist written
// for package downloads must not also open SSH, SMTP or Redis on the same hosts. HOST:PORT and
// HOST:LOW-HIGH open exactly those ports, to CONNECT and plain HTTP alike.
struct PortRule {
  uint16_t low = 0, high = 0;  // 0, 0: the default of a bare HOST

  bool is_default() const { return low == 0; }
  bool allows(uint16_t port, bool connect) const;
  std::string to_string() const;  // "" (default), ":443" or ":8000-8080"
  auto operator<=>(const PortRule&) const = default;
};

// One entry: "a.com", "a.com:8443", "a.com:8000-8080", "*.b.com", "*.b.com:443", "192.0.2.7:22",
// "[2001:db8::1]:443" (a bare IPv6 literal takes no port: "::1:443" is an address).
struct AllowlistEntry {
  std::string host;       // normalised; for a wildcard the base name ("b.com" for "*.b.com")
  bool wildcard = false;  // matches every strictly deeper name (x.b.com, x.y.b.com), never b.com
  bool ip_literal = false;
  PortRule ports;

  static AllowlistEntry parse(std::string_view text);  // Throws Error::invalid naming the entry.
  bool matches(const NormalisedHost& host) const;
  std::string to_string() const;  // canonical; parse(to_string()) gives the same entry
  auto operator<=>(const AllowlistEntry&) const = default;
};

// The allowlist of `--net allow:a.com,*.b.com:443` and `--net-allow-file FILE` (and of skill
// manifests and agent requests, which reach the runtime as the same `allow:` text).
// IP literals match only when listed literally (after canonicalisation).
class Allowlist {
 public:
  // "allow:a.com,*.b.com" or "a.com,*.b.com". Throws Error::invalid on a bad entry.
  static Allowlist parse(std::string_view spec);
  // One entry per line; '#' starts a comment; blank lines are ignored.
  static Allowlist from_file(const std::filesystem::path& file);

  void add(std::string_view entry);
  void merge(const Allowlist& other);
  // Whether any entry names `host`, on any port.
  bool allows(const NormalisedHost& host) const;
  // Nothing when an entry opens `port` on `host` to this kind of request (CONNECT or plain
  // HTTP); otherwise the reason for the record and the 403: "not in allowlist", "ip literal", or
  // the port rule of every entry that names the host.
  std::optional<std::string> refusal(const NormalisedHost& host, uint16_t port,
                                     bool connect) const;
  bool empty() const { return entries_.empty(); }
  // The canonical entries ("a.com", "*.b.com:443"): for the result record and messages.
  std::vector<std::string> entries() const;

 private:
  std::set<AllowlistEntry> entries_;
};

}  // namespace sandcell::network
