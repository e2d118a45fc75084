// Loading the network's C libraries on first use (see dynamic_libs.hpp).
#include "dynamic_libs.hpp"

#include "sandcell/base/loaded_library.hpp"

// The soname below is the one this header's version builds; another major/minor is another ABI.
static_assert(HTTP_PARSER_VERSION_MAJOR == 2 && HTTP_PARSER_VERSION_MINOR == 9,
              "http_parser.h is not 2.9: update the soname in dynamic_libs.cpp");

namespace sandcell::network {
namespace {

using runtime::LibraryName;
using runtime::LoadedLibrary;

constexpr LibraryName kNftables{.soname = "libnftables.so.1",
                                .package = "libnftables1",
                                .needed_by = "the firewall of --net allow:/full"};
constexpr LibraryName kNetlink{.soname = "libnl-3.so.200",
                               .package = "libnl-3-200",
                               .needed_by = "the veth of --net allow:/full"};
constexpr LibraryName kRouteNetlink{.soname = "libnl-route-3.so.200",
                                    .package = "libnl-route-3-200",
                                    .needed_by = "the veth of --net allow:/full"};
constexpr LibraryName kIdn2{.soname = "libidn2.so.0",
                            .package = "libidn2-0",
                            .needed_by = "the host names of --net allow:"};
constexpr LibraryName kHttpParser{.soname = "libhttp_parser.so.2.9",
                                  .package = "libhttp-parser2.9",
                                  .needed_by = "the proxy of --net allow:"};

}  // namespace

const NftablesFunctions& nft() {
  static const NftablesFunctions functions = [] {
    const LoadedLibrary lib(kNftables);
    return NftablesFunctions{
        .ctx_new = SANDCELL_FUNCTION(lib, nft_ctx_new),
        .ctx_free = SANDCELL_FUNCTION(lib, nft_ctx_free),
        .ctx_buffer_output = SANDCELL_FUNCTION(lib, nft_ctx_buffer_output),
        .ctx_buffer_error = SANDCELL_FUNCTION(lib, nft_ctx_buffer_error),
        .ctx_get_output_buffer = SANDCELL_FUNCTION(lib, nft_ctx_get_output_buffer),
        .ctx_get_error_buffer = SANDCELL_FUNCTION(lib, nft_ctx_get_error_buffer),
        .ctx_output_get_flags = SANDCELL_FUNCTION(lib, nft_ctx_output_get_flags),
        .ctx_output_set_flags = SANDCELL_FUNCTION(lib, nft_ctx_output_set_flags),
        .run_cmd_from_buffer = SANDCELL_FUNCTION(lib, nft_run_cmd_from_buffer),
    };
  }();
  return functions;
}

const NetlinkFunctions& nl() {
  static const NetlinkFunctions functions = [] {
    const LoadedLibrary lib(kNetlink);
    return NetlinkFunctions{
        .socket_alloc = SANDCELL_FUNCTION(lib, nl_socket_alloc),
        .socket_free = SANDCELL_FUNCTION(lib, nl_socket_free),
        .connect = SANDCELL_FUNCTION(lib, nl_connect),
        .geterror = SANDCELL_FUNCTION(lib, nl_geterror),
        .addr_build = SANDCELL_FUNCTION(lib, nl_addr_build),
        .addr_put = SANDCELL_FUNCTION(lib, nl_addr_put),
        .addr_set_prefixlen = SANDCELL_FUNCTION(lib, nl_addr_set_prefixlen),
        .addr_get_binary_addr = SANDCELL_FUNCTION(lib, nl_addr_get_binary_addr),
        .cache_get_first = SANDCELL_FUNCTION(lib, nl_cache_get_first),
        .cache_get_next = SANDCELL_FUNCTION(lib, nl_cache_get_next),
        .cache_put = SANDCELL_FUNCTION(lib, nl_cache_put),
    };
  }();
  return functions;
}

const RouteNetlinkFunctions& rtnl() {
  static const RouteNetlinkFunctions functions = [] {
    const LoadedLibrary lib(kRouteNetlink);
    return RouteNetlinkFunctions{
        .link_alloc = SANDCELL_FUNCTION(lib, rtnl_link_alloc),
        .link_put = SANDCELL_FUNCTION(lib, rtnl_link_put),
        .link_get_kernel = SANDCELL_FUNCTION(lib, rtnl_link_get_kernel),
        .link_alloc_cache = SANDCELL_FUNCTION(lib, rtnl_link_alloc_cache),
        .link_get_name = SANDCELL_FUNCTION(lib, rtnl_link_get_name),
        .link_get_ifindex = SANDCELL_FUNCTION(lib, rtnl_link_get_ifindex),
        .link_set_flags = SANDCELL_FUNCTION(lib, rtnl_link_set_flags),
        .link_change = SANDCELL_FUNCTION(lib, rtnl_link_change),
        .link_delete = SANDCELL_FUNCTION(lib, rtnl_link_delete),
        .link_veth_add = SANDCELL_FUNCTION(lib, rtnl_link_veth_add),
        .addr_alloc = SANDCELL_FUNCTION(lib, rtnl_addr_alloc),
        .addr_put = SANDCELL_FUNCTION(lib, rtnl_addr_put),
        .addr_alloc_cache = SANDCELL_FUNCTION(lib, rtnl_addr_alloc_cache),
        .addr_set_ifindex = SANDCELL_FUNCTION(lib, rtnl_addr_set_ifindex),
        .addr_set_local = SANDCELL_FUNCTION(lib, rtnl_addr_set_local),
        .addr_get_local = SANDCELL_FUNCTION(lib, rtnl_addr_get_local),
        .addr_get_family = SANDCELL_FUNCTION(lib, rtnl_addr_get_family),
        .addr_add = SANDCELL_FUNCTION(lib, rtnl_addr_add),
        .route_alloc = SANDCELL_FUNCTION(lib, rtnl_route_alloc),
        .route_put = SANDCELL_FUNCTION(lib, rtnl_route_put),
        .route_set_family = SANDCELL_FUNCTION(lib, rtnl_route_set_family),
        .route_set_dst = SANDCELL_FUNCTION(lib, rtnl_route_set_dst),
        .route_add_nexthop = SANDCELL_FUNCTION(lib, rtnl_route_add_nexthop),
        .route_add = SANDCELL_FUNCTION(lib, rtnl_route_add),
        .route_nh_alloc = SANDCELL_FUNCTION(lib, rtnl_route_nh_alloc),
        .route_nh_set_ifindex = SANDCELL_FUNCTION(lib, rtnl_route_nh_set_ifindex),
        .route_nh_set_gateway = SANDCELL_FUNCTION(lib, rtnl_route_nh_set_gateway),
    };
  }();
  return functions;
}

const Idn2Functions& idn2() {
  static const Idn2Functions functions = [] {
    const LoadedLibrary lib(kIdn2);
    return Idn2Functions{
        .to_ascii_8z = SANDCELL_FUNCTION(lib, idn2_to_ascii_8z),
        .strerror = SANDCELL_FUNCTION(lib, idn2_strerror),
    };
  }();
  return functions;
}

const HttpParserFunctions& http() {
  static const HttpParserFunctions functions = [] {
    const LoadedLibrary lib(kHttpParser);
    return HttpParserFunctions{
        .parser_init = SANDCELL_FUNCTION(lib, http_parser_init),
        .parser_settings_init = SANDCELL_FUNCTION(lib, http_parser_settings_init),
        .parser_execute = SANDCELL_FUNCTION(lib, http_parser_execute),
        .parser_pause = SANDCELL_FUNCTION(lib, http_parser_pause),
        .parser_url_init = SANDCELL_FUNCTION(lib, http_parser_url_init),
        .parser_parse_url = SANDCELL_FUNCTION(lib, http_parser_parse_url),
        .method_str = SANDCELL_FUNCTION(lib, http_method_str),
        .errno_description = SANDCELL_FUNCTION(lib, http_errno_description),
    };
  }();
  return functions;
}

}  // namespace sandcell::network
