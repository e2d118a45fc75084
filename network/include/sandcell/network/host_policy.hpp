#pragma once
// Which host names a sandbox may reach through the proxy (`--net allow:...`).
// Every name is normalised before it is compared, so "Allowed.TEST." and "allowed.test" are the
// same host and "bücher.example" is compared as its A-label "xn--bcher-kva.example".
#include <filesystem>
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

// The allowlist of `--net allow:a.com,*.b.com` and `--net-allow-file FILE`.
// "a.com" matches a.com only. "*.b.com" matches every strictly deeper name (x.b.com, x.y.b.com),
// never b.com itself. IP literals match only when listed literally (after canonicalisation).
class Allowlist {
 public:
  // "allow:a.com,*.b.com" or "a.com,*.b.com". Throws Error::invalid on a bad entry.
  static Allowlist parse(std::string_view spec);
  // One entry per line; '#' starts a comment; blank lines are ignored.
  static Allowlist from_file(const std::filesystem::path& file);

  void add(std::string_view entry);
  void merge(const Allowlist& other);
  bool allows(const NormalisedHost& host) const;
  bool empty() const { return exact_.empty() && wildcard_suffixes_.empty(); }
  // The normalised entries, wildcards as "*.b.com": for the result record and messages.
  std::vector<std::string> entries() const;

 private:
  std::set<std::string> exact_;              // names and IP literals
  std::set<std::string> wildcard_suffixes_;  // ".b.com" for "*.b.com"
};

}  // namespace sandcell::network
