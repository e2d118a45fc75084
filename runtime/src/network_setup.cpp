// `--net allow:` and `--net full` in the supervisor (see network_setup.hpp).
#include "network_setup.hpp"

#include <fstream>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/runtime/error.hpp"

namespace sandcell::runtime {
namespace {

constexpr const char* kIpForward = "/proc/sys/net/ipv4/ip_forward";

std::vector<network::Cidr> parse_cidrs(const std::vector<std::string>& texts) {
  std::vector<network::Cidr> cidrs;
  for (const std::string& text : texts) {
    try {
      cidrs.push_back(network::Cidr::parse(text));
    } catch (const Error& e) {
      throw Error::invalid("--net-allow-cidr " + text + ": " + e.what());
    }
  }
  return cidrs;
}

network::Allowlist parse_allowlist(const NetworkPolicy& policy) {
  network::Allowlist allowlist;
  for (const std::string& entry : policy.allow) {
    try {
      allowlist.add(entry);
    } catch (const Error& e) {
      throw Error::invalid("--net allow: " + entry + ": " + e.what());
    }
  }
  if (!policy.allow_file.empty()) allowlist.merge(network::Allowlist::from_file(policy.allow_file));
  if (allowlist.empty())
    throw Error::invalid(
        "--net allow: needs at least one host (allow:HOST[,HOST...] or --net-allow-file)");
  return allowlist;
}

// Forwarding is host network configuration, which sandcell never changes on its own.
void require_ip_forwarding() {
  std::ifstream in(kIpForward);
  std::string value;
  in >> value;
  if (value != "1")
    throw Error::invalid(
        "--net full needs IPv4 forwarding, which is off on this host (" + std::string(kIpForward) +
        " is " + (value.empty() ? "unreadable" : value) +
        "); sandcell does not change host network settings: an administrator can enable it with "
        "`sysctl -w net.ipv4.ip_forward=1`, or use --net allow:HOSTS");
}

void check_flags_fit_mode(const Spec& spec) {
  const NetworkPolicy& p = spec.network_policy;
  bool allow = spec.network == NetworkMode::Allow;
  bool full = spec.network == NetworkMode::Full;
  if (!allow && (!p.allow.empty() || !p.allow_file.empty()))
    throw Error::invalid("--net-allow-file and allow: hosts need --net allow:HOSTS");
  if (!allow && !p.hosts_file.empty())
    throw Error::invalid("--net-hosts needs --net allow:HOSTS (it is the proxy's resolver)");
  if (!allow && !full && !p.allow_cidrs.empty())
    throw Error::invalid("--net-allow-cidr needs --net allow:HOSTS or --net full");
}

}  // namespace

std::string network_name(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::None:
      return "none";
    case NetworkMode::Host:
      return "host";
    case NetworkMode::Allow:
      return "allow";
    case NetworkMode::Full:
      return "full";
  }
  return "none";
}

NetworkPlan plan_network(const Spec& spec) {
  check_flags_fit_mode(spec);
  NetworkPlan plan;
  plan.mode = spec.network;
  if (spec.network != NetworkMode::Allow && spec.network != NetworkMode::Full) return plan;
  plan.address_policy = network::AddressPolicy(parse_cidrs(spec.network_policy.allow_cidrs));
  if (spec.network == NetworkMode::Full) {
    require_ip_forwarding();
    plan.dns = network::sandbox_dns();
    return plan;
  }
  plan.allowlist = parse_allowlist(spec.network_policy);
  const std::string& hosts = spec.network_policy.hosts_file;
  plan.resolver =
      hosts.empty() ? network::Resolver::system() : network::Resolver::from_hosts_file(hosts);
  return plan;
}

void plan_sandbox_dns(const NetworkPlan& network, const std::string& run_dir, ChildPlan& plan) {
  if (network.mode != NetworkMode::Full) return;
  const std::string path = run_dir + "/resolv.conf";
  {
    std::ofstream out(path);
    out << network.dns.resolv_conf;
    if (!out.flush()) throw Error(EIO, "write " + path);
  }
  plan_resolv_conf(plan, path);
}

SandboxNetwork::SandboxNetwork(const NetworkPlan& plan, const std::string& run_id,
                               pid_t sandbox_pid, const ProxyEnvPage* proxy_env) {
  veth_.emplace(network::veth_id_for(run_id), sandbox_pid);
  if (plan.mode == NetworkMode::Allow) start_proxy(plan, proxy_env);
  install_firewall(plan);
}

SandboxNetwork::~SandboxNetwork() = default;

void SandboxNetwork::start_proxy(const NetworkPlan& plan, const ProxyEnvPage* proxy_env) {
  const std::string address = veth_->host_address().to_string();
  proxy_ = std::make_unique<network::Proxy>(network::ProxyConfig{
      .listen_address = address,
      .listen_port = 0,
      .allowlist = plan.allowlist,
      .address_policy = plan.address_policy,
      .resolver = plan.resolver.value_or(network::Resolver::system()),
  });
  if (proxy_env == nullptr) throw Error(EINVAL, "allow mode without a proxy environment page");
  proxy_env->fill("http://" + address + ":" + std::to_string(proxy_->port()));
}

void SandboxNetwork::install_firewall(const NetworkPlan& plan) {
  firewall_ = std::make_unique<network::SandboxFirewall>(network::FirewallSpec{
      .id = veth_->id(),
      .mode = plan.mode == NetworkMode::Full ? network::NetMode::Full : network::NetMode::Allow,
      .host_address = veth_->host_address(),
      .sandbox_address = veth_->sandbox_address(),
      .proxy_port = proxy_ ? proxy_->port() : uint16_t{0},
      .allowed_cidrs = plan.address_policy.allowed(),
      .resolvers = plan.dns.resolvers,
  });
}

void SandboxNetwork::record(Events& events) {
  if (veth_) veth_->leave_to_kernel();
  if (!proxy_) return;
  proxy_->stop();
  events.blocked_connections = proxy_->blocked();
  events.allowed_connections = proxy_->allowed_count();
}

}  // namespace sandcell::runtime
