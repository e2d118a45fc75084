// NetworkMode::Allow and NetworkMode::Full in the supervisor (see network_setup.hpp). Errors name
// the Spec's fields and values; the CLI says them in its flags (cli/spec_terms.cpp).
#include "network_setup.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>

#include "sandcell/network/host_policy.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"

namespace sandcell::runtime {
namespace {

constexpr const char* kIpForward = "/proc/sys/net/ipv4/ip_forward";
constexpr const char* kTunDevice = "/dev/net/tun";
constexpr uint16_t kSocketProxyPort = 3128;  // inside the sandbox's own netns: nobody else's port

std::vector<network::Cidr> parse_cidrs(const std::vector<std::string>& texts) {
  std::vector<network::Cidr> cidrs;
  for (const std::string& text : texts) {
    try {
      cidrs.push_back(network::Cidr::parse(text));
      network::check_openable(cidrs.back());
    } catch (const Error& e) {
      throw Error::invalid("Spec::network_policy.allow_cidrs " + text + ": " + e.what());
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
      // e names the entry
      throw Error::invalid("Spec::network_policy.allow " + std::string(e.what()));
    }
  }
  if (!policy.allow_file.empty()) allowlist.merge(network::Allowlist::from_file(policy.allow_file));
  if (allowlist.empty())
    throw Error::invalid(
        "Spec::network_policy.allow needs at least one host (allow:HOST[,HOST...] or "
        "Spec::network_policy.allow_file)");
  return allowlist;
}

// Forwarding is host network configuration, which sandcell never changes on its own.
void require_ip_forwarding() {
  std::ifstream in(kIpForward);
  std::string value;
  in >> value;
  if (value != "1")
    throw Error::invalid(
        "NetworkMode::Full needs IPv4 forwarding, which is off on this host (" +
        std::string(kIpForward) + " is " + (value.empty() ? "unreadable" : value) +
        "); sandcell does not change host network settings: an administrator can enable it with "
        "`sysctl -w net.ipv4.ip_forward=1`, or use NetworkMode::Allow");
}

void check_flags_fit_mode(const Spec& spec) {
  const NetworkPolicy& p = spec.network_policy;
  bool allow = spec.network == NetworkMode::Allow;
  bool full = spec.network == NetworkMode::Full;
  if (!allow && (!p.allow.empty() || !p.allow_file.empty()))
    throw Error::invalid(
        "Spec::network_policy.allow_file and allow: hosts need NetworkMode::Allow");
  if (!allow && !p.hosts_file.empty())
    throw Error::invalid(
        "Spec::network_policy.hosts_file needs NetworkMode::Allow (it is the proxy's resolver)");
  if (!allow && !full && !p.allow_cidrs.empty())
    throw Error::invalid(
        "Spec::network_policy.allow_cidrs needs NetworkMode::Allow or NetworkMode::Full");
  if (!full && !p.resolv_conf.empty())
    throw Error::invalid(
        "Spec::network_policy.resolv_conf needs NetworkMode::Full (allow mode has no DNS inside)");
  if (!allow && !full && p.transport != NetworkTransport::Auto)
    throw Error::invalid(
        "Spec::network_policy.transport needs NetworkMode::Allow or NetworkMode::Full");
}

// Rootless, slirp4netns opens the tap as the user, in a user namespace that maps no host id but
// the user's: capabilities there do not override the mode of a node owned by the host's root. The
// node must be open to everyone, as distributions ship it (udev: KERNEL=="tun", MODE="0666").
void check_tun_device() {
  if (access(kTunDevice, R_OK | W_OK) == 0) return;
  const int err = errno;
  struct stat st {};
  char state[96] = "";
  if (stat(kTunDevice, &st) == 0)
    snprintf(state, sizeof state,
             " (mode %04o); an administrator can restore the usual mode with `chmod 0666 %s`",
             st.st_mode & 07777, kTunDevice);
  else
    snprintf(state, sizeof state, "; an administrator can load the tun module (`modprobe tun`)");
  throw Error::invalid(
      std::string("NetworkMode::Full without root needs ") + kTunDevice +
      " readable and writable by every user, for slirp4netns's tap: " + strerror(err) + state +
      ", or use NetworkMode::Allow (the proxy) or run as root");
}

// A program with CAP_NET_ADMIN could drop the slirp filter, one with CAP_NET_RAW could write
// frames to the tap past it.
void check_slirp_capabilities(const Spec& spec) {
  for (std::string cap : spec.capabilities) {
    for (char& c : cap) c = static_cast<char>(toupper(static_cast<unsigned char>(c)));
    if (cap.starts_with("CAP_")) cap.erase(0, 4);
    if (cap == "NET_ADMIN" || cap == "NET_RAW")
      throw Error::invalid("Spec::capabilities " + cap +
                           " is refused with the slirp transport: it would let the program past "
                           "the filter that keeps it off private and metadata addresses");
  }
  if (!network::slirp4netns_installed())
    throw Error::invalid(
        "NetworkMode::Full over slirp (the transport without root) needs slirp4netns in PATH "
        "(apt-get install slirp4netns)");
  if (rootless()) check_tun_device();
}

NetworkTransport resolve_transport(const Spec& spec) {
  NetworkTransport t = spec.network_policy.transport;
  const bool allow = spec.network == NetworkMode::Allow;
  // Without root in the host's network namespace there is no veth: full goes through slirp4netns.
  if (t == NetworkTransport::Auto)
    t = allow ? NetworkTransport::Socket
              : (rootless() ? NetworkTransport::Slirp : NetworkTransport::Veth);
  if (allow && t == NetworkTransport::Slirp)
    throw Error::invalid(
        "Spec::network_policy.transport slirp is for NetworkMode::Full; allow: uses socket or "
        "veth");
  if (!allow && t == NetworkTransport::Socket)
    throw Error::invalid(
        "Spec::network_policy.transport socket carries only the allow: proxy; NetworkMode::Full "
        "uses veth or slirp");
  if (t == NetworkTransport::Veth && rootless())
    throw Error::invalid(
        "Spec::network_policy.transport veth needs root in the host's network namespace");
  if (t == NetworkTransport::Slirp) check_slirp_capabilities(spec);
  return t;
}

network::ProxyConfig proxy_config(const NetworkPlan& plan, const std::string& listen_address) {
  return {.listen_address = listen_address,
          .listen_port = 0,
          .allowlist = plan.allowlist,
          .address_policy = plan.address_policy,
          .resolver = plan.resolver.value_or(network::Resolver::system())};
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

std::string transport_name(NetworkTransport transport) {
  switch (transport) {
    case NetworkTransport::Socket:
      return "socket";
    case NetworkTransport::Veth:
      return "veth";
    case NetworkTransport::Slirp:
      return "slirp4netns";
    case NetworkTransport::Auto:
      break;
  }
  return "";
}

NetworkPlan plan_network(const Spec& spec) {
  check_flags_fit_mode(spec);
  NetworkPlan plan;
  plan.mode = spec.network;
  if (spec.network != NetworkMode::Allow && spec.network != NetworkMode::Full) return plan;
  plan.transport = resolve_transport(spec);
  plan.address_policy = network::AddressPolicy(parse_cidrs(spec.network_policy.allow_cidrs));
  if (spec.network == NetworkMode::Full) {
    if (plan.transport == NetworkTransport::Veth) require_ip_forwarding();
    const std::string& resolv = spec.network_policy.resolv_conf;
    if (!resolv.empty() && access(resolv.c_str(), R_OK) != 0)
      throw Error::invalid("Spec::network_policy.resolv_conf " + resolv + ": " + strerror(errno));
    plan.dns = resolv.empty() ? network::sandbox_dns() : network::sandbox_dns(resolv);
    return plan;
  }
  plan.allowlist = parse_allowlist(spec.network_policy);
  const std::string& hosts = spec.network_policy.hosts_file;
  plan.resolver =
      hosts.empty() ? network::Resolver::system() : network::Resolver::from_hosts_file(hosts);
  return plan;
}

std::string write_sandbox_resolv_conf(const NetworkPlan& network, const std::string& run_dir) {
  const std::string path = run_dir + "/resolv.conf";
  std::ofstream out(path);
  out << network.dns.resolv_conf;
  if (!out.flush()) throw Error(EIO, "write " + path);
  return path;
}

std::optional<uint16_t> proxy_listener_port(const NetworkPlan& network) {
  if (network.transport != NetworkTransport::Socket) return std::nullopt;
  return kSocketProxyPort;
}

SandboxNetwork::SandboxNetwork(const NetworkPlan& plan, Sandbox sandbox)
    : mode_(plan.mode), address_policy_(plan.address_policy) {
  if (plan.transport == NetworkTransport::Socket) {
    proxy_ =
        std::make_unique<network::Proxy>(proxy_config(plan, ""), std::move(sandbox.proxy_listener));
    return;
  }
  if (plan.transport == NetworkTransport::Slirp) {
    // slirp4netns connects from this netns: its own addresses would reach the host's services.
    host_addresses_ = network::addresses_of_this_host();
    slirp_.emplace(network::SlirpSpec{.sandbox_pid = sandbox.pid,
                                      .allowed_cidrs = plan.address_policy.allowed(),
                                      .resolvers = plan.dns.resolvers,
                                      .host_addresses = host_addresses_,
                                      .log_path = sandbox.run_dir + "/slirp4netns.log"});
    return;
  }
  if (plan.mode == NetworkMode::Full) {
    // The host's firewall enforces; the same filter inside the sandbox's netns drops first and
    // remembers what it dropped, for the record (and the program sees EPERM, not a silence).
    // The host's own addresses too: its input chain drops what the sandbox sends them.
    host_addresses_ = network::addresses_of_this_host();
    filter_.emplace(sandbox.pid, network::sandbox_filter_script(plan.address_policy.allowed(),
                                                                plan.dns.resolvers,
                                                                host_addresses_));
    // The firewall needs the pair's names and addresses, not its links: installed meanwhile.
    veth_.emplace(network::veth_id_for(sandbox.run_id), sandbox.pid,
                  [&](const network::VethPair& pair) {
                    firewall_ = std::make_unique<network::SandboxFirewall>(
                        firewall_spec(plan, pair), network::HostLockHeld{});
                  });
    return;
  }
  veth_.emplace(network::veth_id_for(sandbox.run_id), sandbox.pid);
  start_proxy(plan, sandbox.proxy_env);  // on the host end's address: after the links
  firewall_ = std::make_unique<network::SandboxFirewall>(firewall_spec(plan, *veth_));
  // The host's table drops everything but the proxy's port; this remembers where it went.
  filter_.emplace(sandbox.pid,
                  network::proxy_only_filter_script(veth_->host_address(), proxy_->port()));
}

SandboxNetwork::~SandboxNetwork() {
  if (withdrawal_.joinable()) withdrawal_.join();
}

void SandboxNetwork::start_proxy(const NetworkPlan& plan, const ProxyEnvPage* proxy_env) {
  const std::string address = veth_->host_address().to_string();
  proxy_ = std::make_unique<network::Proxy>(proxy_config(plan, address));
  if (proxy_env == nullptr) throw Error(EINVAL, "allow mode without a proxy environment page");
  proxy_env->fill("http://" + address + ":" + std::to_string(proxy_->port()));
}

network::FirewallSpec SandboxNetwork::firewall_spec(const NetworkPlan& plan,
                                                    const network::VethPair& pair) const {
  return {.id = pair.id(),
          .mode = plan.mode == NetworkMode::Full ? network::NetMode::Full : network::NetMode::Allow,
          .host_address = pair.host_address(),
          .sandbox_address = pair.sandbox_address(),
          .proxy_port = proxy_ ? proxy_->port() : uint16_t{0},
          .allowed_cidrs = plan.address_policy.allowed(),
          .resolvers = plan.dns.resolvers};
}

void SandboxNetwork::withdraw() noexcept {
  if (!firewall_ || withdrawal_.joinable()) return;
  auto expire = [this]() noexcept {
    try {
      firewall_->withdraw();
    } catch (const std::exception&) {
      // ~SandboxFirewall tries again; `sandcell gc` removes what a failed run left.
    }
  };
  try {
    withdrawal_ = std::thread(expire);  // while the supervisor reaps, drains and cleans up
  } catch (const std::system_error&) {
    expire();
  }
}

std::string SandboxNetwork::drop_reason(const network::DroppedFlow& flow) const {
  if (flow.address.family == AF_INET6) return "IPv6 does not leave the sandbox";
  if (mode_ == NetworkMode::Allow) return "only the proxy is reachable";
  if (auto range = address_policy_.blocked_range(flow.address)) return *range;
  if (std::find(host_addresses_.begin(), host_addresses_.end(), flow.address) !=
      host_addresses_.end())
    return "an address of this host";
  return "a blocked range";
}

void SandboxNetwork::record_drops(network::SandboxFilter& filter, Events& events) const {
  try {
    for (const network::DroppedFlow& flow : filter.dropped()) {
      events.blocked_connections.push_back(
          {.host = flow.address.to_string(),
           .port = flow.port,
           .reason = flow.protocol + " dropped by the firewall: " + drop_reason(flow)});
    }
  } catch (const std::exception& e) {  // nft's JSON, a thread, a setns: none may lose the record
    events.blocked_connections.push_back(
        {.host = "",
         .port = 0,
         .reason = std::string("the firewall's drops could not be listed: ") + e.what()});
  }
  filter.release();  // the netns, and the veth in it, may go now
}

void SandboxNetwork::record(Events& events) {
  if (proxy_) {  // first: its refusals are what a program asked for, the drops what it tried
    proxy_->stop();
    for (network::BlockedConnection& blocked : proxy_->blocked())
      events.blocked_connections.push_back({.host = std::move(blocked.host),
                                            .port = blocked.port,
                                            .reason = std::move(blocked.reason)});
    events.allowed_connections = proxy_->allowed_count();
  }
  if (filter_) record_drops(*filter_, events);
  if (slirp_) record_drops(slirp_->filter(), events);
  if (veth_) veth_->leave_to_kernel();
}

}  // namespace sandcell::runtime
