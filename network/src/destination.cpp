// check_destination(): the proxy's policy in the order that makes it safe. The name is matched
// before it is resolved (no DNS lookups for names the sandbox may not reach), and every resolved
// address is checked, so a name that resolves to a public and a metadata address is refused
// rather than filtered: the connect then goes to exactly one of the checked addresses.
#include "destination.hpp"

#include "sandcell/runtime/error.hpp"

namespace sandcell::network {
namespace {

Verdict refuse(std::string host, std::string reason, int status = 403) {
  return Verdict{.allowed = false,
                 .status = status,
                 .host = std::move(host),
                 .reason = std::move(reason),
                 .addresses = {}};
}

}  // namespace

Verdict check_destination(const ProxyConfig& config, std::string_view requested_host) {
  NormalisedHost host;
  try {
    host = normalise_host(requested_host);
  } catch (const Error& e) {
    return refuse(std::string(requested_host), e.what());
  }
  if (!config.allowlist.allows(host)) {
    return refuse(host.name, host.ip_literal ? "ip literal" : "not in allowlist");
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
    if (config.address_policy.is_blocked(address)) {
      return refuse(host.name,
                    (host.ip_literal ? "blocked address " : "resolves to blocked address ") +
                        address.to_string());
    }
  }
  return Verdict{.allowed = true,
                 .status = 200,
                 .host = host.name,
                 .reason = "allowed",
                 .addresses = std::move(addresses)};
}

}  // namespace sandcell::network
