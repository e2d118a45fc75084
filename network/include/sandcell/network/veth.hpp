#pragma once
// The sandbox's one link to the host (`--net allow:` and `--net full`): a veth pair
// sc-<id>h (host end) / sc-<id>c (sandbox end), made with libnl.
//
// Addresses: each pair gets a free /30 out of 198.18.0.0/15 (RFC 2544 benchmarking range: never
// routed on the internet, almost never configured on hosts, and unlike 10/8, 100.64/10 or
// 169.254/16 not our CI uplink, a CGNAT or a metadata range). The host end is .1, the sandbox end
// .2. The whole /15 is in blocked_ipv4_ranges(), so no sandbox can reach another one's host end
// through the proxy or through NAT.
#include <sys/types.h>

#include <functional>
#include <string>
#include <string_view>

#include "sandcell/network/address_policy.hpp"

struct nl_sock;

namespace sandcell::network {

// 8 lower-case hex digits derived from a run id (FNV-1a), for link and chain names: IFNAMSIZ
// leaves room for "sc-" + 8 + "h". gc compares veth_id_for(live run id) against what it finds.
std::string veth_id_for(std::string_view run_id);

class VethPair {
 public:
  // Creates sc-<id>h in the current netns with its peer sc-<id>c created directly in the network
  // namespace of `sandbox_pid` (the sandbox end never exists in the host netns), picks a free /30
  // under a host-wide lock, gives the host end .1/30 and brings it up, then configures the sandbox
  // end (see configure_sandbox_end). `id`: 8 lower-case hex digits. Throws Error; on failure
  // nothing is left behind.
  // `while_linking`, when given, runs on a thread of its own as soon as the addresses are
  // chosen, while this constructor makes the links, with the host network lock held for it
  // (so it must not take that lock: SandboxFirewall(spec, HostLockHeld{})). It is joined, and
  // what it threw rethrown, before the constructor returns. Full mode installs its firewall so:
  // the elements need the names and addresses, not the links.
  VethPair(std::string id, pid_t sandbox_pid,
           const std::function<void(const VethPair&)>& while_linking = {});
  ~VethPair();  // deletes the host end, which deletes the pair
  VethPair(VethPair&& other) noexcept;
  VethPair& operator=(VethPair&&) = delete;
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  const std::string& id() const { return id_; }
  const std::string& host_name() const { return host_name_; }
  const std::string& sandbox_name() const { return sandbox_name_; }
  const IpAddress& host_address() const { return host_address_; }
  const IpAddress& sandbox_address() const { return sandbox_address_; }
  Cidr subnet() const;  // the /30

  // For when every process of the sandbox has been killed: its network namespace dies with the
  // last of them and the kernel removes both ends of the pair itself, in the background.
  // Deleting the host end here instead would wait in unregister_netdevice for RCU grace
  // periods, a few ms at the end of every run. A link left by a stuck process is matched by
  // no firewall element any more (all its traffic is dropped) and `sandcell gc` removes it.
  void leave_to_kernel() { owned_ = false; }

 private:
  // Runs in the sandbox's netns (run_in_netns_of: the caller's threads stay put): brings up lo,
  // gives sc-<id>c .2/30, brings it up and adds the default route via .1. The sandbox process must
  // be alive and not yet have dropped into its own program: the parent does this before "go".
  void configure_sandbox_end(pid_t sandbox_pid) const;
  // Creates the pair, configures both ends (deleting the pair again on failure).
  void create_links(nl_sock* sock, pid_t sandbox_pid);

  std::string id_;
  std::string host_name_;
  std::string sandbox_name_;
  IpAddress host_address_;
  IpAddress sandbox_address_;
  bool owned_ = false;
};

// Deletes the link `name` in the current netns if it exists. Only for names sandcell made.
void delete_link_if_present(const std::string& name);

}  // namespace sandcell::network
