// The nft script of one sandbox (see nft_rules.hpp). Every rule matches the run's own link, so a
// rule can never affect traffic of the host or of another run; drops are final in nftables, so
// one run's chains cannot open anything another run's chains close.
#include "sandcell/network/nft_rules.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>

#include "host_lock.hpp"
#include "nft_context.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::network {
namespace {

constexpr const char* kTable = "inet sandcell";

void check_id(const std::string& id) {
  const bool ok = id.size() == 8 && std::all_of(id.begin(), id.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                  });
  if (!ok) throw Error::invalid("firewall id must be 8 lower-case hex digits: " + id);
}

std::string chain(const std::string& id, const char* hook) {
  return "sc-" + id + "-" + hook;
}

std::string base_chain(const std::string& name, const char* type, const char* hook,
                       const char* priority) {
  return std::string("add chain ") + kTable + " " + name + " { type " + type + " hook " + hook +
         " priority " + priority + "; policy accept; }\n";
}

std::string set_of(const std::vector<std::string>& items) {
  std::string out = "{ ";
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + items[i];
  return out + " }";
}

std::string allow_mode_rules(const FirewallSpec& s, const std::string& in, const std::string& fwd) {
  const std::string link = "iifname \"sc-" + s.id + "h\" ";
  const std::string rule = std::string("add rule ") + kTable + " ";
  return rule + in + " " + link + "ct state established,related accept\n" + rule + in + " " + link +
         "ip saddr " + s.sandbox_address.to_string() + " ip daddr " + s.host_address.to_string() +
         " tcp dport " + std::to_string(s.proxy_port) + " ct state new accept\n" + rule + in + " " +
         link + "drop\n" + rule + fwd + " " + link + "drop\n" + rule + fwd + " oifname \"sc-" +
         s.id + "h\" drop\n";
}

std::string full_mode_forward(const FirewallSpec& s, const std::string& fwd) {
  const std::string in =
      "add rule " + std::string(kTable) + " " + fwd + " iifname \"sc-" + s.id + "h\" ";
  const std::string out =
      "add rule " + std::string(kTable) + " " + fwd + " oifname \"sc-" + s.id + "h\" ";
  std::string rules = out + "ct state established,related accept\n" + out + "drop\n" + in +
                      "meta nfproto != ipv4 drop\n" + in +
                      "ip saddr != " + s.sandbox_address.to_string() + " drop\n";
  for (const auto& cidr : s.allowed_cidrs) {
    if (cidr.network().family == AF_INET)
      rules += in + "ip daddr " + cidr.to_string() + " accept\n";
  }
  std::vector<std::string> resolvers;
  for (const auto& r : s.resolvers) {
    if (r.family == AF_INET) resolvers.push_back(r.to_string());
  }
  if (!resolvers.empty()) {
    rules +=
        in + "ip daddr " + set_of(resolvers) + " meta l4proto { tcp, udp } th dport 53 accept\n";
  }
  std::vector<std::string> blocked;
  for (const auto& cidr : blocked_ipv4_ranges()) blocked.push_back(cidr.to_string());
  return rules + in + "ip daddr " + set_of(blocked) + " drop\n" + in + "accept\n";
}

std::string firewall_script(const FirewallSpec& s) {
  const std::string in = chain(s.id, "input");
  const std::string fwd = chain(s.id, "forward");
  std::string script = std::string("add table ") + kTable + "\n" +
                       base_chain(in, "filter", "input", "filter") +
                       base_chain(fwd, "filter", "forward", "filter");
  if (s.mode == NetMode::Allow) return script + allow_mode_rules(s, in, fwd);
  const std::string link = "iifname \"sc-" + s.id + "h\" ";
  const std::string post = chain(s.id, "postrouting");
  return script + "add rule " + kTable + " " + in + " " + link +
         "ct state established,related accept\n" + "add rule " + kTable + " " + in + " " + link +
         "drop\n" + full_mode_forward(s, fwd) + base_chain(post, "nat", "postrouting", "srcnat") +
         "add rule " + kTable + " " + post + " ip saddr " + s.sandbox_address.to_string() +
         " oifname != \"sc-" + s.id + "h\" masquerade\n";
}

}  // namespace

SandboxFirewall::SandboxFirewall(FirewallSpec spec) : spec_(std::move(spec)) {
  check_id(spec_.id);
  if (spec_.host_address.family != AF_INET || spec_.sandbox_address.family != AF_INET) {
    throw Error::invalid("firewall addresses must be IPv4");
  }
  if (spec_.mode == NetMode::Allow && spec_.proxy_port == 0) {
    throw Error::invalid("firewall in allow mode needs the proxy port");
  }
  script_ = firewall_script(spec_);
  HostNetworkLock lock;
  NftContext().run(script_, "install nft rules for sc-" + spec_.id + "h");
  installed_ = true;
}

SandboxFirewall::~SandboxFirewall() {
  try {
    remove();
  } catch (const std::exception&) {
    // Left for `sandcell gc`, which removes chains whose run is gone.
  }
}

void SandboxFirewall::remove() {
  if (!installed_) return;
  remove_firewall(spec_.id);
  installed_ = false;
}

namespace {

// The chains of `inet sandcell`, or nullopt when the table does not exist.
std::optional<std::vector<std::string>> table_chains() {
  NftContext nft(true);
  const auto tables = nlohmann::json::parse(nft.run("list tables inet", "list nft tables"));
  bool present = false;
  for (const auto& item : tables.value("nftables", nlohmann::json::array())) {
    if (item.contains("table") && item["table"].value("name", "") == "sandcell") present = true;
  }
  if (!present) return std::nullopt;
  const auto listing =
      nlohmann::json::parse(nft.run("list table inet sandcell", "list nft table inet sandcell"));
  std::vector<std::string> chains;
  for (const auto& item : listing.value("nftables", nlohmann::json::array())) {
    if (item.contains("chain")) chains.push_back(item["chain"].value("name", ""));
  }
  return chains;
}

}  // namespace

std::vector<std::string> sandcell_chains() {
  return table_chains().value_or(std::vector<std::string>{});
}

void remove_firewall(const std::string& id) {
  check_id(id);
  HostNetworkLock lock;
  const auto chains = table_chains();
  if (!chains) return;
  std::string script;
  size_t left = 0;
  for (const auto& name : *chains) {
    if (name.starts_with("sc-" + id + "-")) {
      script += std::string("flush chain ") + kTable + " " + name + "\ndelete chain " + kTable +
                " " + name + "\n";
    } else {
      ++left;
    }
  }
  if (left == 0) script += std::string("delete table ") + kTable + "\n";
  if (!script.empty()) NftContext().run(script, "remove nft rules of sc-" + id + "h");
}

}  // namespace sandcell::network

namespace sandcell::network {

void remove_empty_sandcell_table() {
  HostNetworkLock lock;
  const auto chains = table_chains();
  if (chains && chains->empty()) {
    NftContext().run(std::string("delete table ") + kTable + "\n", "delete empty nft table");
  }
}

}  // namespace sandcell::network
