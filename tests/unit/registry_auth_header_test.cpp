// Docker's X-Registry-Auth header as the Docker API reads it (parse_registry_auth_header):
// base64url with or without padding, username/password or "auth", and everything else refused.
#include <gtest/gtest.h>

#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/registry_config.hpp"

namespace sandcell::rootfs_builder {
namespace {

// {"username": "me", "password": "p?>~", "serveraddress": "127.0.0.1:5000"}: its base64url
// holds a '-', which standard base64 does not have.
constexpr const char* kPadded =
    "eyJ1c2VybmFtZSI6ICJtZSIsICJwYXNzd29yZCI6ICJwPz5-IiwgInNlcnZlcmFkZHJlc3MiOiAiMTI3LjAuMC4xOjUwMDAifQ==";

TEST(RegistryAuthHeader, UsernameAndPasswordInBase64UrlWithOrWithoutPadding) {
  for (std::string header : {std::string(kPadded), std::string(kPadded).substr(0, std::string(kPadded).size() - 2)}) {
    std::optional<RegistryCredentials> credentials = parse_registry_auth_header(header);
    ASSERT_TRUE(credentials) << header;
    EXPECT_EQ(credentials->username, "me");
    EXPECT_EQ(credentials->password, "p?>~");
  }
}

TEST(RegistryAuthHeader, AuthFieldIsBase64UserColonPassword) {
  std::optional<RegistryCredentials> credentials = parse_registry_auth_header("eyJhdXRoIjogImRUcHdZVHB6Y3c9PSJ9");
  ASSERT_TRUE(credentials);  // {"auth": base64("u:pa:ss")}
  EXPECT_EQ(credentials->username, "u");
  EXPECT_EQ(credentials->password, "pa:ss");
}

TEST(RegistryAuthHeader, NoCredentialsIsAnonymous) {
  EXPECT_FALSE(parse_registry_auth_header(""));
  EXPECT_FALSE(parse_registry_auth_header("e30="));                              // {}
  EXPECT_FALSE(parse_registry_auth_header("eyJzZXJ2ZXJhZGRyZXNzIjogIngifQ=="));  // {"serveraddress": "x"}
}

TEST(RegistryAuthHeader, GarbageWrongTypesAndTokensAreRefused) {
  for (const char* header : {"%%%not-base64!!", "a", "WyJhcnJheSJd" /* ["array"] */, "bm90IGpzb24=" /* not json */,
                             "eyJ1c2VybmFtZSI6IDd9" /* {"username": 7} */,
                             "eyJpZGVudGl0eXRva2VuIjogInQifQ==" /* {"identitytoken": "t"} */}) {
    try {
      parse_registry_auth_header(header);
      ADD_FAILURE() << header << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.input_error()) << header;
      EXPECT_NE(std::string(e.what()).find("X-Registry-Auth"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sandcell::rootfs_builder
