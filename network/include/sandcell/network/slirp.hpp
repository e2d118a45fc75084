#pragma once
// `--net full` without root in the host's network namespace (`--net-transport slirp`, the
// rootless default): slirp4netns gives the sandbox a tap device (10.0.2.100/24, gateway
// 10.0.2.2) and carries its TCP and UDP through ordinary sockets of its own, opened in the
// supervisor's network namespace. No veth, no NAT, no host nft table.
//
// slirp4netns connects wherever the sandbox asks, so the blocked ranges are dropped inside the
// sandbox's own netns, before a packet reaches the tap: a table `inet sandcell` there (made by
// the supervisor, which as root or as the owner of the sandbox's user namespace may change
// that netns) drops IPv6 and every packet to blocked_ipv4_ranges() (which include slirp's own
// 10.0.2.0/24), except to --net-allow-cidr ranges and to the resolvers on port 53. slirp4netns's
// sockets are the supervisor's, so an address of the supervisor's own netns (its uplink address,
// any interface's) would reach services of the host bound to 0.0.0.0 as local traffic, past the
// host's firewall: those addresses (`host_addresses`, listed when the run starts) are dropped
// first, whatever range is opened, and remembered like the others. The program
// itself has no CAP_NET_ADMIN to remove that table, and no CAP_NET_RAW to write frames to the
// tap past it (the runtime refuses --cap-add of either with this transport). slirp4netns runs
// with --disable-host-loopback (10.0.2.2 does not lead to the host's 127.0.0.1) and
// --disable-dns (the sandbox's resolv.conf names the real resolvers).
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/network/nft_rules.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::network {

struct SlirpSpec {
  pid_t sandbox_pid = -1;
  std::vector<Cidr> allowed_cidrs;        // `--net-allow-cidr`
  std::vector<IpAddress> resolvers;       // reachable on port 53 even when private
  std::vector<IpAddress> host_addresses;  // of the netns slirp4netns connects from: never reached
  std::string log_path;                   // slirp4netns's stderr
};

// True when slirp4netns is in PATH.
bool slirp4netns_installed();

class SlirpNetwork {
 public:
  // Installs the filter in the sandbox's netns, starts slirp4netns and waits until it has
  // configured the tap. Throws Error; on failure nothing is left running.
  explicit SlirpNetwork(const SlirpSpec& spec);
  ~SlirpNetwork();  // stops slirp4netns (its exit fd closes) and reaps it
  // The sandbox's filter, which remembers what it dropped (nft_rules.hpp).
  SandboxFilter& filter() { return filter_; }
  SlirpNetwork(const SlirpNetwork&) = delete;
  SlirpNetwork& operator=(const SlirpNetwork&) = delete;

 private:
  void stop();

  SandboxFilter filter_;  // first: the tap never exists without it
  pid_t pid_ = -1;
  runtime::UniqueFd exit_fd_;  // slirp4netns exits when this closes (also when we die)
};

}  // namespace sandcell::network
