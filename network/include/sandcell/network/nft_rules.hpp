#pragma once
// The firewall of the sandboxes: one nftables table, `inet sandcell`, whose chains and rules never
// change while sandcell runs. A run only adds its elements to the table's sets (and expires them
// at its end, see below): one small netlink transaction each way. Per-run base chains, the first
// design, cost ~40 ms a run, most of it waiting for RCU grace periods while netfilter hooks were
// registered and unregistered; set elements involve no hook at all.
//
// Every rule matches only links named sc-* (sandcell's veths) or sources in sandcell's
// 198.18.0.0/15, so the table never affects the host's own traffic, and sandcell never touches any
// other table.
//
// allow mode (element in `proxy`): from its link only TCP from the sandbox address to
//   host address:proxy port (and established/related replies) reaches the host; everything else
//   from that link is dropped — other host addresses, UDP/QUIC, ICMP, IPv6, other sandboxes,
//   spoofed sources — and nothing from it is forwarded.
// full mode (elements in `nat_links`, `nat_sources`, `open_cidrs`, `resolvers`): nothing from the
//   link reaches the host itself except replies; forwarded IPv4 from the sandbox address is
//   masqueraded, except to blocked_ipv4_ranges() (unless an allow-cidr opens one for this link;
//   the resolvers are open on port 53 even when private); IPv6 and spoofed sources are dropped;
//   nothing but replies is forwarded into a sandbox link.
// Our accepts cannot override another table's drops (nftables semantics): a host firewall that
// drops forwarded traffic also stops `--net full`.
//
// The table stays when the last run ends (creating it again would pay the hook registration the
// sets avoid); it is inert without elements. `sandcell gc` removes it when no run uses it.
//
// A run does not delete its elements: it expires them in place (an update of their expiration,
// Linux >= 6.10), and the kernel's set GC frees them in the background. Expired elements match
// no packet and are not listed. Deleting costs a grace period at the end of every run: deleted
// elements are freed by the netns's nf_tables destroy work after synchronize_rcu (~10 ms at
// HZ=250), and closing a netfilter netlink socket flushes that work (nft_rcv_nl_event), so the
// process waited for it on its way out. Where the kernel ignores the update (the element is
// still listed with its time left), or the table predates element timeouts and older runs use
// it, the elements are deleted as before. A run's firewall keeps one libnftables context (one
// netlink socket) from its add to its end.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::network {

class NftContext;

enum class NetMode { Allow, Full };

struct FirewallSpec {
  std::string id;  // the veth id (8 hex): link sc-<id>h
  NetMode mode = NetMode::Allow;
  IpAddress host_address;            // .1, where the proxy listens
  IpAddress sandbox_address;         // .2, the only source accepted
  uint16_t proxy_port = 0;           // allow mode
  std::vector<Cidr> allowed_cidrs;   // full mode: `--net-allow-cidr`
  std::vector<IpAddress> resolvers;  // full mode: DNS servers reachable on port 53
};

// For a caller that holds the host network lock already (VethPair's `while_linking`).
struct HostLockHeld {};

class SandboxFirewall {
 public:
  // Adds this run's elements (and the table, if it is missing) in one nft transaction, on a
  // context this object keeps until it is destroyed (see above). Throws Error.
  explicit SandboxFirewall(FirewallSpec spec);
  SandboxFirewall(FirewallSpec spec, HostLockHeld);
  ~SandboxFirewall();  // remove() unless withdrawn, then closes the context
  SandboxFirewall(const SandboxFirewall&) = delete;
  SandboxFirewall& operator=(const SandboxFirewall&) = delete;

  // Expires this run's elements (deletes them where they cannot expire; see above). They stop
  // matching, and are no longer listed, from the kernel's next tick (<= 4 ms at HZ=250): it
  // does not wait for that. Throws Error.
  void withdraw();
  // withdraw(), then waits until the elements are no longer listed. Idempotent. Throws Error,
  // also when the elements were gone before the first call.
  void remove();
  // The elements this run adds, as the body of nft set statements (for tests and debugging).
  const std::string& script() const { return add_script_; }

 private:
  SandboxFirewall(FirewallSpec spec, HostLockHeld, bool take_lock);
  void install();
  bool install_with_table();  // false: the table is not what made the add fail
  std::optional<long> first_element_seconds_left();  // nullopt: not listed (expired or gone)

  FirewallSpec spec_;
  std::string add_script_, expire_script_, delete_script_;  // expire_script_: "" when it cannot
  std::string first_set_, first_element_;
  std::unique_ptr<NftContext> nft_;
  bool installed_ = false, withdrawn_ = false;
};

// The filter of a sandbox that has no link to the host's stack (slirp.hpp): a table `inet sandcell`
// in the sandbox's own netns whose output hook drops IPv6 and everything to
// blocked_ipv4_ranges() except `allowed_cidrs` and the resolvers on port 53; loopback stays.
// It dies with the netns. Each drop is also remembered, once per destination, in the table's
// dynamic sets `dropped` (IPv4: address . protocol . port, 0 for ICMP and other protocols) and
// `dropped6` (IPv6 TCP and UDP; the kernel's own ICMPv6 chatter is dropped unremembered), at most
// kDroppedFlowsKept each, so the run's record can name its blocked connections.
// `host_addresses` (full mode over veth): the host's own IPv4 addresses when the run started.
// The host's table drops whatever the sandbox sends them (its input chain takes only the proxy),
// so they are dropped here first, before any opened range, and remembered like the others.
inline constexpr unsigned kDroppedFlowsKept = 256;
std::string sandbox_filter_script(const std::vector<Cidr>& allowed_cidrs,
                                  const std::vector<IpAddress>& resolvers,
                                  const std::vector<IpAddress>& host_addresses = {});

// Allow mode over veth: the same table in the sandbox's netns, remembering (in `dropped` and
// `dropped6`) every packet that leaves for anything but TCP to the proxy. It drops nothing itself:
// the host's table drops those packets (nft_rules.hpp, above), and the program sees what it saw
// before, a timeout; the record now says where they went.
std::string proxy_only_filter_script(const IpAddress& proxy, uint16_t proxy_port);

// One destination the sandbox filter dropped packets to.
struct DroppedFlow {
  IpAddress address;
  std::string protocol;  // "tcp", "udp", "icmp", ...
  uint16_t port = 0;     // TCP and UDP only
};

// The filter in one sandbox's netns. It holds that netns open, so what the filter remembered can
// still be read after the sandbox's last process has exited (and the netns, with the sandbox end
// of any veth, lives until this is destroyed or released).
class SandboxFilter {
 public:
  // Opens the netns of `sandbox_pid` and installs sandbox_filter_script() there. Throws Error.
  SandboxFilter(pid_t sandbox_pid, const std::vector<Cidr>& allowed_cidrs,
                const std::vector<IpAddress>& resolvers);
  // The same with another script (sandbox_filter_script() or proxy_only_filter_script()).
  SandboxFilter(pid_t sandbox_pid, const std::string& script);
  // Every destination dropped so far (each once). Throws Error.
  std::vector<DroppedFlow> dropped() const;
  // Lets the netns go (the kernel tears it down when nothing else holds it).
  void release() { netns_.reset(); }

 private:
  runtime::UniqueFd netns_;
};

// The flows listed in `nft -j list set ... dropped|dropped6` output; unit-testable.
std::vector<DroppedFlow> parse_dropped_flows(const std::string& nft_json);

// The nft script that creates `inet sandcell` with its sets and rules.
std::string sandcell_table_script();
// True when `inet sandcell` exists.
bool sandcell_table_exists();
// The ids of runs with elements in the table's sets; empty when there is no table.
std::vector<std::string> firewall_ids();
// Deletes every element of run `id` (found by listing the sets). Used by gc.
void remove_firewall(const std::string& id);
// Deletes `inet sandcell` when it exists and no run has an element in it.
void remove_idle_sandcell_table();

}  // namespace sandcell::network
