#pragma once
// Owned libnl objects and the route-netlink steps the veth code needs, each failing with an Error
// that names the step and carries the errno libnl's code stands for.
#include <memory>
#include <string>

#include "dynamic_libs.hpp"
#include "sandcell/network/address_policy.hpp"

namespace sandcell::network::netlink {

struct SocketFree {
  void operator()(nl_sock* s) const { nl().socket_free(s); }
};
struct LinkPut {
  void operator()(rtnl_link* l) const { rtnl().link_put(l); }
};
struct CachePut {
  void operator()(nl_cache* c) const { nl().cache_put(c); }
};
using Socket = std::unique_ptr<nl_sock, SocketFree>;
using Link = std::unique_ptr<rtnl_link, LinkPut>;
using Cache = std::unique_ptr<nl_cache, CachePut>;

// Throws Error(errno for `nl_error`, step + ": " + libnl's message) when nl_error < 0.
int check_nl(int nl_error, const std::string& step);

// A NETLINK_ROUTE socket in the calling thread's current network namespace.
Socket connect_route();
// The link called `name`, or nullptr.
Link find_link(nl_sock* sock, const std::string& name);
void add_address(nl_sock* sock, int ifindex, const IpAddress& address, unsigned prefix_length,
                 const std::string& link_name);
void bring_up(nl_sock* sock, rtnl_link* link, const std::string& link_name);
void add_default_route(nl_sock* sock, int ifindex, const IpAddress& gateway,
                       const std::string& link_name);
Cache link_cache(nl_sock* sock);

}  // namespace sandcell::network::netlink
