// Images: build from Dockerfiles, the cache, reproducible digests, the store verbs, archives, and
// the real tools (skopeo, umoci, podman, buildah) reading what sandcell writes and vice versa.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// A private store and a build context holding busybox, per test.
class Images : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-images-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(context());
    fs::copy_file(test_rootfs() + "/bin/busybox", context() + "/busybox");
    setenv("SANDCELL_ROOT", store().c_str(), 1);
    setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  }
  void TearDown() override {
    unsetenv("SANDCELL_ROOT");
    unsetenv("SOURCE_DATE_EPOCH");
    fs::remove_all(dir_);
  }
  std::string context() const { return dir_ / "ctx"; }
  std::string store() const { return dir_ / "store"; }
  void dockerfile(const std::string& text) const { std::ofstream(context() + "/Dockerfile") << text; }
  CliRun build(const std::vector<std::string>& extra = {}, const std::string& tag = "t:1") const {
    std::vector<std::string> args{"build", "-t", tag};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(context());
    return run_sandcell(args);
  }
  std::string run_image(const std::vector<std::string>& args) const {
    std::vector<std::string> full{"run"};
    full.insert(full.end(), args.begin(), args.end());
    CliRun r = run_sandcell(full);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }
  static std::string system_out(const std::string& command) { return shell_output(command); }
  fs::path dir_;
};

const char* kBusyboxImage = R"(FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /tmp /etc && chmod 1777 /tmp && echo 'app:x:1000:1000::/home/app:/bin/sh' > /etc/passwd && echo 'app:x:1000:' > /etc/group
)";

// --userns=auto over an image: every layer is idmapped, so what each step owned (root, a
// --chown, a chown in RUN) is owned the same inside the user namespace.
TEST_F(Images, UsernsAutoKeepsTheOwnersOfEveryLayer) {
  dockerfile(std::string(kBusyboxImage) + R"(COPY --chown=1000:2000 busybox /opt/owned
RUN mkdir /data && chown 7:8 /data
USER app
)");
  auto b = build();
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"--userns", "auto", "t:1", "sh", "-c", "stat -c %u:%g /opt/owned /data /bin/busybox; id -u"}),
            "1000:2000\n7:8\n0:0\n1000\n");
}

// A store and context named relative to the caller's directory (CI's test store is
// build/default/test-store): the RUN step's upper and work directories are resolved by the
// sandbox child after it has changed directory, so they must reach it absolute.
TEST_F(Images, RelativeStoreAndContextBuildAndRun) {
  dockerfile(std::string(kBusyboxImage) + "RUN echo relative > /made\n");
  setenv("SANDCELL_ROOT", "store", 1);
  CliRun b = run_program({"/usr/bin/env", "-C", dir_.string(), sandcell_binary(), "build", "-t", "rel:1", "ctx"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  CliRun r = run_program({"/usr/bin/env", "-C", dir_.string(), sandcell_binary(), "run", "rel:1", "cat", "/made"});
  EXPECT_EQ(r.out, "relative\n") << r.err;
}

TEST_F(Images, BuildThenRunHonoursEnvWorkdirUserAndCmd) {
  dockerfile(std::string(kBusyboxImage) + R"(ENV GREETING=hello
WORKDIR /app
RUN echo "$GREETING from build" > msg
USER app
CMD ["sh", "-c", "cat msg; id -u; pwd; echo $HOME"]
)");
  auto b = build();
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"t:1"}), "hello from build\n1000\n/app\n/home/app\n");
  EXPECT_EQ(run_image({"t:1", "echo", "override"}), "override\n");
  EXPECT_EQ(run_image({"--user", "0", "t:1", "id", "-u"}), "0\n");
}

TEST_F(Images, SecondBuildIsFullyCachedAndGivesTheSameDigest) {
  dockerfile(std::string(kBusyboxImage) + "RUN echo built > /built\n");
  auto first = build();
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto second = build();
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("(4 cached)"), std::string::npos) << second.err;
  EXPECT_EQ(first.out, second.out);  // the image ID
  // A changed source file busts the cache from its COPY on.
  std::ofstream(context() + "/busybox", std::ios::app) << "x";
  auto third = build();
  EXPECT_NE(third.err.find("(0 cached)"), std::string::npos) << third.err;
}

TEST_F(Images, NoCacheBuildsAreReproducibleWithSourceDateEpoch) {
  dockerfile(std::string(kBusyboxImage) + "RUN date > /when; touch /a /b\n");
  auto first = build({"--no-cache"});
  auto second = build({"--no-cache"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("(0 cached)"), std::string::npos);
  // `date` differs between the runs, so compare a build whose RUN steps are deterministic.
  dockerfile(std::string(kBusyboxImage) + "RUN echo same > /same; touch /a\n");
  auto third = build({"--no-cache"}, "r:1");
  auto fourth = build({"--no-cache"}, "r:1");
  ASSERT_EQ(third.exit_code, 0) << third.err;
  EXPECT_EQ(third.out, fourth.out);
}

TEST_F(Images, MultiStageCopyFromArgsDockerignoreChownChmodAndHeredoc) {
  std::ofstream(context() + "/keep.txt") << "kept";
  std::ofstream(context() + "/secret.txt") << "secret";
  std::ofstream(context() + "/.dockerignore") << "secret.txt\n";
  dockerfile(std::string("ARG BASE_MSG=from-arg\n") + kBusyboxImage + R"(ARG BASE_MSG
RUN echo "$BASE_MSG" > /stage-one
FROM scratch AS second
COPY --from=0 / /
ARG EXTRA=default
COPY --chown=app --chmod=600 *.txt /data/
COPY <<EOF /data/heredoc.txt
extra is ${EXTRA}
EOF
CMD ["sh", "-c", "cat /stage-one; ls /data; stat -c '%u %a' /data/keep.txt; cat /data/heredoc.txt"]
)");
  auto b = build({"--build-arg", "EXTRA=given"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"t:1"}), "from-arg\nheredoc.txt\nkeep.txt\n1000 600\nextra is given\n");
}

TEST_F(Images, CopyFromAnImageAndPredefinedArgs) {
  dockerfile(kBusyboxImage);
  ASSERT_EQ(build({}, "base:1").exit_code, 0);
  dockerfile("FROM scratch\nCOPY --from=base:1 /bin /bin\nARG TARGETARCH\nARG TARGETPLATFORM\n"
             "RUN echo \"$TARGETPLATFORM $TARGETARCH\" > /platform\n");
  auto b = build();
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"t:1", "cat", "/platform"}), "linux/amd64 amd64\n");
}

TEST_F(Images, AddExtractsLocalTarsAndTargetStopsEarly) {
  ASSERT_EQ(system(("tar -C " + context() + " -cf " + context() + "/payload.tar busybox").c_str()), 0);
  std::string first_stage = std::string(kBusyboxImage);
  first_stage.replace(0, std::string("FROM scratch").size(), "FROM scratch AS first");
  dockerfile(first_stage + "ADD payload.tar /unpacked/\nFROM scratch AS never\nRUN false\n");
  auto b = build({"--target", "first"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"t:1", "ls", "/unpacked"}), "busybox\n");
}

// ADD of a URL, fetched from a server on loopback that this test starts (python3's http.server);
// --checksum is checked, and HEALTHCHECK and ONBUILD are kept in the image config.
TEST_F(Images, AddUrlWithChecksumAndConfigOnlyInstructionsKept) {
  std::string served = dir_ / "served";
  fs::create_directories(served);
  std::ofstream(served + "/file.txt") << "downloaded\n";
  std::string digest = system_out("sha256sum " + served + "/file.txt | cut -d' ' -f1");
  digest.pop_back();
  pid_t server = fork();
  if (server == 0) {
    execlp("python3", "python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", served.c_str(), "18931",
           static_cast<char*>(nullptr));
    _exit(127);
  }
  for (int i = 0; i < 100 && system("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 18931))' 2>/dev/null") != 0; ++i)
    usleep(50'000);
  dockerfile(std::string(kBusyboxImage) +
             "ADD --checksum=sha256:" + digest + " http://127.0.0.1:18931/file.txt /fetched/\n"
             "HEALTHCHECK --interval=5s CMD [\"true\"]\nONBUILD RUN echo child\nSTOPSIGNAL SIGTERM\n"
             "EXPOSE 8080\nLABEL team=sandcell\nVOLUME /data\n");
  auto b = build();
  std::string bad = std::string(kBusyboxImage) + "ADD --checksum=sha256:" + std::string(64, '0') +
                    " http://127.0.0.1:18931/file.txt /fetched/\n";
  dockerfile(bad);
  auto mismatch = build({}, "bad:1");
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(run_image({"t:1", "cat", "/fetched/file.txt"}), "downloaded\n");
  EXPECT_EQ(mismatch.exit_code, 125);
  EXPECT_NE(mismatch.err.find("checksum mismatch"), std::string::npos) << mismatch.err;
  auto config = nlohmann::json::parse(run_sandcell({"inspect", "t:1"}).out)[0]["Config"]["config"];
  EXPECT_EQ(config["Healthcheck"]["Test"], nlohmann::json::array({"CMD", "true"}));
  EXPECT_EQ(config["Healthcheck"]["Interval"], 5000000000LL);
  EXPECT_EQ(config["OnBuild"], nlohmann::json::array({"RUN echo child"}));
  EXPECT_EQ(config["StopSignal"], "SIGTERM");
  EXPECT_TRUE(config["ExposedPorts"].contains("8080/tcp"));
  EXPECT_EQ(config["Labels"]["team"], "sandcell");
  EXPECT_TRUE(config["Volumes"].contains("/data"));
}

TEST_F(Images, ErrorsNameTheFileAndLine) {
  dockerfile("FROM scratch\nFROBNICATE now\n");
  auto unknown = build();
  EXPECT_EQ(unknown.exit_code, 125);
  EXPECT_NE(unknown.err.find("Dockerfile:2"), std::string::npos) << unknown.err;
  dockerfile(std::string(kBusyboxImage) + "RUN exit 3\n");
  auto failing = build();
  EXPECT_EQ(failing.exit_code, 125);
  EXPECT_NE(failing.err.find("Dockerfile:5: RUN failed"), std::string::npos) << failing.err;
  EXPECT_NE(failing.err.find("exit code 3"), std::string::npos) << failing.err;
  dockerfile("FROM no-such-image:1\n");
  auto missing = build();
  EXPECT_NE(missing.err.find("no-such-image"), std::string::npos) << missing.err;
}

TEST_F(Images, StoreVerbsTagInspectRmiPrune) {
  dockerfile(kBusyboxImage);
  ASSERT_EQ(build().exit_code, 0);
  EXPECT_EQ(run_sandcell({"tag", "t:1", "other:2"}).exit_code, 0);
  std::string list = run_sandcell({"images"}).out;
  EXPECT_NE(list.find("t:1"), std::string::npos) << list;
  EXPECT_NE(list.find("other:2"), std::string::npos) << list;
  auto inspect = nlohmann::json::parse(run_sandcell({"inspect", "other:2"}).out);
  EXPECT_EQ(inspect[0]["Config"]["rootfs"]["diff_ids"].size(), 3u);
  EXPECT_EQ(run_sandcell({"rmi", "t:1", "other:2"}).exit_code, 0);
  auto prune = run_sandcell({"prune"});
  EXPECT_NE(prune.out.find("removed"), std::string::npos);
  EXPECT_EQ(run_sandcell({"images"}).out.find("other:2"), std::string::npos);
}

// sandcell-images opens libcurl and libarchive only when a command needs them
// (base/src/loaded_libs.cpp): mapping them and the ~35 libraries they link cost every
// start 4-5 ms. Running an image whose layers are unpacked (every run after its first) and
// listing the store need neither; a build writes layers with libarchive, and the dynamic loader
// reports that dlopen too (so an empty answer below means something).
TEST_F(Images, RunningAStoredImageMapsNeitherLibcurlNorLibarchive) {
  dockerfile(kBusyboxImage);
  const auto mapped = [](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env", "LD_DEBUG=files", sandcell_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    const CliRun r = run_program(argv);
    EXPECT_EQ(r.exit_code, 0) << r.err.substr(0, 3000);
    return std::pair{r.err.find("libcurl.so.4") != std::string::npos,
                     r.err.find("libarchive.so.13") != std::string::npos};
  };
  EXPECT_EQ(mapped({"build", "-t", "t:1", context()}).second, true) << "a build writes layers";
  mapped({"run", "t:1", "/bin/true"});  // the first run may unpack the last layers
  EXPECT_EQ(mapped({"run", "t:1", "/bin/true"}), std::pair(false, false));
  EXPECT_EQ(mapped({"images"}), std::pair(false, false));
}

// The store checks the digest of every blob it reads, so every image run hashes. Those digests do
// not initialise OpenSSL (its configuration, its providers: ~0.8 ms of each run, rootfs-builder/
// src/digest.cpp): a configuration that cannot load (a provider that does not exist, with
// diagnostics on, so that loading it fails) is never read by a build, a run or `images`. With
// EVP digests the run failed here with "sha256 init".
TEST_F(Images, DigestsDoNotLoadOpenSslsConfiguration) {
  dockerfile(kBusyboxImage);
  const std::string config = dir_ / "openssl.cnf";
  std::ofstream(config) << "config_diagnostics = 1\nopenssl_conf = init\n[init]\n"
                           "providers = providers\n[providers]\nabsent = absent\n"
                           "[absent]\nactivate = 1\n";
  const auto with_config = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env", "OPENSSL_CONF=" + config, sandcell_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv);
  };
  const CliRun built = with_config({"build", "-t", "t:1", context()});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  const CliRun ran = with_config({"run", "t:1", "/bin/echo", "ran"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
  EXPECT_EQ(ran.out, "ran\n");
  const CliRun listed = with_config({"images"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("t:1"), std::string::npos) << listed.out;
}

// Only `serve` needs cpp-httplib (and the libstdc++, libssl, zlib and brotli it links): it runs in
// sandcell-serve, to which sandcell-images hands it after parsing (cli/serve_command.cpp), so a
// `sandcell code` or `images` does not load them. A server without a token refuses TCP, so the
// hand-over shows without leaving a server running.
TEST_F(Images, OnlySandcellServeMapsCppHttplib) {
  const std::string dir = std::filesystem::path(sandcell_binary()).parent_path().string();
  const auto with_ld_debug = [](const std::string& binary, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/env", "-u", "SANDCELL_TOKEN", "LD_DEBUG=files",
                                     binary};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv);
  };
  const CliRun images = with_ld_debug(sandcell_binary(), {"images"});
  EXPECT_EQ(images.exit_code, 0) << images.err.substr(0, 3000);
  EXPECT_NE(images.err.find("needed by " + dir + "/sandcell-images"), std::string::npos);
  EXPECT_EQ(images.err.find("libcpp-httplib"), std::string::npos) << images.err.substr(0, 3000);

  const CliRun serve = with_ld_debug(sandcell_binary(), {"serve", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(serve.exit_code, 125);
  EXPECT_NE(
      serve.err.find("file=libcpp-httplib.so.0.11 [0];  needed by " + dir + "/sandcell-serve"),
      std::string::npos)
      << serve.err.substr(0, 3000);
  EXPECT_NE(serve.err.find("sandcell: serving on TCP needs a bearer token"), std::string::npos)
      << serve.err.substr(serve.err.size() > 3000 ? serve.err.size() - 3000 : 0);
}

// An image that is in the store but broken is an error of its own, not a missing image: neither
// `run` nor a build's FROM pulls it (that would fetch whatever the registry has under the name,
// docker.io/library/t:1 here) or calls it missing.
TEST_F(Images, ABrokenImageIsReportedAndNeverPulled) {
  dockerfile(kBusyboxImage);
  ASSERT_EQ(build().exit_code, 0);
  const nlohmann::json index = nlohmann::json::parse(std::ifstream(store() + "/index.json"));
  ASSERT_EQ(index["manifests"].size(), 1u) << index.dump();
  const std::string digest = index["manifests"][0]["digest"];
  const std::string blob = store() + "/blobs/sha256/" + digest.substr(7);
  fs::permissions(blob, fs::perms::owner_write, fs::perm_options::add);
  std::ofstream(blob, std::ios::trunc) << "{\"schemaVersion\": 2}";

  const CliRun ran = run_sandcell({"run", "t:1", "/bin/true"});
  EXPECT_EQ(ran.exit_code, 125);
  EXPECT_NE(ran.err.find("image t:1: blob " + digest + " is corrupt"), std::string::npos)
      << ran.err;
  EXPECT_EQ(ran.err.find("pull"), std::string::npos) << ran.err;

  dockerfile("FROM t:1\nRUN true\n");
  const CliRun built = build({}, "u:1");
  EXPECT_EQ(built.exit_code, 125);
  EXPECT_NE(built.err.find("FROM t:1: blob " + digest + " is corrupt"), std::string::npos)
      << built.err;
  EXPECT_EQ(built.err.find("pull"), std::string::npos) << built.err;

  const CliRun missing = run_sandcell({"run", "nosuch.invalid/x:1", "true"});
  EXPECT_EQ(missing.exit_code, 125);
  EXPECT_NE(missing.err.find("no such image: nosuch.invalid/x:1; pulling it failed"),
            std::string::npos)
      << missing.err;
}

// sandcell-images carries libcrypto in itself (from libcrypto.a): ld.so maps no libcrypto.so at
// its start, and it exports none of its copy's symbols, so the shared libcrypto that libcurl's
// libssl loads for a pull (Registry.TlsRegistryOnLoopback...) binds to itself alone.
// sandcell-serve, whose cpp-httplib links libssl, keeps the shared one.
TEST_F(Images, SandcellImagesCarriesItsOwnLibcryptoAndExportsNothingOfIt) {
#if !SANDCELL_IMAGES_STATIC_CRYPTO
  GTEST_SKIP() << "this build links the shared libcrypto (sanitizers, SANDCELL_STATIC_SYSLIBS off, "
                  "or no libcrypto.a)";
#endif
  const std::string dir = std::filesystem::path(sandcell_binary()).parent_path().string();
  const CliRun images =
      run_program({"/usr/bin/env", "LD_DEBUG=files", sandcell_binary(), "images"});
  EXPECT_EQ(images.exit_code, 0) << images.err.substr(0, 3000);
  EXPECT_NE(images.err.find("needed by " + dir + "/sandcell-images"), std::string::npos);
  EXPECT_EQ(images.err.find("libcrypto"), std::string::npos) << images.err.substr(0, 3000);
  const std::string exported = system_out("nm -D --defined-only " + dir + "/sandcell-images");
  EXPECT_NE(exported.find("environ"), std::string::npos) << "nm read nothing: " << exported;
  for (const char* name : {"SHA256", "EVP_", "OPENSSL", "CRYPTO_", "BIO_"})
    EXPECT_EQ(exported.find(name), std::string::npos) << name << " exported:\n" << exported;
  const std::string serve_needs = system_out("readelf -d " + dir + "/sandcell-serve");
  EXPECT_NE(serve_needs.find("[libcrypto.so.3]"), std::string::npos) << serve_needs;
}

// Installed without sandcell-serve, sandcell-images parses `serve` and then names what is missing
// in one line; its other commands work.
TEST_F(Images, WithoutSandcellServeServeSaysWhatIsMissing) {
  char dir_template[] = "/tmp/sandcell-no-serve-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  const std::filesystem::path built = std::filesystem::path(sandcell_binary()).parent_path();
  std::filesystem::copy_file(built / "sandcell-images", dir / "sandcell-images");
  const std::string alone = (dir / "sandcell-images").string();
  EXPECT_EQ(run_program({alone, "images"}).exit_code, 0);
  const CliRun bad = run_program({alone, "serve", "--listen"});
  EXPECT_EQ(bad.exit_code, 125) << "options are still checked here";
  EXPECT_NE(bad.err.find("--listen"), std::string::npos) << bad.err;
  // (Without a token: a binary that served itself would refuse TCP rather than serve forever.)
  const CliRun serve = run_program(
      {"/usr/bin/env", "-u", "SANDCELL_TOKEN", alone, "serve", "--listen", "127.0.0.1:0"});
  EXPECT_EQ(serve.exit_code, 125);
  EXPECT_EQ(serve.err, "sandcell: " + (dir / "sandcell-serve").string() +
                           ": No such file or directory (the HTTP API lives in sandcell-serve, "
                           "installed next to sandcell)\n");
  std::filesystem::remove_all(dir);
}

TEST_F(Images, SaveLoadImportRoundTrips) {
  dockerfile(std::string(kBusyboxImage) + "CMD [\"echo\", \"round trip\"]\n");
  ASSERT_EQ(build().exit_code, 0);
  for (const char* format : {"docker-archive", "oci-archive"}) {
    std::string archive = dir_ / (std::string(format) + ".tar");
    ASSERT_EQ(run_sandcell({"save", "--format", format, "-o", archive, "t:1"}).exit_code, 0);
    ASSERT_EQ(run_sandcell({"rmi", "t:1"}).exit_code, 0);
    auto load = run_sandcell({"load", "-i", archive});
    ASSERT_EQ(load.exit_code, 0) << load.err;
    EXPECT_EQ(run_image({"t:1"}), "round trip\n") << format;
  }
  std::string rootfs_tar = dir_ / "rootfs.tar";
  ASSERT_EQ(system(("tar -C " + test_rootfs() + " -cf " + rootfs_tar + " .").c_str()), 0);
  ASSERT_EQ(run_sandcell({"import", rootfs_tar, "imported:1"}).exit_code, 0);
  EXPECT_EQ(run_image({"imported:1", "/bin/sc-probe", "exit", "0"}), "");
}

TEST_F(Images, SkopeoAndUmociReadTheStoreAndArchives) {
  dockerfile(kBusyboxImage);
  ASSERT_EQ(build({}, "localhost/interop:1").exit_code, 0);
  for (const char* format : {"docker-archive", "oci-archive"}) {  // archives sandcell wrote
    std::string ours = dir_ / (std::string("ours-") + format + ".tar");
    ASSERT_EQ(run_sandcell({"save", "--format", format, "-o", ours, "localhost/interop:1"}).exit_code, 0);
    std::string seen = system_out(std::string("skopeo inspect ") + format + ":" + ours);
    EXPECT_EQ(seen.rfind("FAILED", 0), std::string::npos) << format << ": " << seen;
  }
  EXPECT_EQ(system_out("skopeo inspect oci:" + store() + ":localhost/interop:1").rfind("FAILED", 0), std::string::npos);
  std::string archive = dir_ / "d.tar";
  std::string copy = system_out("skopeo copy oci:" + store() + ":localhost/interop:1 docker-archive:" + archive + ":interop:1");
  EXPECT_EQ(copy.rfind("FAILED", 0), std::string::npos) << copy;
  EXPECT_EQ(system_out("skopeo inspect docker-archive:" + archive).rfind("FAILED", 0), std::string::npos);
  std::string bundle = dir_ / "bundle";
  std::string unpack = system_out("umoci unpack --image " + store() + ":localhost/interop:1 " + bundle);
  EXPECT_EQ(unpack.rfind("FAILED", 0), std::string::npos) << unpack;
  EXPECT_TRUE(fs::exists(bundle + "/rootfs/bin/busybox"));
  EXPECT_TRUE(fs::is_symlink(bundle + "/rootfs/bin/sh"));
}

const char* kPodman = "podman --cgroup-manager cgroupfs --events-backend file --runtime /usr/bin/runc";
// This host's root lacks CAP_SYS_RESOURCE: podman's default nofile/nproc ulimits cannot be set.
const char* kPodmanRunFlags = "--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024";

TEST_F(Images, PodmanLoadsAndRunsOurImage) {
  dockerfile(std::string(kBusyboxImage) + "CMD [\"echo\", \"hello podman\"]\n");
  ASSERT_EQ(build({}, "sandcell-interop:1").exit_code, 0);
  std::string archive = dir_ / "d.tar";
  ASSERT_EQ(run_sandcell({"save", "-o", archive, "sandcell-interop:1"}).exit_code, 0);
  std::string load = system_out(std::string(kPodman) + " load -i " + archive);
  ASSERT_EQ(load.rfind("FAILED", 0), std::string::npos) << load;
  EXPECT_EQ(system_out(std::string(kPodman) + " run " + kPodmanRunFlags + " sandcell-interop:1"), "hello podman\n");
  system_out(std::string(kPodman) + " rmi -f sandcell-interop:1");
}

TEST_F(Images, BuildahImageLoadsAndRunsInSandcell) {
  std::ofstream(context() + "/Containerfile") << "FROM scratch\nCOPY busybox /bin/busybox\nCMD [\"/bin/busybox\", \"echo\", \"built by buildah\"]\n";
  std::string archive = dir_ / "buildah.tar";
  std::string bud = system_out("cd " + context() + " && buildah --storage-driver vfs bud -q -f Containerfile -t buildah-made:1 . && "
                               "buildah --storage-driver vfs push buildah-made:1 docker-archive:" + archive + ":buildah-made:1");
  ASSERT_EQ(bud.rfind("FAILED", 0), std::string::npos) << bud;
  auto load = run_sandcell({"load", "-i", archive});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(run_image({"buildah-made:1"}), "built by buildah\n");
  std::string oci = dir_ / "buildah-oci.tar";
  std::string push = system_out("buildah --storage-driver vfs push buildah-made:1 oci-archive:" + oci + ":buildah-oci:1");
  ASSERT_EQ(push.rfind("FAILED", 0), std::string::npos) << push;
  ASSERT_EQ(run_sandcell({"load", "-i", oci}).exit_code, 0);
  EXPECT_EQ(run_image({"buildah-oci:1"}), "built by buildah\n");
  system_out("buildah --storage-driver vfs rmi -f buildah-made:1");
}

}  // namespace
}  // namespace sandcell::test
