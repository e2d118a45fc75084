#pragma once
// The supervisor's side of `--net allow:` and `--net full` (DESIGN.md, "Network policy"): a veth
// into the sandbox's netns, the run's chains in the nftables table `sandcell`, and in allow mode
// the allowlist proxy on the host end of the veth, running on threads of this process.
#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "child_plan.hpp"
#include "sandcell/network/nft_rules.hpp"
#include "sandcell/network/proxy.hpp"
#include "sandcell/network/resolv.hpp"
#include "sandcell/network/veth.hpp"
#include "sandcell/runtime/result.hpp"

namespace sandcell::runtime {

// The Spec's network policy, checked and parsed before anything is created, so a bad flag or
// an unusable host fails the run before clone. Throws Error::invalid.
struct NetworkPlan {
  NetworkMode mode = NetworkMode::None;
  network::Allowlist allowlist;               // allow
  network::AddressPolicy address_policy;      // allow and full (`--net-allow-cidr`)
  std::optional<network::Resolver> resolver;  // allow: `--net-hosts`, else the system's
  network::SandboxDns dns;                    // full
};
NetworkPlan plan_network(const Spec& spec);

// "none" | "host" | "allow" | "full", for isolation.network in the result record.
std::string network_name(NetworkMode mode);

// Full mode, before clone: writes the sandbox's resolv.conf into the run's state directory and
// plans its bind mount at /etc/resolv.conf.
void plan_sandbox_dns(const NetworkPlan& network, const std::string& run_dir, ChildPlan& plan);

// One run's network, made between clone and "go" (the child waits, so nothing it runs sees a
// half-made network); the destructor removes it all, also on error paths.
class SandboxNetwork {
 public:
  // veth (needs the child's pid), proxy (needs the veth's host address), firewall (needs the
  // proxy's port), then the proxy variables into the child's environment page. Throws Error.
  SandboxNetwork(const NetworkPlan& plan, const std::string& run_id, pid_t sandbox_pid,
                 const ProxyEnvPage* proxy_env);
  ~SandboxNetwork();
  SandboxNetwork(const SandboxNetwork&) = delete;
  SandboxNetwork& operator=(const SandboxNetwork&) = delete;

  // After the sandbox is gone: stops the proxy and copies its decisions into the record; the
  // veth goes with the sandbox's netns.
  void record(Events& events);

 private:
  void start_proxy(const NetworkPlan& plan, const ProxyEnvPage* proxy_env);
  void install_firewall(const NetworkPlan& plan);

  std::optional<network::VethPair> veth_;
  std::unique_ptr<network::SandboxFirewall> firewall_;
  std::unique_ptr<network::Proxy> proxy_;  // declared last: stopped first
};

}  // namespace sandcell::runtime
