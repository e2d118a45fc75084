// check_destination(): the proxy's policy in the order that makes it safe. The name and port are
// matched before the name is resolved (no DNS lookups for requests the sandbox may not make), and
// every resolved address is checked, against the blocked ranges and then against the host's own
// addresses as they are now, so a name that resolves to a public and a metadata address is refused
// rather than filtered: the connect then goes to exactly one of the checked addresses.
#include "destination.hpp"

#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

Verdict refuse(std::string host, std::string reason, int status = 403) {
  return Verdict{.allowed = false,
                 .status = status,
                 .host = std::move(host),
                 .reason = std::move(reason),
                 .addresses = {}};
}

// Why `address` is no destination, or nullopt.
std::optional<std::string> refused_address(const ProxyConfig& config, const IpAddress& address) {
  if (config.address_policy.is_blocked(address)) return "blocked address " + address.to_string();
  if (auto local = config.host_address(address)) return "blocked address: " + *local;
  return std::nullopt;
}

}  // namespace

Verdict check_destination(const ProxyConfig& config, std::string_view requested_host,
                          uint16_t port, bool connect) {
  NormalisedHost host;
  try {
    host = normalise_host(requested_host);
  } catch (const Error& e) {
    return refuse(std::string(requested_host), e.what());
  }
  if (auto refusal = config.allowlist.refusal(host, port, connect)) {
    return refuse(host.name, *refusal);
  }
  std::vector<IpAddress> addresses;
  if (host.ip_literal) {
    addresses.push_back(*IpAddress::parse(host.name));
  } else {
    auto resolution = config.resolver.resolve(host.name);
    if (resolution.addresses.empty()) {
      return refuse(host.name, "does not resolve: " + resolution.error, 502);
    }
    addresses = std::move(resolution.addresses);
  }
  for (const auto& address : addresses) {
    if (auto why = refused_address(config, address))
      return refuse(host.name, (host.ip_literal ? "" : "resolves to ") + *why);
  }
  return Verdict{.allowed = true,
                 .status = 200,
                 .host = host.name,
                 .reason = "allowed",
                 .addresses = std::move(addresses)};
}

}  // namespace sandcell::network
