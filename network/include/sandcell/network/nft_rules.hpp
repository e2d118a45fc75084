#pragma once
// The firewall of one sandbox in the nftables table `inet sandcell` (libnftables). Each run owns
// base chains named sc-<id>-input, sc-<id>-forward and (full mode) sc-<id>-postrouting, so removing
// one run's rules never touches another run's, and sandcell never touches any other table.
//
// allow mode: from sc-<id>h only TCP from the sandbox address to proxy_ip:proxy_port (and
//   established/related replies) reaches the host; everything else from that link is dropped —
//   other host addresses, UDP/QUIC, ICMP, IPv6, other sandboxes, spoofed sources — and nothing
//   from it is forwarded.
// full mode: nothing from the link reaches the host itself except replies; forwarded IPv4 from
//   the sandbox address is masqueraded, except to blocked_ipv4_ranges() (unless an allow-cidr
//   opens one; the resolvers are open on port 53 even when private); IPv6 and spoofed sources are
//   dropped; nothing but replies is forwarded into the link.
// Our accepts cannot override another table's drops (nftables semantics): a host firewall that
// drops forwarded traffic also stops `--net full`.
#include <cstdint>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"

namespace sandcell::network {

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
  // Adds the table (if missing) and this run's chains in one nft transaction. Throws Error.
  explicit SandboxFirewall(FirewallSpec spec);
  ~SandboxFirewall();  // remove()
  SandboxFirewall(const SandboxFirewall&) = delete;
  SandboxFirewall& operator=(const SandboxFirewall&) = delete;

  // Deletes this run's chains, and the table when no chain is left in it. Idempotent.
  void remove();
  // The nft script the constructor ran (for tests and --debug output).
  const std::string& script() const { return script_; }

 private:
  FirewallSpec spec_;
  std::string script_;
  bool installed_ = false;
};

// Chains of the table `inet sandcell`, empty when the table does not exist.
std::vector<std::string> sandcell_chains();
// Deletes the run chains of `id` and then the table if it is empty. Used by remove() and gc.
void remove_firewall(const std::string& id);
// Deletes `inet sandcell` if it exists and holds no chain.
void remove_empty_sandcell_table();

}  // namespace sandcell::network
