// Docker's X-Registry-Auth and X-Registry-Config headers as the Docker API reads them
// (parse_registry_auth_header, parse_registry_config_header):
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

// X-Registry-Config (docker build's FROM pulls): an AuthConfig per registry, read as above;
// registries normalized (Docker Hub's v1 URL is docker.io), those without credentials left out.
TEST(RegistryConfigHeader, OneLoginPerRegistryNormalized) {
  // {"https://index.docker.io/v1/": {username hub, password h}, "127.0.0.1:5000": {auth me:p:w}, "ghcr.io": {}}
  auto logins = parse_registry_config_header("eyJodHRwczovL2luZGV4LmRvY2tlci5pby92MS8iOiB7InVzZXJuYW1lIjogImh1YiIsICJwYXNzd29yZCI6ICJoIn0sICIxMjcuMC4wLjE6NTAwMCI6IHsiYXV0aCI6ICJiV1U2Y0RwMyIsICJzZXJ2ZXJhZGRyZXNzIjogIjEyNy4wLjAuMTo1MDAwIn0sICJnaGNyLmlvIjoge319");
  ASSERT_EQ(logins.size(), 2u);
  EXPECT_EQ(logins.at("docker.io").username, "hub");
  EXPECT_EQ(logins.at("docker.io").password, "h");
  EXPECT_EQ(logins.at("127.0.0.1:5000").username, "me");
  EXPECT_EQ(logins.at("127.0.0.1:5000").password, "p:w");
  EXPECT_TRUE(parse_registry_config_header("").empty());
  EXPECT_TRUE(parse_registry_config_header("e30=").empty());  // {}: what the CLI sends with no logins
}

TEST(RegistryConfigHeader, GarbageEntriesAndTokensAreRefusedNamingTheHeader) {
  for (const char* header : {"%%%not-base64!!", "WyJhcnJheSJd" /* ["array"] */,
                             "eyIxMjcuMC4wLjE6NTAwMCI6IFsieCJdfQ==" /* {"127.0.0.1:5000": ["x"]} */,
                             "eyIxMjcuMC4wLjE6NTAwMCI6IHsiaWRlbnRpdHl0b2tlbiI6ICJ0In19" /* an identity token */}) {
    try {
      parse_registry_config_header(header);
      ADD_FAILURE() << header << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.input_error()) << header;
      EXPECT_NE(std::string(e.what()).find("X-Registry-Config"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace sandcell::rootfs_builder
