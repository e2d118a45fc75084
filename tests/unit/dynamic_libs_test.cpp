// network/src/dynamic_libs: each network library opens by its soname and has every function
// sandcell calls, and each pointer is the function it is named after. Without root: the
// integration tests that reach these libraries (veth, nft, proxy) need it.
#include "dynamic_libs.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace sandcell::network {
namespace {

TEST(DynamicLibs, Nftables_MakesAContextThatBuffersItsOutput) {
  nft_ctx* ctx = nft().ctx_new(NFT_CTX_DEFAULT);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(nft().ctx_buffer_output(ctx), 0);
  nft().ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
  EXPECT_EQ(nft().ctx_output_get_flags(ctx), NFT_CTX_OUTPUT_JSON);
  nft().ctx_free(ctx);
}

TEST(DynamicLibs, Netlink_NamesItsErrorsAndBuildsAddresses) {
  EXPECT_STREQ(nl().geterror(-NLE_NOMEM), "Out of memory");
  const unsigned char loopback[4] = {127, 0, 0, 1};
  nl_addr* address = nl().addr_build(AF_INET, loopback, sizeof loopback);
  ASSERT_NE(address, nullptr);
  EXPECT_EQ(static_cast<const unsigned char*>(nl().addr_get_binary_addr(address))[0], 127);
  nl().addr_put(address);
}

TEST(DynamicLibs, RouteNetlink_AllocatesALink) {
  rtnl_link* link = rtnl().link_alloc();
  ASSERT_NE(link, nullptr);
  rtnl().link_put(link);
}

TEST(DynamicLibs, Idn2_TurnsAUnicodeNameIntoItsALabel) {
  char* out = nullptr;
  ASSERT_EQ(idn2().to_ascii_8z("bücher.example", &out, IDN2_NONTRANSITIONAL), IDN2_OK);
  std::unique_ptr<char, decltype(&std::free)> owned(out, &std::free);
  EXPECT_STREQ(owned.get(), "xn--bcher-kva.example");
  EXPECT_NE(std::string(idn2().strerror(IDN2_MALLOC)), "");
}

TEST(DynamicLibs, HttpParser_NamesMethodsAndErrors) {
  EXPECT_STREQ(http().method_str(HTTP_CONNECT), "CONNECT");
  EXPECT_STREQ(http().errno_description(HPE_OK), "success");
}

}  // namespace
}  // namespace sandcell::network
