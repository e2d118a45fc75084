// The table `inet sandcell` and the elements of one sandbox (see nft_rules.hpp).
#include "sandcell/network/nft_rules.hpp"

#include <fcntl.h>
#include <netinet/in.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "host_lock.hpp"
#include "netns_thread.hpp"
#include "nft_context.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

constexpr const char* kTable = "inet sandcell";
// Allow mode: link . sandbox address . host address . proxy port.
constexpr const char* kProxySet = "proxy";
// Full mode: link . sandbox address (the one source accepted from the link), the sandbox
// addresses to masquerade, link . destination opened by --net-allow-cidr, link . resolver.
constexpr const char* kNatLinksSet = "nat_links";
constexpr const char* kNatSourcesSet = "nat_sources";
constexpr const char* kOpenCidrsSet = "open_cidrs";
constexpr const char* kResolversSet = "resolvers";
constexpr const char* kRunSets[] = {kProxySet, kNatLinksSet, kNatSourcesSet, kOpenCidrsSet,
                                    kResolversSet};
// A run's elements carry a timeout only so that the run can expire them in place at its end
// (SandboxFirewall::withdraw); ten years is no limit on how long a run may last.
constexpr const char* kAlive = " timeout 3650d expires 3650d";
constexpr const char* kExpired = " timeout 3650d expires 1ms";
// An element listed with more left than this was not expired: the kernel (before Linux 6.10)
// ignores an update of an existing element's expiration.
constexpr long kExpiringSeconds = 60;

void check_id(const std::string& id) {
  const bool ok = id.size() == 8 && std::all_of(id.begin(), id.end(), [](char c) {
                    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                  });
  if (!ok) throw Error::invalid("firewall id must be 8 lower-case hex digits: " + id);
}

std::string link_of(const std::string& id) {
  return "\"sc-" + id + "h\"";
}

// set name → elements ("a . b . c"), in the order they are added.
using Elements = std::vector<std::pair<std::string, std::string>>;

Elements elements_of(const FirewallSpec& s) {
  const std::string link = link_of(s.id);
  const std::string sandbox = s.sandbox_address.to_string();
  if (s.mode == NetMode::Allow) {
    return {{kProxySet, link + " . " + sandbox + " . " + s.host_address.to_string() + " . " +
                            std::to_string(s.proxy_port)}};
  }
  Elements elements{{kNatLinksSet, link + " . " + sandbox}, {kNatSourcesSet, sandbox}};
  for (const auto& cidr : s.allowed_cidrs) {
    if (cidr.network().family == AF_INET)
      elements.emplace_back(kOpenCidrsSet, link + " . " + cidr.to_string());
  }
  std::set<std::string> resolvers;  // a set: adding an element twice in one transaction fails
  for (const auto& r : s.resolvers) {
    if (r.family == AF_INET) resolvers.insert(r.to_string());
  }
  for (const auto& r : resolvers) elements.emplace_back(kResolversSet, link + " . " + r);
  return elements;
}

// `options`: what follows each element inside the braces (timeout and expiry), or "".
std::string element_script(const char* verb, const Elements& elements, const char* options = "") {
  std::string script;
  for (const auto& [set, element] : elements)
    script +=
        std::string(verb) + " element " + kTable + " " + set + " { " + element + options + " }\n";
  return script;
}

std::string join(const std::vector<Cidr>& cidrs) {
  std::string out;
  for (const auto& cidr : cidrs) out += (out.empty() ? "" : ", ") + cidr.to_string();
  return out;
}

// The table as JSON objects (sets with their elements, chains, rules); nullopt when missing.
std::optional<nlohmann::json> list_table() {
  if (!sandcell_table_exists()) return std::nullopt;
  NftContext nft(true);
  return parse_bounded_json(nft.run("list table inet sandcell", "list nft table inet sandcell"))
      .value("nftables", nlohmann::json::array());
}

// The text of one listed element, as nft reads it back ("\"sc-…h\" . 198.18.0.2").
std::string element_text(const nlohmann::json& value) {
  if (value.is_string()) {
    const std::string text = value.get<std::string>();
    return text.starts_with("sc-") ? "\"" + text + "\"" : text;
  }
  if (value.is_number()) return std::to_string(value.get<long long>());
  if (value.is_object() && value.contains("prefix")) {
    const auto& p = value["prefix"];
    return p.value("addr", "") + "/" + std::to_string(p.value("len", 0));
  }
  if (value.is_object() && value.contains("range")) {
    return element_text(value["range"][0]) + "-" + element_text(value["range"][1]);
  }
  if (value.is_object() && value.contains("elem")) return element_text(value["elem"]["val"]);
  if (value.is_object() && value.contains("concat")) {
    std::string text;
    for (const auto& part : value["concat"])
      text += (text.empty() ? "" : " . ") + element_text(part);
    return text;
  }
  throw Error(EIO, "unexpected element in nft table inet sandcell: " + value.dump());
}

// Every element of the run sets, listed: (set, element text).
Elements listed_elements(const nlohmann::json& table) {
  Elements out;
  for (const auto& item : table) {
    if (!item.contains("set")) continue;
    const std::string name = item["set"].value("name", "");
    if (std::find(std::begin(kRunSets), std::end(kRunSets), name) == std::end(kRunSets)) continue;
    for (const auto& element : item["set"].value("elem", nlohmann::json::array()))
      out.emplace_back(name, element_text(element));
  }
  return out;
}

// "\"sc-1234abcdh\" . …" → "1234abcd"; "" for elements without a link (nat_sources).
std::string id_of(const std::string& element) {
  if (!element.starts_with("\"sc-") || element.size() < 14 || element[12] != 'h') return "";
  return element.substr(4, 8);
}

enum class TableFormat { Missing, Expirable, WithoutTimeouts };

// Whether `inet sandcell` has our sets, and whether they take element timeouts (tables made by
// sandcell before run elements were expired in place do not).
TableFormat table_format() {
  std::string listed;
  try {
    listed =
        NftContext(true).run(std::string("list set ") + kTable + " " + kProxySet, "list nft set");
  } catch (const Error&) {
    return TableFormat::Missing;
  }
  for (const auto& item :
       parse_bounded_json(listed).value("nftables", nlohmann::json::array())) {
    if (!item.contains("set")) continue;
    for (const auto& flag : item["set"].value("flags", nlohmann::json::array()))
      if (flag == "timeout") return TableFormat::Expirable;
  }
  return TableFormat::WithoutTimeouts;
}

}  // namespace

std::string sandcell_table_script() {
  const std::string t = std::string(kTable) + " ";
  const std::string add = "add rule " + t;
  return "add table " + t + "\n" + "add set " + t + kProxySet +
         " { type ifname . ipv4_addr . ipv4_addr . inet_service; flags timeout; }\n" + "add set " +
         t + kNatLinksSet + " { type ifname . ipv4_addr; flags timeout; }\n" + "add set " + t +
         kNatSourcesSet + " { type ipv4_addr; flags timeout; }\n" + "add set " + t + kOpenCidrsSet +
         " { type ifname . ipv4_addr; flags interval, timeout; }\n" + "add set " + t +
         kResolversSet + " { type ifname . ipv4_addr; flags timeout; }\n" + "add set " + t +
         "blocked { type ipv4_addr; flags interval; auto-merge; elements = { " +
         join(blocked_ipv4_ranges()) + " }; }\n" + "add chain " + t +
         "input { type filter hook input priority filter; policy accept; }\n" + "add chain " + t +
         "forward { type filter hook forward priority filter; policy accept; }\n" + "add chain " +
         t + "postrouting { type nat hook postrouting priority srcnat; policy accept; }\n" +
         "add chain " + t + "sandbox_to_host\n" + "add chain " + t + "into_sandbox\n" +
         "add chain " + t + "from_sandbox\n" + add +
         "input iifname \"sc-*\" jump sandbox_to_host\n" + add +
         "sandbox_to_host ct state established,related accept\n" + add +
         "sandbox_to_host iifname . ip saddr . ip daddr . tcp dport @" + kProxySet +
         " ct state new accept\n" + add + "sandbox_to_host drop\n" + add +
         "forward oifname \"sc-*\" jump into_sandbox\n" + add +
         "forward iifname \"sc-*\" jump from_sandbox\n" + add +
         "into_sandbox ct state established,related accept\n" + add + "into_sandbox drop\n" + add +
         "from_sandbox meta nfproto != ipv4 drop\n" +
         // Allow-mode links have no nat_links element: nothing of theirs is forwarded.
         add + "from_sandbox iifname . ip saddr != @" + kNatLinksSet + " drop\n" + add +
         "from_sandbox iifname . ip daddr @" + kOpenCidrsSet + " accept\n" + add +
         "from_sandbox iifname . ip daddr @" + kResolversSet +
         " meta l4proto { tcp, udp } th dport 53 accept\n" + add +
         "from_sandbox ip daddr @blocked drop\n" + add + "from_sandbox accept\n" +
         // No iifname in postrouting (the kernel has no input device there): match the source.
         add + "postrouting ip saddr @" + kNatSourcesSet + " oifname != \"sc-*\" masquerade\n";
}

namespace {

// The sandbox netns's table up to its output chain, with the remembering sets (the same in both
// filters, so SandboxFilter::dropped() reads either).
std::string filter_table_script() {
  const std::string t = std::string(kTable) + " ";
  const std::string kept = " flags dynamic; size " + std::to_string(kDroppedFlowsKept) + "; }\n";
  return "add table " + t + "\n" + "add set " + t +
         "blocked { type ipv4_addr; flags interval; auto-merge; elements = { " +
         join(blocked_ipv4_ranges()) + " }; }\n" + "add set " + t +
         "dropped { type ipv4_addr . inet_proto . inet_service;" + kept + "add set " + t +
         "dropped6 { type ipv6_addr . inet_proto . inet_service;" + kept + "add chain " + t +
         "output { type filter hook output priority filter; policy accept; }\n" + "add rule " + t +
         "output oifname \"lo\" accept\n";
}

std::string join_ipv4(const std::vector<IpAddress>& addresses) {
  std::set<std::string> texts;  // a set: nft refuses an element listed twice
  for (const auto& a : addresses)
    if (a.family == AF_INET) texts.insert(a.to_string());
  std::string out;
  for (const auto& text : texts) out += (out.empty() ? "" : ", ") + text;
  return out;
}

}  // namespace

std::string sandbox_filter_script(const std::vector<Cidr>& allowed_cidrs,
                                  const std::vector<IpAddress>& resolvers,
                                  const std::vector<IpAddress>& host_addresses) {
  const std::string t = std::string(kTable) + " ";
  const std::string add = "add rule " + t + "output ";
  std::vector<Cidr> open;
  for (const auto& cidr : allowed_cidrs)
    if (cidr.network().family == AF_INET) open.push_back(cidr);
  const std::string dns = join_ipv4(resolvers);
  const std::string host = join_ipv4(host_addresses);
  // Remembering a drop: `add @set { key }` adds the key once and is a no-op when it is there.
  const std::string remember4 = "add @dropped { ip daddr . meta l4proto . ";
  std::string script = filter_table_script() + add +
                       "meta nfproto ipv6 meta l4proto { tcp, udp } add @dropped6 { ip6 daddr . "
                       "meta l4proto . th dport } drop\n" +
                       add + "meta nfproto != ipv4 drop\n";
  if (!host.empty())
    script += add + "ip daddr { " + host + " } meta l4proto { tcp, udp } " + remember4 +
              "th dport } drop\n" + add + "ip daddr { " + host + " } " + remember4 + "0 } drop\n";
  if (!open.empty()) script += add + "ip daddr { " + join(open) + " } accept\n";
  if (!dns.empty())
    script += add + "ip daddr { " + dns + " } meta l4proto { tcp, udp } th dport 53 accept\n";
  return script + add + "ip daddr @blocked meta l4proto { tcp, udp } " + remember4 +
         "th dport } drop\n" + add + "ip daddr @blocked " + remember4 + "0 } drop\n";
}

std::string proxy_only_filter_script(const IpAddress& proxy, uint16_t proxy_port) {
  const std::string add = "add rule " + std::string(kTable) + " output ";
  const std::string remember4 = "add @dropped { ip daddr . meta l4proto . ";
  return filter_table_script() + add + "ip daddr " + proxy.to_string() + " tcp dport " +
         std::to_string(proxy_port) + " accept\n" + add +
         "meta nfproto ipv6 meta l4proto { tcp, udp } add @dropped6 { ip6 daddr . meta l4proto . "
         "th dport }\n" +
         add + "meta nfproto ipv4 meta l4proto { tcp, udp } " + remember4 + "th dport }\n" + add +
         "meta nfproto ipv4 meta l4proto != { tcp, udp } " + remember4 + "0 }\n";
}

namespace {

// nft names a protocol through getprotobynumber(3), that is /etc/protocols, and prints a number
// where that file is missing (a minimal root without netbase: the VM guest's debootstrap root
// printed "6 dropped by the firewall"). The record names the ones the filter sorts by itself.
std::string protocol_name(int number) {
  switch (number) {
    case IPPROTO_ICMP:
      return "icmp";
    case IPPROTO_TCP:
      return "tcp";
    case IPPROTO_UDP:
      return "udp";
    case IPPROTO_ICMPV6:
      return "ipv6-icmp";
    default:
      return std::to_string(number);
  }
}

}  // namespace

std::vector<DroppedFlow> parse_dropped_flows(const std::string& nft_json) {
  std::vector<DroppedFlow> flows;
  for (const auto& item :
       parse_bounded_json(nft_json).value("nftables", nlohmann::json::array())) {
    if (!item.contains("set")) continue;
    for (const auto& element : item["set"].value("elem", nlohmann::json::array())) {
      // {"concat": [address, protocol, port]}; with counters or timeouts it is wrapped in "elem".
      const nlohmann::json& key = element.contains("elem") ? element["elem"]["val"] : element;
      if (!key.is_object() || !key.contains("concat") || key["concat"].size() != 3) continue;
      const auto& parts = key["concat"];
      auto address = IpAddress::parse(parts[0].is_string() ? parts[0].get<std::string>() : "");
      if (!address) continue;
      std::string protocol =
          parts[1].is_string() ? parts[1].get<std::string>() : protocol_name(parts[1].get<int>());
      uint16_t port = parts[2].is_number() ? parts[2].get<uint16_t>() : 0;
      flows.push_back({.address = *address, .protocol = std::move(protocol), .port = port});
    }
  }
  return flows;
}

SandboxFilter::SandboxFilter(pid_t sandbox_pid, const std::vector<Cidr>& allowed_cidrs,
                             const std::vector<IpAddress>& resolvers)
    : SandboxFilter(sandbox_pid, sandbox_filter_script(allowed_cidrs, resolvers)) {}

SandboxFilter::SandboxFilter(pid_t sandbox_pid, const std::string& script) {
  const std::string path = "/proc/" + std::to_string(sandbox_pid) + "/ns/net";
  netns_.reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!netns_) throw Error(errno, "open " + path);
  run_in_netns(netns_.get(), [&] {
    // The context is made here: libnftables talks to the netns its netlink socket was opened in.
    NftContext().run(script, "install the sandbox's own nft filter");
  });
}

std::vector<DroppedFlow> SandboxFilter::dropped() const {
  if (!netns_) return {};
  std::vector<DroppedFlow> flows;
  run_in_netns(netns_.get(), [&] {
    NftContext nft(true);
    const std::string t = std::string(kTable) + " ";
    flows = parse_dropped_flows(
        nft.run("list set " + t + "dropped", "list the sandbox's dropped flows"));
    auto six = parse_dropped_flows(
        nft.run("list set " + t + "dropped6", "list the sandbox's dropped flows"));
    flows.insert(flows.end(), six.begin(), six.end());
  });
  return flows;
}

SandboxFirewall::SandboxFirewall(FirewallSpec spec)
    : SandboxFirewall(std::move(spec), HostLockHeld{}, true) {}

SandboxFirewall::SandboxFirewall(FirewallSpec spec, HostLockHeld)
    : SandboxFirewall(std::move(spec), HostLockHeld{}, false) {}

SandboxFirewall::SandboxFirewall(FirewallSpec spec, HostLockHeld, bool take_lock)
    : spec_(std::move(spec)) {
  check_id(spec_.id);
  if (spec_.host_address.family != AF_INET || spec_.sandbox_address.family != AF_INET) {
    throw Error::invalid("firewall addresses must be IPv4");
  }
  if (spec_.mode == NetMode::Allow && spec_.proxy_port == 0) {
    throw Error::invalid("firewall in allow mode needs the proxy port");
  }
  const Elements elements = elements_of(spec_);
  add_script_ = element_script("add", elements, kAlive);
  expire_script_ = element_script("add", elements, kExpired);
  delete_script_ = element_script("delete", elements);
  first_set_ = elements.front().first;
  first_element_ = elements.front().second;
  nft_ = std::make_unique<NftContext>();
  std::optional<HostNetworkLock> lock;
  if (take_lock) lock.emplace();
  install();
}

void SandboxFirewall::install() {
  try {
    nft_->run(add_script_, "install nft rules for sc-" + spec_.id + "h");  // the common case
  } catch (const Error&) {
    if (!install_with_table()) throw;  // the table is fine: the add failed for its own reason
  }
  installed_ = true;
}

// No table, a table without our sets (made by hand, or an older sandcell's, whose per-run chains
// stay untouched) or one whose sets take no timeouts: makes or remakes what is needed.
bool SandboxFirewall::install_with_table() {
  const std::string step = "install nft rules for sc-" + spec_.id + "h";
  switch (table_format()) {
    case TableFormat::Expirable:
      return false;
    case TableFormat::Missing:
      nft_->run(sandcell_table_script() + add_script_, step);
      return true;
    case TableFormat::WithoutTimeouts:
      break;
  }
  const auto table = list_table();
  if (table && listed_elements(*table).empty()) {  // idle: remade once, in the current form
    nft_->run(std::string("delete table ") + kTable + "\n", "delete the idle old nft table");
    nft_->run(sandcell_table_script() + add_script_, step);
    return true;
  }
  // Runs of an older sandcell use it: elements without timeouts, deleted at the end.
  add_script_ = element_script("add", elements_of(spec_));
  expire_script_.clear();
  nft_->run(add_script_, step);
  return true;
}

SandboxFirewall::~SandboxFirewall() {
  if (withdrawn_) return;  // expired (or expiring on the kernel's next tick): nothing to wait for
  try {
    remove();
  } catch (const std::exception&) {
    // Left for `sandcell gc`, which removes the elements of runs that are gone.
  }
}

void SandboxFirewall::withdraw() {
  if (!installed_ || withdrawn_) return;
  const std::string step = "remove nft rules of sc-" + spec_.id + "h";
  HostNetworkLock lock;
  if (expire_script_.empty()) {
    nft_->run(delete_script_, step);
    installed_ = false;
    return;
  }
  nft_->run(expire_script_, step);
  withdrawn_ = true;
  // Still listed with its full time left: this kernel ignored the update, so delete them.
  if (const auto left = first_element_seconds_left(); left && *left > kExpiringSeconds) {
    nft_->run(delete_script_, step);
    installed_ = false;
  }
}

void SandboxFirewall::remove() {
  if (!installed_) return;
  // An update of an element that is not there adds it (expiring): fail as a delete would
  // instead, when gc has removed the elements of a run it judged dead. A live run's elements
  // are never gc's, so withdraw() at the program's exit needs no such check.
  if (!withdrawn_ && !expire_script_.empty() && !first_element_seconds_left())
    throw Error(ENOENT, "remove nft rules of sc-" + spec_.id + "h: its elements are gone");
  withdraw();
  // Expired elements match nothing and are not listed; the kernel's set GC frees them later.
  for (int tick = 0; installed_ && tick < 100; ++tick) {
    if (!first_element_seconds_left())
      installed_ = false;
    else
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // expires on the next jiffy
  }
  if (!installed_) return;
  HostNetworkLock lock;
  nft_->run(delete_script_, "remove nft rules of sc-" + spec_.id + "h");
  installed_ = false;
}

std::optional<long> SandboxFirewall::first_element_seconds_left() {
  const std::string listed = nft_->run_json(std::string("list set ") + kTable + " " + first_set_,
                                            "list nft set " + first_set_);
  for (const auto& item :
       parse_bounded_json(listed).value("nftables", nlohmann::json::array())) {
    if (!item.contains("set")) continue;
    for (const auto& element : item["set"].value("elem", nlohmann::json::array())) {
      if (element_text(element) != first_element_) continue;
      return element.contains("elem") ? element["elem"].value("expires", 0L) : 0L;
    }
  }
  return std::nullopt;
}

bool sandcell_table_exists() {
  NftContext nft(true);
  const auto tables = parse_bounded_json(nft.run("list tables inet", "list nft tables"));
  for (const auto& item : tables.value("nftables", nlohmann::json::array())) {
    if (item.contains("table") && item["table"].value("name", "") == "sandcell") return true;
  }
  return false;
}

std::vector<std::string> firewall_ids() {
  const auto table = list_table();
  if (!table) return {};
  std::set<std::string> ids;
  for (const auto& [set, element] : listed_elements(*table)) {
    if (auto id = id_of(element); !id.empty()) ids.insert(id);
  }
  return {ids.begin(), ids.end()};
}

void remove_firewall(const std::string& id) {
  check_id(id);
  HostNetworkLock lock;
  const auto table = list_table();
  if (!table) return;
  const Elements listed = listed_elements(*table);
  Elements doomed;
  for (const auto& [set, element] : listed) {
    if (id_of(element) != id) continue;
    doomed.emplace_back(set, element);
    // The run's masquerade source: the address of its nat_links element.
    if (set == kNatLinksSet) {
      const std::string source = element.substr(element.rfind(' ') + 1);
      for (const auto& [s, e] : listed)
        if (s == kNatSourcesSet && e == source) doomed.emplace_back(s, e);
    }
  }
  if (!doomed.empty())
    NftContext().run(element_script("delete", doomed), "remove nft rules of sc-" + id + "h");
}

void remove_idle_sandcell_table() {
  HostNetworkLock lock;
  const auto table = list_table();
  if (table && listed_elements(*table).empty()) {
    NftContext().run(std::string("delete table ") + kTable + "\n", "delete idle nft table");
  }
}

}  // namespace sandcell::network
