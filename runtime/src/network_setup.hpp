#pragma once
// The supervisor's side of `--net allow:` and `--net full` (docs/architecture.md, "Network
// policy"), by transport (spec.hpp, NetworkTransport):
//   socket (allow): the allowlist proxy, on threads of this process, serving the listener the
//                   child made in its own netns; nothing else.
//   veth (allow, full): a veth into the sandbox's netns, the run's elements in the nftables table
//                   `sandcell`, and in allow mode the proxy on the host end of the veth.
//   slirp (full):   slirp4netns and the sandbox netns's own filter (sandcell/network/slirp.hpp).
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "child_plan.hpp"
#include "sandcell/network/nft_rules.hpp"
#include "sandcell/network/proxy.hpp"
#include "sandcell/network/resolv.hpp"
#include "sandcell/network/slirp.hpp"
#include "sandcell/network/veth.hpp"
#include "sandcell/runtime/result.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

// The Spec's network policy, checked and parsed before anything is created, so a bad flag or
// an unusable host fails the run before clone. Throws Error::invalid.
struct NetworkPlan {
  NetworkMode mode = NetworkMode::None;
  NetworkTransport transport = NetworkTransport::Auto;  // resolved: Auto only for none and host
  network::Allowlist allowlist;                         // allow
  network::AddressPolicy address_policy;                // allow and full (`--net-allow-cidr`)
  std::optional<network::Resolver> resolver;            // allow: `--net-hosts`, else the system's
  network::SandboxDns dns;                              // full
};
NetworkPlan plan_network(const Spec& spec);

// "none" | "host" | "allow" | "full", for isolation.network in the result record.
std::string network_name(NetworkMode mode);
// "socket" | "veth" | "slirp4netns", or "" (none, host), for isolation.network_transport.
std::string transport_name(NetworkTransport transport);

// Socket transport: the port the child listens on for the proxy, in its own netns (so the
// proxy variables are known before clone: 127.0.0.1:PORT); nullopt for the other transports.
std::optional<uint16_t> proxy_listener_port(const NetworkPlan& network);

// Full mode, before clone: writes the sandbox's resolv.conf into the run's state directory and
// returns its path, for the child to bind at /etc/resolv.conf (ChildPlanBuilder::resolv_conf).
std::string write_sandbox_resolv_conf(const NetworkPlan& network, const std::string& run_dir);

// One run's network, made between clone and "go" (the child waits, so nothing it runs sees a
// half-made network); the destructor removes it all, also on error paths.
class SandboxNetwork {
 public:
  struct Sandbox {
    std::string run_id, run_dir;
    pid_t pid = -1;
    const ProxyEnvPage* proxy_env = nullptr;  // allow mode, veth transport
    UniqueFd proxy_listener;                  // socket transport: from the child
  };
  // socket: the proxy on the child's listener. veth, allow mode: veth (needs the child's pid),
  // proxy (needs the veth's host address), firewall (needs the proxy's port), then the proxy
  // variables into the child's environment page; full mode: the firewall while the veth's links
  // are made (it needs only their names and addresses). slirp: filter and slirp4netns. Throws
  // Error.
  SandboxNetwork(const NetworkPlan& plan, Sandbox sandbox);
  ~SandboxNetwork();
  SandboxNetwork(const SandboxNetwork&) = delete;
  SandboxNetwork& operator=(const SandboxNetwork&) = delete;

  // As soon as the program has exited (Supervised::on_program_exit): expires the run's nft
  // elements (nft_rules.hpp; deletes them where they cannot expire), which only takes the way
  // out from what is left of the sandbox while the kernel tears it down; they stop matching on
  // the kernel's next tick. On a thread of its own, so the supervisor's own teardown goes on
  // meanwhile; the destructor joins it (and tries again after a failure, which otherwise leaves
  // them to `sandcell gc`).
  void withdraw() noexcept;

  // After the sandbox is gone: stops the proxy and copies its decisions into the record; the
  // veth goes with the sandbox's netns.
  void record(Events& events);

 private:
  void start_proxy(const NetworkPlan& plan, const ProxyEnvPage* proxy_env);
  network::FirewallSpec firewall_spec(const NetworkPlan& plan, const network::VethPair& pair) const;

  // What the sandbox's own filter dropped or saw dropped (veth: filter_; slirp:
  // slirp_->filter()), with the rule that dropped it.
  void record_drops(network::SandboxFilter& filter, Events& events) const;
  std::string drop_reason(const network::DroppedFlow& flow) const;

  NetworkMode mode_;
  network::AddressPolicy address_policy_;           // names the blocked range a drop went to
  std::vector<network::IpAddress> host_addresses_;  // full mode (veth, slirp): at the run's start
  // Over veth: full mode's filter (drops and remembers), allow mode's (remembers what the host's
  // table drops: everything but the proxy).
  std::optional<network::SandboxFilter> filter_;
  std::optional<network::SlirpNetwork> slirp_;
  std::optional<network::VethPair> veth_;
  std::unique_ptr<network::SandboxFirewall> firewall_;
  std::unique_ptr<network::Proxy> proxy_;  // declared last: stopped first
  std::thread withdrawal_;                 // joined by the destructor, before any member goes
};

}  // namespace sandcell::runtime
