// The allowlist: exact names, "*.suffix" wildcards (strictly deeper names only) and literally
// listed IP addresses, all stored normalised so matching is plain string comparison.
#include <fstream>
#include <sstream>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::network {
namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

}  // namespace

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
  if (entry.starts_with("*.")) {
    const auto base = normalise_host(entry.substr(2));
    if (base.ip_literal) throw Error::invalid("wildcard over an IP address: " + std::string(entry));
    wildcard_suffixes_.insert("." + base.name);
    return;
  }
  if (entry.find('*') != std::string_view::npos) {
    throw Error::invalid("a wildcard must be a whole leading label (*.example.com): " +
                         std::string(entry));
  }
  exact_.insert(normalise_host(entry).name);
}

void Allowlist::merge(const Allowlist& other) {
  exact_.insert(other.exact_.begin(), other.exact_.end());
  wildcard_suffixes_.insert(other.wildcard_suffixes_.begin(), other.wildcard_suffixes_.end());
}

bool Allowlist::allows(const NormalisedHost& host) const {
  if (exact_.contains(host.name)) return true;
  if (host.ip_literal) return false;
  for (const auto& suffix : wildcard_suffixes_) {
    // ".b.com" matches "x.b.com" (longer than the suffix), never "b.com" or "xb.com".
    if (host.name.size() > suffix.size() && host.name.ends_with(suffix)) return true;
  }
  return false;
}

std::vector<std::string> Allowlist::entries() const {
  std::vector<std::string> out(exact_.begin(), exact_.end());
  for (const auto& suffix : wildcard_suffixes_) out.push_back("*" + suffix);
  return out;
}

}  // namespace sandcell::network
