#pragma once
// The network's C libraries, loaded with dlopen on first use instead of linked. Most runs are
// `--net none` and never call them, and loading libnftables, libnl-route-3 (~100 constructors),
// libidn2, libhttp_parser and their seven dependencies cost 0.9 ms of every sandbox start on our
// CI VM, where a run takes ~4-5 ms from start to exit.
//
// Each accessor loads its library once (thread-safe: a function-local static) and throws Error
// naming the library, the Debian package to install and what needs it when the library or one
// of its functions is missing. The real headers still give the types, the constants and each
// function's signature (decltype), so a call reads like the C API behind a prefix:
// nft().run_cmd_from_buffer(ctx, text) for nft_run_cmd_from_buffer(ctx, text).
#include <http_parser.h>
#include <idn2.h>
#include <netlink/addr.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/link/veth.h>
#include <netlink/route/route.h>
#include <nftables/libnftables.h>

namespace sandcell::network {

// libnftables.so.1: the table `inet sandcell` (nft_rules.cpp, through nft_context.cpp).
struct NftablesFunctions {
  decltype(&nft_ctx_new) ctx_new;
  decltype(&nft_ctx_free) ctx_free;
  decltype(&nft_ctx_buffer_output) ctx_buffer_output;
  decltype(&nft_ctx_buffer_error) ctx_buffer_error;
  decltype(&nft_ctx_get_output_buffer) ctx_get_output_buffer;
  decltype(&nft_ctx_get_error_buffer) ctx_get_error_buffer;
  decltype(&nft_ctx_output_get_flags) ctx_output_get_flags;
  decltype(&nft_ctx_output_set_flags) ctx_output_set_flags;
  decltype(&nft_run_cmd_from_buffer) run_cmd_from_buffer;
};
const NftablesFunctions& nft();

// libnl-3.so.200: netlink sockets, addresses and caches (netlink.cpp, veth.cpp, gc.cpp).
struct NetlinkFunctions {
  decltype(&nl_socket_alloc) socket_alloc;
  decltype(&nl_socket_free) socket_free;
  decltype(&nl_connect) connect;
  decltype(&nl_geterror) geterror;
  decltype(&nl_addr_build) addr_build;
  decltype(&nl_addr_put) addr_put;
  decltype(&nl_addr_set_prefixlen) addr_set_prefixlen;
  decltype(&nl_addr_get_binary_addr) addr_get_binary_addr;
  decltype(&nl_cache_get_first) cache_get_first;
  decltype(&nl_cache_get_next) cache_get_next;
  decltype(&nl_cache_put) cache_put;
};
const NetlinkFunctions& nl();

// libnl-route-3.so.200: links, addresses and routes (netlink.cpp, veth.cpp, gc.cpp).
struct RouteNetlinkFunctions {
  decltype(&rtnl_link_alloc) link_alloc;
  decltype(&rtnl_link_put) link_put;
  decltype(&rtnl_link_get_kernel) link_get_kernel;
  decltype(&rtnl_link_alloc_cache) link_alloc_cache;
  decltype(&rtnl_link_get_name) link_get_name;
  decltype(&rtnl_link_get_ifindex) link_get_ifindex;
  decltype(&rtnl_link_set_flags) link_set_flags;
  decltype(&rtnl_link_change) link_change;
  decltype(&rtnl_link_delete) link_delete;
  decltype(&rtnl_link_veth_add) link_veth_add;
  decltype(&rtnl_addr_alloc) addr_alloc;
  decltype(&rtnl_addr_put) addr_put;
  decltype(&rtnl_addr_alloc_cache) addr_alloc_cache;
  decltype(&rtnl_addr_set_ifindex) addr_set_ifindex;
  decltype(&rtnl_addr_set_local) addr_set_local;
  decltype(&rtnl_addr_get_local) addr_get_local;
  decltype(&rtnl_addr_get_family) addr_get_family;
  decltype(&rtnl_addr_add) addr_add;
  decltype(&rtnl_route_alloc) route_alloc;
  decltype(&rtnl_route_put) route_put;
  decltype(&rtnl_route_set_family) route_set_family;
  decltype(&rtnl_route_set_dst) route_set_dst;
  decltype(&rtnl_route_add_nexthop) route_add_nexthop;
  decltype(&rtnl_route_add) route_add;
  decltype(&rtnl_route_nh_alloc) route_nh_alloc;
  decltype(&rtnl_route_nh_set_ifindex) route_nh_set_ifindex;
  decltype(&rtnl_route_nh_set_gateway) route_nh_set_gateway;
};
const RouteNetlinkFunctions& rtnl();

// libidn2.so.0: host names to A-labels (host_name.cpp).
struct Idn2Functions {
  decltype(&idn2_to_ascii_8z) to_ascii_8z;
  decltype(&idn2_strerror) strerror;
};
const Idn2Functions& idn2();

// libhttp_parser.so.2.9: the proxy's requests (proxy_request.cpp).
struct HttpParserFunctions {
  decltype(&http_parser_init) parser_init;
  decltype(&http_parser_settings_init) parser_settings_init;
  decltype(&http_parser_execute) parser_execute;
  decltype(&http_parser_pause) parser_pause;
  decltype(&http_parser_url_init) parser_url_init;
  decltype(&http_parser_parse_url) parser_parse_url;
  decltype(&http_method_str) method_str;
  decltype(&http_errno_description) errno_description;
};
const HttpParserFunctions& http();

}  // namespace sandcell::network
