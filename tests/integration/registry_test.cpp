// Registries: sandcell pull/push/login against Debian's docker-registry (plain, htpasswd Basic
// auth, Bearer tokens from a token service), hostile answers from a tampering proxy, and
// interop with skopeo and podman through the same registry.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "registry_servers.hpp"
#include "sandcell_cli.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
using Mode = TamperingProxy::Mode;

class Registry : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(home() / "docker");
    std::ofstream(home() / "docker/config.json") << "{}";  // podman and skopeo want one there
    use_store("store");
    setenv("SANDCELL_CONFIG_DIR", (home() / "config").c_str(), 1);
    setenv("DOCKER_CONFIG", (home() / "docker").c_str(), 1);  // never the host's docker logins
  }
  void TearDown() override {
    for (const char* name : {"SANDCELL_ROOT", "SANDCELL_CONFIG_DIR", "DOCKER_CONFIG"}) unsetenv(name);
  }
  fs::path home() const { return tmp_.path; }
  std::string store() const { return store_; }
  void use_store(const std::string& name) {
    store_ = home() / name;
    setenv("SANDCELL_ROOT", store_.c_str(), 1);
  }
  // busybox and the probe from the test rootfs as a one-layer image (sandcell import).
  void make_image(const std::string& name) {
    std::string tar = home() / "rootfs.tar";
    ASSERT_EQ(std::system(("tar -C " + test_rootfs() + " -cf " + tar + " .").c_str()), 0);
    CliRun r = run_sandcell({"import", tar, name});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  // Nothing tagged and nothing half-written in the current store.
  void expect_store_untouched() {
    CliRun images = run_sandcell({"images"});
    EXPECT_EQ(std::count(images.out.begin(), images.out.end(), '\n'), 1) << images.out;
    if (fs::exists(store() + "/tmp")) {
      EXPECT_TRUE(fs::is_empty(store() + "/tmp"));
    }
  }
  static void expect_one_line_error(const CliRun& r, const std::string& phrase) {
    EXPECT_EQ(r.exit_code, 125) << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_TRUE(r.err.starts_with("sandcell: ")) << r.err;
  }
  static std::string shell(const std::string& command) { return shell_output(command); }

  TempTree tmp_{"sc-registry"};
  std::string store_;
};

TEST_F(Registry, PushThenPullKeepsTheDigestRunsAndSkipsBlobsAlreadyThere) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  std::string ref = registry.address() + "/test/busybox:1";
  CliRun push = run_sandcell({"push", "bb:1", ref});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  EXPECT_NE(push.err.find("2 blobs uploaded"), std::string::npos) << push.err;
  CliRun again = run_sandcell({"push", "bb:1", ref});
  EXPECT_NE(again.err.find("2 already there"), std::string::npos) << again.err;

  use_store("store2");
  CliRun pull = run_sandcell({"pull", ref});
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_EQ(pull.out, push.out);  // the same manifest digest: the bytes went through unchanged
  CliRun run = run_sandcell({"run", ref, "/bin/busybox", "echo", "pulled and ran"});
  EXPECT_EQ(run.out, "pulled and ran\n") << run.err;
  CliRun repeat = run_sandcell({"pull", ref});
  EXPECT_NE(repeat.err.find("0 blobs fetched, 2 already here"), std::string::npos) << repeat.err;
  // by digest too
  std::string digest = pull.out.substr(0, pull.out.size() - 1);
  use_store("store3");
  CliRun by_digest = run_sandcell({"pull", registry.address() + "/test/busybox@" + digest});
  EXPECT_EQ(by_digest.exit_code, 0) << by_digest.err;
}

TEST_F(Registry, ChunkedPushAndCrossRepositoryMountGiveTheSameImage) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  std::string first = registry.address() + "/team/one:1";
  CliRun chunked = run_sandcell({"push", "--chunk-size", "65536", "bb:1", first});
  ASSERT_EQ(chunked.exit_code, 0) << chunked.err;
  ASSERT_EQ(run_sandcell({"tag", "bb:1", first}).exit_code, 0);
  CliRun mounted = run_sandcell({"push", first, registry.address() + "/team/two:1"});
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  EXPECT_NE(mounted.err.find("0 blobs uploaded, 2 mounted"), std::string::npos) << mounted.err;
  EXPECT_EQ(mounted.out, chunked.out);
  std::string seen = shell("skopeo inspect --tls-verify=false docker://" + registry.address() + "/team/two:1");
  ASSERT_FALSE(seen.starts_with("FAILED")) << seen;
  EXPECT_EQ(nlohmann::json::parse(seen)["Digest"], chunked.out.substr(0, chunked.out.size() - 1));
}

TEST_F(Registry, BasicAuthLoginSavesPrivateCredentialsAndLogoutForgetsThem) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::Htpasswd);
  make_image("bb:1");
  std::string ref = registry.address() + "/private/bb:1";
  expect_one_line_error(run_sandcell({"push", "bb:1", ref}), "401");
  expect_one_line_error(run_sandcell({"login", "-u", LocalRegistry::kUser, "-p", "wrong", registry.address()}),
                        "401");
  CliRun login = run_sandcell({"login", "-u", LocalRegistry::kUser, "--password-stdin", registry.address()},
                              std::string(LocalRegistry::kPassword) + "\n");
  ASSERT_EQ(login.exit_code, 0) << login.err;
  fs::path auth = home() / "config/auth.json";
  struct stat st {};
  ASSERT_EQ(::stat(auth.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(nlohmann::json::parse(read_text(auth))["auths"].contains(registry.address()));
  ASSERT_EQ(run_sandcell({"push", "bb:1", ref}).exit_code, 0);
  use_store("store2");
  EXPECT_EQ(run_sandcell({"pull", ref}).exit_code, 0);

  ASSERT_EQ(run_sandcell({"logout", registry.address()}).exit_code, 0);
  use_store("store3");
  expect_one_line_error(run_sandcell({"pull", ref}), "401");
  // docker's own config.json is read as well
  std::ofstream(home() / "docker/config.json")
      << nlohmann::json({{"auths", {{registry.address(), {{"auth", "dGVzdGVyOnMzY3JldC1wYXNz"}}}}}}).dump();
  CliRun with_docker_login = run_sandcell({"pull", ref});
  EXPECT_EQ(with_docker_login.exit_code, 0) << with_docker_login.err;
}

TEST_F(Registry, BearerTokensFromTheTokenServiceAreFetchedScopedAndRefreshed) {
  TokenServer tokens(home() / "tokens");
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::Token, tokens.config());
  make_image("bb:1");
  std::string ref = registry.address() + "/bearer/bb:1";
  expect_one_line_error(run_sandcell({"push", "bb:1", ref}), "token service");
  CliRun login = run_sandcell({"login", "-u", LocalRegistry::kUser, "-p", LocalRegistry::kPassword, registry.address()});
  ASSERT_EQ(login.exit_code, 0) << login.err << registry.log();
  CliRun push = run_sandcell({"push", "bb:1", ref});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  auto scopes = tokens.scopes_seen();
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "repository:bearer/bb:pull,push"), scopes.end());
  use_store("store2");
  CliRun pull = run_sandcell({"pull", ref});
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  EXPECT_EQ(pull.out, push.out);
  scopes = tokens.scopes_seen();
  EXPECT_NE(std::find(scopes.begin(), scopes.end(), "repository:bearer/bb:pull"), scopes.end());
}

TEST_F(Registry, BearerTokenRejectedAsExpiredIsRefreshedOnce) {
  TokenServer tokens(home() / "tokens");
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::Token, tokens.config());
  make_image("bb:1");
  CliRun login = run_sandcell({"login", "-u", LocalRegistry::kUser, "-p", LocalRegistry::kPassword, registry.address()});
  ASSERT_EQ(login.exit_code, 0) << login.err << registry.log();
  tokens.next_token_expired = true;
  int before = tokens.tokens_issued();
  CliRun push = run_sandcell({"push", "bb:1", registry.address() + "/bearer/bb:1"});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  EXPECT_EQ(tokens.tokens_issued() - before, 2);  // the expired one, then its replacement
}

struct HostileCase {
  Mode mode;
  const char* phrase;
};

std::string mode_name(Mode mode) {
  static const char* const kNames[] = {"PassThrough", "CorruptBlob", "TruncateBlob", "OversizeBlob", "CorruptManifest",
                                       "RedirectLoop", "FlakyBlob", "DenyManifest", "RedirectBlobElsewhere",
                                       "CutBlobOnce", "TrickleManifest", "TrickleBlob"};
  return kNames[static_cast<int>(mode)];
}
std::string case_name(const ::testing::TestParamInfo<HostileCase>& info) { return mode_name(info.param.mode); }
// What CTest's test names show for the parameter: stable across runs (no pointer bytes).
void PrintTo(const HostileCase& c, std::ostream* os) { *os << mode_name(c.mode); }

class HostileRegistry : public Registry, public ::testing::WithParamInterface<HostileCase> {};

TEST_P(HostileRegistry, PullFailsWithOneLineAndLeavesNothingInTheStore) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  ASSERT_EQ(run_sandcell({"push", "bb:1", registry.address() + "/hostile/bb:1"}).exit_code, 0);
  TamperingProxy proxy(registry.address(), GetParam().mode);
  use_store("victim");
  expect_one_line_error(run_sandcell({"pull", "-q", proxy.address() + "/hostile/bb:1"}), GetParam().phrase);
  expect_store_untouched();
}

INSTANTIATE_TEST_SUITE_P(
    Answers, HostileRegistry,
    ::testing::Values(HostileCase{Mode::CorruptBlob, "digest mismatch"}, HostileCase{Mode::TruncateBlob, "truncated"},
                      HostileCase{Mode::OversizeBlob, "is larger than the"},
                      HostileCase{Mode::CorruptManifest, "digest mismatch"},
                      HostileCase{Mode::RedirectLoop, "redirect loop"},
                      HostileCase{Mode::DenyManifest, "403 DENIED"}),
    case_name);

// Issue 37 item 8: a registry trickling bytes kept a pull going for as long as it liked (only a
// stall under 1 KiB/s was noticed, and retried). The pull's --timeout ends it, naming the stall.
TEST_F(Registry, ATricklingRegistryEndsThePullAtItsTimeout) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  ASSERT_EQ(run_sandcell({"push", "bb:1", registry.address() + "/hostile/bb:1"}).exit_code, 0);
  for (Mode mode : {Mode::TrickleManifest, Mode::TrickleBlob}) {
    SCOPED_TRACE(mode_name(mode));
    TamperingProxy proxy(registry.address(), mode);
    use_store("victim-" + mode_name(mode));
    auto start = std::chrono::steady_clock::now();
    CliRun r = run_sandcell({"pull", "-q", "--timeout", "4", proxy.address() + "/hostile/bb:1"});
    auto took = std::chrono::steady_clock::now() - start;
    expect_one_line_error(r, "stalled");
    EXPECT_LT(took, std::chrono::seconds(15));
    expect_store_untouched();
  }
}

// Uploads `bytes` as a blob of `repo` (POST, then a monolithic PUT); returns its digest.
std::string upload_blob(const std::string& registry, const std::string& repo, const std::string& path) {
  std::string digest = "sha256:" + shell_output("sha256sum " + path + " | cut -d' ' -f1");
  digest.pop_back();
  std::string location = shell_output("curl -sS -o /dev/null -w '%header{location}' -X POST http://" + registry +
                                      "/v2/" + repo + "/blobs/uploads/");
  if (location.starts_with("/")) location = "http://" + registry + location;
  std::string sep = location.find('?') == std::string::npos ? "?" : "&";
  std::string put = shell_output("curl -sS -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: application/octet-stream' "
                                 "--data-binary @" + path + " '" + location + sep + "digest=" + digest + "'");
  EXPECT_EQ(put, "201") << location;
  return digest;
}

// Issue 37, item 4: a manifest listing the attacker's layer B twice, with the config's DiffIDs
// [diffid(B), diffid(genuine base)], made the store unpack B under the genuine base's DiffID:
// afterwards the genuine image ran the attacker's files. The pull must check every DiffID.
TEST_F(Registry, APullNamingOneLayerUnderAnotherLayersDiffIdIsRefused) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("genuine:1");
  fs::create_directories(home() / "evil/bin");
  std::ofstream(home() / "evil/bin/marker") << "attacker";
  ASSERT_EQ(std::system(("tar -C " + (home() / "evil").string() + " -cf " + (home() / "evil.tar").string() + " .").c_str()), 0);
  ASSERT_EQ(run_sandcell({"import", home() / "evil.tar", "evil:1"}).exit_code, 0);
  ASSERT_EQ(run_sandcell({"push", "genuine:1", registry.address() + "/test/genuine:1"}).exit_code, 0);
  ASSERT_EQ(run_sandcell({"push", "evil:1", registry.address() + "/test/evil:1"}).exit_code, 0);
  auto inspect = [&](const std::string& name) { return nlohmann::json::parse(run_sandcell({"inspect", name}).out)[0]; };
  nlohmann::json genuine = inspect("genuine:1"), evil = inspect("evil:1");
  std::string genuine_diff_id = genuine["Config"]["rootfs"]["diff_ids"][0];
  nlohmann::json evil_manifest = evil["Manifest"];
  nlohmann::json config = evil["Config"];
  config["rootfs"]["diff_ids"].push_back(genuine_diff_id);
  std::ofstream(home() / "poison-config.json") << config.dump();
  std::string config_digest = upload_blob(registry.address(), "test/evil", home() / "poison-config.json");
  evil_manifest["config"]["digest"] = config_digest;
  evil_manifest["config"]["size"] = fs::file_size(home() / "poison-config.json");
  evil_manifest["layers"].push_back(evil_manifest["layers"][0]);
  std::ofstream(home() / "poison-manifest.json") << evil_manifest.dump();
  std::string put = shell("curl -sS -o /dev/null -w '%{http_code}' -X PUT -H 'Content-Type: " +
                          evil_manifest.value("mediaType", "application/vnd.oci.image.manifest.v1+json") + "' --data-binary @" +
                          (home() / "poison-manifest.json").string() + " http://" + registry.address() +
                          "/v2/test/evil/manifests/poison");
  ASSERT_EQ(put, "201");

  use_store("victim");
  ASSERT_EQ(run_sandcell({"pull", "-q", registry.address() + "/test/genuine:1"}).exit_code, 0);
  CliRun poison = run_sandcell({"pull", "-q", registry.address() + "/test/evil:poison"});
  EXPECT_EQ(poison.exit_code, 125) << poison.err;
  EXPECT_NE(poison.err.find("DiffID"), std::string::npos) << poison.err;
  if (poison.exit_code == 0) run_sandcell({"run", registry.address() + "/test/evil:poison", "/bin/marker"});
  CliRun run = run_sandcell({"run", registry.address() + "/test/genuine:1", "/bin/busybox", "sh", "-c",
                             "/bin/busybox cat /bin/marker 2>/dev/null; /bin/busybox echo genuine"});
  EXPECT_EQ(run.out, "genuine\n") << run.err;
}

TEST_F(Registry, UnknownHostMissingImageAndManifestDigestMismatchAreOneLineErrors) {
  expect_one_line_error(run_sandcell({"pull", "registry.invalid/x:1"}), "cannot reach registry registry.invalid");
  expect_one_line_error(run_sandcell({"pull", "UPPER/case"}), "invalid");
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  expect_one_line_error(run_sandcell({"pull", registry.address() + "/no/such:1"}), "not found");
  make_image("bb:1");
  ASSERT_EQ(run_sandcell({"push", "bb:1", registry.address() + "/d/bb:1"}).exit_code, 0);
  TamperingProxy proxy(registry.address(), Mode::CorruptManifest);
  std::string digest = run_sandcell({"push", "bb:1", registry.address() + "/d/bb:1"}).out;
  digest.pop_back();
  use_store("victim");
  expect_one_line_error(run_sandcell({"pull", proxy.address() + "/d/bb@" + digest}), "digest mismatch");
  expect_store_untouched();
}

TEST_F(Registry, ServerErrorsAreRetriedAndRedirectsToOtherHostsGetNoCredentials) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::Htpasswd);
  make_image("bb:1");
  ASSERT_EQ(run_sandcell({"login", "-u", LocalRegistry::kUser, "-p", LocalRegistry::kPassword, registry.address()})
                .exit_code, 0);
  ASSERT_EQ(run_sandcell({"push", "bb:1", registry.address() + "/r/bb:1"}).exit_code, 0);
  TamperingProxy flaky(registry.address(), Mode::FlakyBlob);
  TamperingProxy redirecting(registry.address(), Mode::RedirectBlobElsewhere);
  TamperingProxy cutting(registry.address(), Mode::CutBlobOnce);
  for (const auto* proxy : {&flaky, &redirecting, &cutting})
    ASSERT_EQ(run_sandcell({"login", "-u", LocalRegistry::kUser, "-p", LocalRegistry::kPassword, proxy->address()})
                  .exit_code, 0);
  use_store("store2");
  CliRun retried = run_sandcell({"pull", flaky.address() + "/r/bb:1"});
  EXPECT_EQ(retried.exit_code, 0) << retried.err;
  EXPECT_EQ(flaky.blob_failures_sent(), 2);
  use_store("store3");
  CliRun redirected = run_sandcell({"pull", redirecting.address() + "/r/bb:1"});
  EXPECT_EQ(redirected.exit_code, 0) << redirected.err;
  EXPECT_TRUE(redirecting.credentials_seen_elsewhere().empty());
  use_store("store4");
  CliRun resumed = run_sandcell({"pull", cutting.address() + "/r/bb:1"});
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(cutting.range_requests(), 1);  // the cut-off layer was resumed, not fetched again
}

TEST_F(Registry, TlsRegistryOnLoopbackIsUnverifiedByDefaultAndRefusedWhenVerifying) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None, {}, true);
  make_image("bb:1");
  std::string ref = registry.address() + "/tls/bb:1";
  ASSERT_EQ(run_sandcell({"push", "bb:1", ref}).exit_code, 0);
  std::string seen = shell("skopeo inspect --tls-verify=false docker://" + ref);  // it is https
  EXPECT_FALSE(seen.starts_with("FAILED")) << seen;
  use_store("store2");
  // The self-signed certificate is in no CA store: verification must refuse it.
  expect_one_line_error(run_sandcell({"pull", "--tls-verify=true", ref}), "cannot reach registry");
  expect_store_untouched();
  CliRun pull = run_sandcell({"pull", ref});
  EXPECT_EQ(pull.exit_code, 0) << pull.err;
}

// An index (OCI image index, then Docker manifest list) put on the registry by hand over its
// API, with this machine's platform and one other.
TEST_F(Registry, IndexesArePickedFromByPlatformAndNameTheirPlatformsWhenNoneFits) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  CliRun push = run_sandcell({"push", "bb:1", registry.address() + "/multi/bb:single"});
  ASSERT_EQ(push.exit_code, 0) << push.err;
  std::string digest = push.out.substr(0, push.out.size() - 1);
  httplib::Client api("127.0.0.1", std::stoi(registry.address().substr(registry.address().find(':') + 1)));
  auto manifest = api.Get("/v2/multi/bb/manifests/single",
                          {{"Accept", "application/vnd.oci.image.manifest.v1+json"}});
  ASSERT_TRUE(manifest);
  std::string arch = shell("uname -m") == "aarch64\n" ? "arm64" : "amd64";
  std::string other = arch == "amd64" ? "arm64" : "amd64";
  for (const char* index_type : {"application/vnd.oci.image.index.v1+json",
                                 "application/vnd.docker.distribution.manifest.list.v2+json"}) {
    nlohmann::json entry = {{"mediaType", "application/vnd.oci.image.manifest.v1+json"},
                            {"digest", digest}, {"size", manifest->body.size()}};
    nlohmann::json index = {{"schemaVersion", 2}, {"mediaType", index_type}, {"manifests", nlohmann::json::array()}};
    entry["platform"] = {{"os", "linux"}, {"architecture", other}};
    index["manifests"].push_back(entry);
    entry["platform"] = {{"os", "linux"}, {"architecture", arch}};
    index["manifests"].push_back(entry);
    auto put = api.Put("/v2/multi/bb/manifests/index", index.dump(), index_type);
    ASSERT_TRUE(put && put->status == 201) << (put ? put->body : "no answer");
    use_store(std::string(index_type).find(".oci.") != std::string::npos ? "store-oci" : "store-docker");
    CliRun pull = run_sandcell({"pull", registry.address() + "/multi/bb:index"});
    ASSERT_EQ(pull.exit_code, 0) << pull.err;
    EXPECT_EQ(pull.out, push.out);  // the platform's manifest, not the index
    CliRun run = run_sandcell({"run", registry.address() + "/multi/bb:index", "/bin/busybox", "echo", "picked"});
    EXPECT_EQ(run.out, "picked\n") << run.err;
    expect_one_line_error(run_sandcell({"pull", "--platform", "linux/s390x", registry.address() + "/multi/bb:index"}),
                          "no image for platform linux/s390x");
  }
}

TEST_F(Registry, FromPullsTheBaseImageWhenTheStoreLacksIt) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  std::string base = registry.address() + "/base/bb:1";
  ASSERT_EQ(run_sandcell({"push", "bb:1", base}).exit_code, 0);
  use_store("builder");
  fs::create_directories(home() / "ctx");
  std::ofstream(home() / "ctx/note") << "added on top\n";
  std::ofstream(home() / "ctx/Dockerfile") << "FROM " << base << "\nCOPY note /note\n";
  CliRun build = run_sandcell({"build", "-t", "derived:1", (home() / "ctx").string()});
  ASSERT_EQ(build.exit_code, 0) << build.err;
  EXPECT_NE(build.err.find("pulling " + base), std::string::npos) << build.err;
  EXPECT_EQ(run_sandcell({"run", "derived:1", "/bin/busybox", "cat", "/note"}).out, "added on top\n");
}

TEST_F(Registry, ImagePushedBySkopeoPullsAndRunsInSandcell) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  std::string archive = home() / "bb.tar";
  ASSERT_EQ(run_sandcell({"save", "--format", "oci-archive", "-o", archive, "bb:1"}).exit_code, 0);
  // skopeo writes its own manifest, Docker schema 2 here.
  std::string copy = shell("skopeo copy --format v2s2 --dest-tls-verify=false oci-archive:" + archive +
                           " docker://" + registry.address() + "/skopeo/bb:1");
  ASSERT_FALSE(copy.starts_with("FAILED")) << copy;
  use_store("store2");
  CliRun pull = run_sandcell({"pull", registry.address() + "/skopeo/bb:1"});
  ASSERT_EQ(pull.exit_code, 0) << pull.err;
  CliRun inspect = run_sandcell({"inspect", registry.address() + "/skopeo/bb:1"});
  EXPECT_EQ(nlohmann::json::parse(inspect.out)[0]["Manifest"]["mediaType"],
            "application/vnd.docker.distribution.manifest.v2+json");
  CliRun run = run_sandcell({"run", registry.address() + "/skopeo/bb:1", "/bin/busybox", "echo", "from skopeo"});
  EXPECT_EQ(run.out, "from skopeo\n") << run.err;
}

TEST_F(Registry, ImagePushedBySandcellPullsWithSkopeoAndRunsInPodman) {
  LocalRegistry registry(home() / "registry", LocalRegistry::Auth::None);
  make_image("bb:1");
  std::string ref = registry.address() + "/ours/bb:1";
  ASSERT_EQ(run_sandcell({"push", "bb:1", ref}).exit_code, 0);
  // skopeo pulls into podman's storage (vfs: no overlay mounts left to clean up), podman runs it.
  std::string root = home() / "podman-root", runroot = home() / "podman-run";
  std::string copy = shell("skopeo copy --src-tls-verify=false docker://" + ref + " containers-storage:[vfs@" + root +
                           "+" + runroot + "]localhost/sandcell-pushed:1");
  ASSERT_FALSE(copy.starts_with("FAILED")) << copy;
  std::string podman = "podman --storage-driver vfs --root " + root + " --runroot " + runroot +
                       " --cgroup-manager cgroupfs --events-backend file --runtime /usr/bin/runc";
  std::string run = shell(podman + " run --rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 "
                          "localhost/sandcell-pushed:1 /bin/busybox echo from sandcell");
  EXPECT_EQ(run, "from sandcell\n");
  shell(podman + " rmi -af");
}

}  // namespace
}  // namespace sandcell::test
