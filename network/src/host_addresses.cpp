// address_of_this_host(): the proxy runs in the host's network namespace, so a connection it
// makes to one of the host's own addresses is local traffic, past any host firewall, to every
// service bound to 0.0.0.0 (sshd, `sandcell serve`, other sandboxes' proxies on their veths' host
// ends). The fixed ranges cannot tell which addresses those are: the host's public address is
// an ordinary one. So the interfaces are listed at every check, never cached: an address
// DHCP or an administrator adds later counts at once.
#include <ifaddrs.h>
#include <netinet/in.h>

#include <cstring>
#include <memory>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

// Addresses that reach the host without being any interface's: a connect to 0.0.0.0 (or ::)
// goes to the host itself, and the kernel's local table holds all of 127/8, not only 127.0.0.1.
std::optional<std::string> always_local(const IpAddress& address) {
  static const Cidr this_network = Cidr::parse("0.0.0.0/8");
  static const Cidr loopback = Cidr::parse("127.0.0.0/8");
  static const auto unspecified6 = IpAddress::parse("::");
  static const auto loopback6 = IpAddress::parse("::1");
  if (this_network.contains(address)) return "this host (0.0.0.0/8)";
  if (loopback.contains(address) || address == *loopback6) return "this host's loopback";
  if (address == *unspecified6) return "this host (::)";
  return std::nullopt;
}

// A connect to ::ffff:a.b.c.d from an IPv6 socket goes to a.b.c.d.
IpAddress unmapped(const IpAddress& address) {
  static const Cidr mapped = Cidr::parse("::ffff:0:0/96");
  if (address.family != AF_INET6 || !mapped.contains(address)) return address;
  IpAddress v4{.family = AF_INET};
  std::memcpy(v4.bytes.data(), address.bytes.data() + 12, 4);
  return v4;
}

struct InterfaceAddress {
  IpAddress address;
  std::string link;
};

std::vector<InterfaceAddress> interface_addresses() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) throw Error(errno, "list the host's own addresses (getifaddrs)");
  const std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> owned(list, &freeifaddrs);
  std::vector<InterfaceAddress> out;
  for (const ifaddrs* entry = list; entry != nullptr; entry = entry->ifa_next) {
    if (entry->ifa_addr == nullptr) continue;
    const int family = entry->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (auto address = IpAddress::from_sockaddr(entry->ifa_addr))
      out.push_back({.address = *address, .link = entry->ifa_name});
  }
  return out;
}

}  // namespace

std::optional<std::string> address_of_this_host(const IpAddress& requested) {
  const IpAddress address = unmapped(requested);
  if (auto why = always_local(address)) return why;
  try {
    for (const auto& [local, link] : interface_addresses())
      if (local == address) return "address of this host " + address.to_string() + " (" + link + ")";
  } catch (const Error& e) {
    return std::string(e.what());  // fails closed: the address is refused with the reason
  }
  return std::nullopt;
}

std::vector<IpAddress> addresses_of_this_host() {
  std::vector<IpAddress> out;
  for (const auto& entry : interface_addresses()) out.push_back(entry.address);
  return out;
}

}  // namespace sandcell::network
