#pragma once
// The firewall of the sandboxes: one nftables table, `inet sandcell`, whose chains and rules never
// change while sandcell runs. A run only adds its elements to the table's sets (and deletes them
// at its end): one small netlink transaction each way. Per-run base chains, the first design,
// cost ~40 ms a run, most of it waiting for RCU grace periods while netfilter hooks were
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
// A run's firewall keeps one libnftables context (one netlink socket) from its add to its end.
// Closing a netfilter netlink socket waits for the netns's pending nf_tables destroy work
// (nft_rcv_nl_event flushes it; since Linux 6.x unconditionally), and deleted elements are freed
// by that work after a full RCU grace period (~10 ms at HZ=250). Closing right after the delete,
// as a context per call did, waited that whole grace period at the end of every run; with the
// socket kept open the grace period runs while the rest of the run's teardown does.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"

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

class SandboxFirewall {
 public:
  // Adds this run's elements (and the table, if it is missing) in one nft transaction, on a
  // context this object keeps until it is destroyed (see above). Throws Error.
  explicit SandboxFirewall(FirewallSpec spec);
  ~SandboxFirewall();  // remove(), then closes the context
  SandboxFirewall(const SandboxFirewall&) = delete;
  SandboxFirewall& operator=(const SandboxFirewall&) = delete;

  // Deletes this run's elements. Idempotent.
  void remove();
  // The elements this run adds, as the body of nft set statements (for tests and debugging).
  const std::string& script() const { return add_script_; }

 private:
  FirewallSpec spec_;
  std::string add_script_, delete_script_;
  std::unique_ptr<NftContext> nft_;
  bool installed_ = false;
};

// The filter of a sandbox that has no link to the host's stack (slirp.hpp): a table `inet sandcell`
// in the sandbox's own netns whose output hook drops IPv6 and everything to
// blocked_ipv4_ranges() except `allowed_cidrs` and the resolvers on port 53; loopback stays.
// It dies with the netns. install_sandbox_filter runs the script in the netns of `sandbox_pid`.
std::string sandbox_filter_script(const std::vector<Cidr>& allowed_cidrs,
                                  const std::vector<IpAddress>& resolvers);
void install_sandbox_filter(pid_t sandbox_pid, const std::vector<Cidr>& allowed_cidrs,
                            const std::vector<IpAddress>& resolvers);

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
