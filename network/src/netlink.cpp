// Route-netlink steps over libnl (see netlink.hpp).
#include "netlink.hpp"

#include <net/if.h>
#include <netlink/route/addr.h>
#include <netlink/route/route.h>

#include "sandcell/base/error.hpp"

namespace sandcell::network::netlink {
namespace {

int errno_for(int nl_error) {
  switch (-nl_error) {
    case NLE_EXIST:
      return EEXIST;
    case NLE_PERM:
      return EPERM;
    case NLE_NOACCESS:
      return EACCES;
    case NLE_NODEV:
      return ENODEV;
    case NLE_OBJ_NOTFOUND:
      return ENOENT;
    case NLE_INVAL:
      return EINVAL;
    case NLE_NOMEM:
      return ENOMEM;
    case NLE_BUSY:
      return EBUSY;
    case NLE_RANGE:
      return ERANGE;
    case NLE_OPNOTSUPP:
      return EOPNOTSUPP;
    default:
      return EIO;
  }
}

struct AddrPut {
  void operator()(nl_addr* a) const { nl().addr_put(a); }
};
using Address = std::unique_ptr<nl_addr, AddrPut>;

Address to_nl(const IpAddress& address, unsigned prefix_length) {
  Address out(
      nl().addr_build(address.family, address.bytes.data(), address.family == AF_INET ? 4 : 16));
  if (!out) throw Error(ENOMEM, "nl_addr_build");
  nl().addr_set_prefixlen(out.get(), static_cast<int>(prefix_length));
  return out;
}

}  // namespace

int check_nl(int nl_error, const std::string& step) {
  if (nl_error < 0) throw Error(errno_for(nl_error), step + " (" + nl().geterror(nl_error) + ")");
  return nl_error;
}

Socket connect_route() {
  Socket sock(nl().socket_alloc());
  if (!sock) throw Error(ENOMEM, "nl_socket_alloc");
  check_nl(nl().connect(sock.get(), NETLINK_ROUTE), "connect to route netlink");
  return sock;
}

Link find_link(nl_sock* sock, const std::string& name) {
  rtnl_link* link = nullptr;
  if (rtnl().link_get_kernel(sock, 0, name.c_str(), &link) < 0) return nullptr;
  return Link(link);
}

void add_address(nl_sock* sock, int ifindex, const IpAddress& address, unsigned prefix_length,
                 const std::string& link_name) {
  std::unique_ptr<rtnl_addr, decltype(&rtnl_addr_put)> addr(rtnl().addr_alloc(), rtnl().addr_put);
  if (!addr) throw Error(ENOMEM, "rtnl_addr_alloc");
  rtnl().addr_set_ifindex(addr.get(), ifindex);
  const auto local = to_nl(address, prefix_length);
  const std::string step = "add address " + address.to_string() + "/" +
                           std::to_string(prefix_length) + " to " + link_name;
  check_nl(rtnl().addr_set_local(addr.get(), local.get()), step);
  check_nl(rtnl().addr_add(sock, addr.get(), 0), step);
}

void bring_up(nl_sock* sock, rtnl_link* link, const std::string& link_name) {
  Link change(rtnl().link_alloc());
  if (!change) throw Error(ENOMEM, "rtnl_link_alloc");
  rtnl().link_set_flags(change.get(), IFF_UP);
  check_nl(rtnl().link_change(sock, link, change.get(), 0), "bring up " + link_name);
}

void add_default_route(nl_sock* sock, int ifindex, const IpAddress& gateway,
                       const std::string& link_name) {
  std::unique_ptr<rtnl_route, decltype(&rtnl_route_put)> route(rtnl().route_alloc(),
                                                               rtnl().route_put);
  if (!route) throw Error(ENOMEM, "rtnl_route_alloc");
  const std::string step = "add default route via " + gateway.to_string() + " on " + link_name;
  const auto any = to_nl(IpAddress{.family = gateway.family}, 0);
  rtnl().route_set_family(route.get(), static_cast<uint8_t>(gateway.family));
  check_nl(rtnl().route_set_dst(route.get(), any.get()), step);
  rtnl_nexthop* hop = rtnl().route_nh_alloc();
  if (hop == nullptr) throw Error(ENOMEM, "rtnl_route_nh_alloc");
  rtnl().route_nh_set_ifindex(hop, ifindex);
  const auto via = to_nl(gateway, gateway.family == AF_INET ? 32 : 128);
  rtnl().route_nh_set_gateway(hop, via.get());
  rtnl().route_add_nexthop(route.get(), hop);  // the route owns the hop now
  check_nl(rtnl().route_add(sock, route.get(), NLM_F_CREATE | NLM_F_EXCL), step);
}

Cache link_cache(nl_sock* sock) {
  nl_cache* cache = nullptr;
  check_nl(rtnl().link_alloc_cache(sock, AF_UNSPEC, &cache), "list links");
  return Cache(cache);
}

}  // namespace sandcell::network::netlink
