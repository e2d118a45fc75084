// Registry references normalised as docker does, and WWW-Authenticate challenges.
#include <gtest/gtest.h>

#include "registry/auth_challenge.hpp"
#include "registry/manifest_fetch.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

TEST(RegistryReference, SingleNamesAreDockerHubLibraryImagesWithLatest) {
  RegistryReference ref = parse_registry_reference("alpine");
  EXPECT_EQ(ref.registry, "docker.io");
  EXPECT_EQ(ref.api_host(), "registry-1.docker.io");
  EXPECT_EQ(ref.repository, "library/alpine");
  EXPECT_EQ(ref.tag, "latest");
  EXPECT_EQ(ref.familiar(), "alpine:latest");
}

TEST(RegistryReference, DockerIoSpellingsUserRepositoriesAndDigests) {
  EXPECT_EQ(parse_registry_reference("docker.io/library/python:3.12-slim").familiar(), "python:3.12-slim");
  EXPECT_EQ(parse_registry_reference("index.docker.io/user/app:1").repository, "user/app");
  RegistryReference user = parse_registry_reference("user/app:1");
  EXPECT_EQ(user.registry, "docker.io");
  EXPECT_EQ(user.familiar(), "user/app:1");
  std::string digest = "sha256:" + std::string(64, 'a');
  RegistryReference pinned = parse_registry_reference("alpine@" + digest);
  EXPECT_EQ(pinned.tag, "");
  EXPECT_EQ(pinned.tag_or_digest(), digest);
  EXPECT_EQ(pinned.familiar(), "alpine@" + digest);
}

TEST(RegistryReference, HostsWithDotsPortsOrLocalhostAreRegistries) {
  RegistryReference local = parse_registry_reference("localhost:5000/x");
  EXPECT_EQ(local.registry, "localhost:5000");
  EXPECT_EQ(local.repository, "x");
  EXPECT_EQ(local.familiar(), "localhost:5000/x:latest");
  EXPECT_EQ(parse_registry_reference("ghcr.io/org/tool:v2").api_host(), "ghcr.io");
  EXPECT_EQ(parse_registry_reference("localhost/x:1").registry, "localhost");
  // "team/x": team has no dot or colon, so it is a Docker Hub user, not a host
  EXPECT_EQ(parse_registry_reference("team/x").registry, "docker.io");
}

TEST(RegistryReference, InvalidReferencesAreRejected) {
  for (const char* bad : {"UPPER", "https://ghcr.io/x", "a:b:c", "x@sha256:short", ""})
    EXPECT_THROW(parse_registry_reference(bad), Error) << bad;
  EXPECT_EQ(normalize_registry("https://index.docker.io/v1/"), "docker.io");
}

// A registry's index is outside input: members of the wrong type are skipped or refused as input
// errors, never a json type_error (which `sandcell pull` did not catch) or an undefined
// float-to-int conversion of the size.
TEST(RegistryIndex, MembersOfTheWrongTypeAreInputErrors) {
  const Platform amd64{.os = "linux", .architecture = "amd64", .variant = ""};
  FetchedManifest index{.bytes = R"({"manifests":[{"platform":{"os":1,"architecture":["amd64"]},"digest":2},
      {"platform":{"os":"linux","architecture":"amd64","variant":7},"digest":"sha256:ab","size":1}]})",
                        .media_type = "", .digest = "sha256:index"};
  EXPECT_EQ(select_platform(index, amd64).size, 1);
  index.bytes = R"({"manifests":[{"platform":{"os":"linux","architecture":"amd64"},"size":1e300}]})";
  try {
    select_platform(index, amd64);
    ADD_FAILURE() << "a size of 1e300 was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error()) << e.what();
  }
}

TEST(AuthChallenge, BearerParamsAreParsedWithQuotesAndEscapes) {
  auto c = parse_auth_challenge(
      R"(Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull",error="a\"b")");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->scheme, "bearer");
  EXPECT_EQ(c->param("realm"), "https://auth.docker.io/token");
  EXPECT_EQ(c->param("service"), "registry.docker.io");
  EXPECT_EQ(c->param("scope"), "repository:library/alpine:pull");
  EXPECT_EQ(c->param("error"), "a\"b");
  auto basic = parse_auth_challenge(R"(Basic realm="Registry Realm")");
  ASSERT_TRUE(basic);
  EXPECT_EQ(basic->scheme, "basic");
  EXPECT_FALSE(parse_auth_challenge(""));
}

}  // namespace
}  // namespace sandcell::rootfs_builder
