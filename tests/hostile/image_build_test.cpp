// Hostile builds (issue 37): Dockerfiles, build contexts and stages written by an attacker, with
// sentinel files on the host that the build must neither write, delete, move nor read.
// `sandcell build` runs as root outside any sandbox except for RUN steps.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <ctime>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hostile.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

const char* kSecret = "HOST-SECRET-37";

// A private store, a build context holding busybox, and a host sentinel directory per test.
class HostileBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-hostile-build-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(context());
    fs::create_directories(host() + "/victim");
    std::ofstream(host() + "/victim/keep") << "keep";
    std::ofstream(host() + "/shadow") << kSecret;
    fs::copy_file(test_rootfs() + "/bin/busybox", context() + "/busybox");
    setenv("SANDCELL_ROOT", store().c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SANDCELL_ROOT");
    fs::remove_all(dir_);
  }
  std::string context() const { return dir_ / "ctx"; }
  std::string store() const { return dir_ / "store"; }
  std::string host() const { return dir_ / "host"; }  // stands for any host directory
  // "../" enough times to climb from any staging or layer directory to "/".
  static std::string dotdots() {
    std::string out;
    for (int i = 0; i < 24; ++i) out += "../";
    return out.substr(0, out.size() - 1);
  }
  void dockerfile(const std::string& text) const { std::ofstream(context() + "/Dockerfile") << text; }
  CliRun build(const std::string& tag = "t:1") const { return run_sandcell({"build", "-t", tag, context()}); }
  std::string run_image(const std::vector<std::string>& args) const {
    std::vector<std::string> full{"run"};
    full.insert(full.end(), args.begin(), args.end());
    return run_sandcell(full).out;
  }
  void expect_host_untouched() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(host())) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"shadow", "victim"}));
    EXPECT_TRUE(fs::exists(host() + "/victim/keep"));
  }
  fs::path dir_;
};

const char* kBusybox = "COPY busybox /bin/busybox\n";

// Issue 37 item 1: a heredoc name was joined into host paths: `<<../../../x/newfile` created
// a root-owned 0755 file on the host, and with another destination a host directory was
// deleted or moved into the image; then sandcell aborted on an uncaught filesystem_error.
TEST_F(HostileBuild, HeredocNamesCannotReachHostPaths) {
  std::string newfile = dotdots() + host() + "/newfile";
  std::string victim = dotdots() + host() + "/victim";
  for (const std::string& step : {"COPY --chmod=755 <<" + newfile + " /d1/d2/\nbody\n" + newfile + "\n",
                                  "COPY <<" + victim + " /stolen\nx\n" + victim + "\n",
                                  "COPY --chown=1:1 <<" + victim + " /d1/\nx\n" + victim + "\n",
                                  "ADD <<" + victim + " /\nx\n" + victim + "\n"}) {
    dockerfile("FROM scratch\n" + step);
    CliRun b = build();
    EXPECT_EQ(b.exit_code, 125) << step << b.err;
    EXPECT_NE(b.err.find("must be a file name"), std::string::npos) << b.err;
    expect_host_untouched();
    struct stat st {};
    ASSERT_EQ(::stat((host() + "/victim").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0755u);
  }
}

// Issue 37 item 2: a stage's symlink to a host file (`ln -s /etc/shadow /s`) was followed by
// `COPY --from`: fs::relative resolved it on the host and `**/shadow` matched the host path.
TEST_F(HostileBuild, CopyFromAStageNeverFollowsItsSymlinksToTheHost) {
  dockerfile(std::string("FROM scratch AS s\n") + kBusybox + "RUN [\"/bin/busybox\", \"ln\", \"-s\", \"" + host() +
             "/shadow\", \"/s\"]\nRUN [\"/bin/busybox\", \"ln\", \"-s\", \"" + host() + "\", \"/d\"]\n" +
             "FROM scratch\nCOPY --from=s **/shadow /leak/\n");
  CliRun leak = build();
  EXPECT_EQ(leak.exit_code, 125) << leak.err;
  EXPECT_NE(leak.err.find("matches nothing"), std::string::npos) << leak.err;
  dockerfile(std::string("FROM scratch AS s\n") + kBusybox + "RUN [\"/bin/busybox\", \"ln\", \"-s\", \"" + host() +
             "\", \"/d\"]\nFROM scratch\nCOPY --from=s /d/shadow /leak\n");
  CliRun through_dir = build();
  EXPECT_EQ(through_dir.exit_code, 125) << through_dir.err;
  // The symlink itself is copied as the symlink it is; inside a container it points nowhere.
  dockerfile(std::string("FROM scratch AS s\n") + kBusybox + "RUN [\"/bin/busybox\", \"ln\", \"-s\", \"" + host() +
             "/shadow\", \"/s\"]\nFROM s\nCOPY --from=s /s /copied-link\n");
  CliRun link = build();
  ASSERT_EQ(link.exit_code, 0) << link.err;
  std::string seen = run_image({"t:1", "/bin/busybox", "sh", "-c", "/bin/busybox readlink /copied-link; "
                                                                   "/bin/busybox cat /copied-link 2>&1"});
  EXPECT_EQ(seen.find(kSecret), std::string::npos) << seen;
  EXPECT_EQ(seen.find(host() + "/shadow\n"), 0u) << seen;
  expect_host_untouched();
}

// Issue 37 item 2, the context variant: `ln -s /etc/shadow ctx/x` + `COPY ../../../etc/shadow`
// (a leading ".." survived clean_context_path and fs::relative named the host file).
// Item 9: `COPY .` kept no symlink of the context at all.
TEST_F(HostileBuild, ContextSymlinksAreCopiedAsSymlinksAndNeverFollowed) {
  fs::create_symlink(host() + "/shadow", context() + "/x");
  fs::create_symlink(host(), context() + "/hostdir");
  dockerfile(std::string("FROM scratch\nCOPY ") + dotdots() + host() + "/shadow /d/\n");
  CliRun dotdot = build();
  EXPECT_EQ(dotdot.exit_code, 125) << dotdot.err;
  dockerfile("FROM scratch\nCOPY **/shadow /d/\n");
  EXPECT_EQ(build().exit_code, 125);
  dockerfile("FROM scratch\nCOPY hostdir/shadow /d/\n");
  EXPECT_EQ(build().exit_code, 125);
  dockerfile(std::string("FROM scratch\n") + kBusybox + "COPY . /all/\n");
  CliRun all = build();
  ASSERT_EQ(all.exit_code, 0) << all.err;
  std::string seen = run_image({"t:1", "/bin/busybox", "sh", "-c",
                                "/bin/busybox readlink /all/x; /bin/busybox readlink /all/hostdir; /bin/busybox cat /all/x 2>&1"});
  EXPECT_EQ(seen.find(kSecret), std::string::npos) << seen;
  EXPECT_EQ(seen.find(host() + "/shadow\n" + host() + "\n"), 0u) << seen;
  expect_host_untouched();
}

// Issue 37 item 7: ADD of an .lrz file ran the external lrzip as root on the attacker's bytes
// (read_support_filter_all). A fake lrzip first on PATH records whether it ever ran.
TEST_F(HostileBuild, AddRunsNoExternalDecompressor) {
  std::string bin = dir_ / "fakebin";
  fs::create_directories(bin);
  for (const char* tool : {"lrzip", "lzop", "grzip", "lz4", "zstd", "xz", "bzip2", "gzip"}) {
    std::ofstream(bin + "/" + tool) << "#!/bin/sh\ntouch " << host() << "/ran-" << tool << "\ncat >/dev/null\n";
    fs::permissions(bin + "/" + tool, fs::perms(0755));
  }
  std::ofstream(context() + "/x.lrz", std::ios::binary) << std::string("LRZI\x00\x06", 6) << std::string(64, 'A');
  std::ofstream(context() + "/x.lzo", std::ios::binary) << std::string("\x89LZO\x00\r\n\x1a\n", 9) << std::string(64, 'A');
  std::ofstream(context() + "/x.grz", std::ios::binary) << std::string("GRZipII\x00\x02\x04:)", 12) << std::string(64, 'A');
  dockerfile("FROM scratch\nADD x.lrz x.lzo x.grz /d/\n");
  CliRun b = run_program({"/usr/bin/env", "PATH=" + bin + ":/usr/bin:/bin", "SANDCELL_ROOT=" + store(),
                          sandcell_binary(), "build", "-t", "t:1", context()});
  EXPECT_EQ(b.exit_code, 0) << b.err;
  expect_host_untouched();
}

// Issue 37 item 8: a Dockerfile or .dockerignore that is /dev/zero was read without end, a
// FIFO hung the build. Item 9: a Dockerfile symlinked to a host file printed its first line.
TEST_F(HostileBuild, DockerfileAndDockerignoreMustBeRegularFilesOfTheContext) {
  auto bounded_build = [&] {
    return run_program({"/usr/bin/timeout", "30", sandcell_binary(), "build", "-t", "t:1", context()});
  };
  fs::create_symlink("/dev/zero", context() + "/Dockerfile");
  CliRun zero = bounded_build();
  EXPECT_EQ(zero.exit_code, 125) << zero.err;
  fs::remove(context() + "/Dockerfile");
  ASSERT_EQ(::mkfifo((context() + "/Dockerfile").c_str(), 0600), 0);
  CliRun fifo = bounded_build();
  EXPECT_EQ(fifo.exit_code, 125) << fifo.err;
  fs::remove(context() + "/Dockerfile");
  fs::create_symlink(host() + "/shadow", context() + "/Dockerfile");
  CliRun secret = bounded_build();
  EXPECT_EQ(secret.exit_code, 125) << secret.err;
  EXPECT_EQ(secret.err.find(kSecret), std::string::npos) << secret.err;
  fs::remove(context() + "/Dockerfile");
  dockerfile("FROM scratch\nCOPY busybox /bin/busybox\n");
  ASSERT_EQ(::mkfifo((context() + "/.dockerignore").c_str(), 0600), 0);
  CliRun ignore_fifo = bounded_build();
  EXPECT_EQ(ignore_fifo.exit_code, 125) << ignore_fifo.err;
  EXPECT_NE(ignore_fifo.err.find("not a regular file"), std::string::npos) << ignore_fifo.err;
  // Resolved inside the context, "/dev/zero" is the context's own dev/zero: there is none.
  fs::remove(context() + "/.dockerignore");
  fs::create_symlink("/dev/zero", context() + "/.dockerignore");
  CliRun ignore_zero = bounded_build();
  EXPECT_EQ(ignore_zero.exit_code, 0) << ignore_zero.err;
  expect_host_untouched();
}

// Issue 37 item 8: a ~100k-character COPY pattern or .dockerignore line overflowed the stack in
// std::regex (SIGSEGV). Now refused with a message.
TEST_F(HostileBuild, HugePatternsAreRefusedNotCrashed) {
  dockerfile("FROM scratch\nCOPY " + std::string(100'000, 'a') + "* /d/\n");
  CliRun copy = build();
  EXPECT_EQ(copy.exit_code, 125) << copy.err.substr(0, 300);
  EXPECT_NE(copy.err.find("pattern longer than 4096"), std::string::npos) << copy.err.substr(0, 300);
  dockerfile("FROM scratch\nCOPY busybox /bin/busybox\n");
  std::ofstream(context() + "/.dockerignore") << std::string(100'000, 'b') << "*\n";
  CliRun ignore = build();
  EXPECT_EQ(ignore.exit_code, 125) << ignore.err.substr(0, 300);
}

// Issue 37 item 6: with --network none, ADD <URL> still fetched (a loopback-only URL) while
// RUN wget was blocked. No server is needed: the build must refuse before any connection.
TEST_F(HostileBuild, AddUrlObeysNetworkNone) {
  dockerfile("FROM scratch\nADD http://127.0.0.1:9/file /d/\n");
  CliRun b = run_sandcell({"build", "--network", "none", "-t", "t:1", context()});
  EXPECT_EQ(b.exit_code, 125) << b.err;
  EXPECT_NE(b.err.find("the build has no network"), std::string::npos) << b.err;
}

// Issue 37 item 9: a RUN step's inheritable set was its kept capabilities (runc clears it since
// CVE-2022-24769); a RUN step under a USER other than root gets no capabilities at all, as Docker's.
TEST_F(HostileBuild, RunStepsGetNoInheritableCapabilities) {
  dockerfile(std::string("FROM scratch\n") + kBusybox +
             "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox mkdir -m 1777 /out; "
             "/bin/busybox grep Cap /proc/self/status >/out/root\"]\nUSER 1000:1000\n"
             "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox grep Cap /proc/self/status >/out/user\"]\n");
  CliRun b = build();
  ASSERT_EQ(b.exit_code, 0) << b.err;
  std::string root = run_image({"t:1", "/bin/busybox", "cat", "/out/root"});
  EXPECT_NE(root.find("CapInh:\t0000000000000000"), std::string::npos) << root;
  EXPECT_NE(root.find("CapEff:\t00000000a80425fb"), std::string::npos) << root;  // Docker's default set
  std::string user = run_image({"t:1", "/bin/busybox", "cat", "/out/user"});
  for (const char* line : {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
                           "CapAmb:\t0000000000000000"})
    EXPECT_NE(user.find(line), std::string::npos) << line << " not in\n" << user;
}

// Bytes of the regular files under dir as this process sees them; 0 for what vanishes meanwhile.
std::uintmax_t regular_file_bytes_under(const std::string& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec)) continue;
    std::uintmax_t size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

// Issue 37 item 8: a RUN step's writable layer was a directory on the store's disk (3 GB by dd
// went there), though docs/security.md said it was a tmpfs charged to memory. Now it is a tmpfs
// of the step's memory limit in the builder's own mount namespace: 300 MB written under
// --memory 64m fail the step, and the store's disk never holds them; nothing stays mounted.
TEST_F(HostileBuild, ARunStepWritesIntoMemoryItsLimitBoundsNotTheStoresDisk) {
  dockerfile(std::string("FROM scratch\n") + kBusybox +
             "RUN [\"/bin/busybox\", \"dd\", \"if=/dev/zero\", \"of=/big\", \"bs=1M\", \"count=300\"]\n");
  std::atomic<bool> done{false};
  std::atomic<std::uintmax_t> most{0};
  std::thread watcher([&] {
    while (!done) {
      most = std::max<std::uintmax_t>(most, regular_file_bytes_under(store() + "/tmp"));
      usleep(20'000);
    }
  });
  CliRun b = run_sandcell({"build", "--memory", "64m", "-t", "t:1", context()});
  done = true;
  watcher.join();
  EXPECT_EQ(b.exit_code, 125) << b.err;
  EXPECT_NE(b.err.find("RUN failed"), std::string::npos) << b.err;
  EXPECT_LT(most.load(), 16u << 20) << "the step's writes reached the store's disk";
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) EXPECT_EQ(line.find(store()), std::string::npos) << line;
  // Within the bound, a step's writes still make its layer.
  dockerfile(std::string("FROM scratch\n") + kBusybox +
             "RUN [\"/bin/busybox\", \"dd\", \"if=/dev/zero\", \"of=/mid\", \"bs=1M\", \"count=8\"]\n");
  CliRun ok = run_sandcell({"build", "--memory", "64m", "-t", "t:2", context()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(run_image({"t:2", "/bin/busybox", "stat", "-c", "%s", "/mid"}), "8388608\n");
}

// `build --disk`: what a RUN step may write, below its memory. A step writing past it fails with
// ENOSPC inside, and the build's error says which bound the layer reached.
TEST_F(HostileBuild, ARunStepWritingPastDiskFailsWithENOSPCAndSaysSo) {
  dockerfile(std::string("FROM scratch\n") + kBusybox +
             "RUN [\"/bin/busybox\", \"dd\", \"if=/dev/zero\", \"of=/big\", \"bs=1M\", \"count=64\"]\n");
  CliRun b = run_sandcell({"build", "--memory", "256m", "--disk", "16m", "-t", "t:1", context()});
  EXPECT_EQ(b.exit_code, 125) << b.err;
  EXPECT_NE(b.err.find("No space left on device"), std::string::npos) << b.err;  // dd's own words
  EXPECT_NE(b.err.find("RUN failed (exit_nonzero, exit code 1): its writes filled the step's layer (--disk 16777216 bytes)"),
            std::string::npos) << b.err;
  dockerfile(std::string("FROM scratch\n") + kBusybox +
             "RUN [\"/bin/busybox\", \"dd\", \"if=/dev/zero\", \"of=/mid\", \"bs=1M\", \"count=8\"]\n");
  CliRun ok = run_sandcell({"build", "--memory", "256m", "--disk", "16m", "-t", "t:2", context()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(run_image({"t:2", "/bin/busybox", "stat", "-c", "%s", "/mid"}), "8388608\n");
}

// Issue 37 item 9: a build killed mid-step (SIGKILL, a crash) left <store>/tmp/copy-*, run-*
// behind for good: `sandcell gc` never looked there, prune only after a day. A live builder holds
// each temporary (flock); gc removes those nobody holds. Failed steps leave nothing either.
TEST_F(HostileBuild, TemporariesOfFailedOrKilledBuildsAreRemoved) {
  auto tmp_entries = [&] {
    std::vector<std::string> names;
    if (fs::exists(store() + "/tmp"))
      for (const auto& e : fs::directory_iterator(store() + "/tmp")) names.push_back(e.path().filename());
    std::sort(names.begin(), names.end());
    return names;
  };
  dockerfile(std::string("FROM scratch\n") + kBusybox + "RUN [\"/bin/busybox\", \"false\"]\n");
  EXPECT_EQ(build().exit_code, 125);
  EXPECT_EQ(tmp_entries(), std::vector<std::string>{});
  dockerfile("FROM scratch\nCOPY busybox missing /d/\n");
  EXPECT_EQ(build().exit_code, 125);
  EXPECT_EQ(tmp_entries(), std::vector<std::string>{});

  dockerfile(std::string("FROM scratch\n") + kBusybox + "RUN [\"/bin/busybox\", \"sleep\", \"60\"]\n");
  pid_t builder = fork();
  if (builder == 0) {
    execl(sandcell_binary().c_str(), "sandcell", "build", "-q", "-t", "t:2", context().c_str(), nullptr);
    _exit(127);
  }
  ASSERT_GT(builder, 0);
  auto running = [&] {
    for (const std::string& name : tmp_entries())
      if (name.starts_with("run-")) return true;
    return false;
  };
  for (int i = 0; i < 300 && !running(); ++i) usleep(100'000);
  EXPECT_TRUE(running());
  ::kill(builder, SIGKILL);
  ASSERT_EQ(::waitpid(builder, nullptr, 0), builder);
  ASSERT_FALSE(tmp_entries().empty());
  // A directory someone still holds stays, however old.
  std::string held = store() + "/tmp/held-by-the-test";
  fs::create_directories(held);
  int held_fd = ::open(held.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(held_fd, 0);
  ASSERT_EQ(::flock(held_fd, LOCK_EX), 0);
  // Older than the minute gc grants a temporary between mkdtemp and its lock.
  const timespec two_minutes_ago[2] = {{.tv_sec = ::time(nullptr) - 120, .tv_nsec = 0},
                                       {.tv_sec = ::time(nullptr) - 120, .tv_nsec = 0}};
  for (const std::string& name : tmp_entries())
    ASSERT_EQ(::utimensat(AT_FDCWD, (store() + "/tmp/" + name).c_str(), two_minutes_ago, AT_SYMLINK_NOFOLLOW), 0);
  CliRun gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(tmp_entries(), std::vector<std::string>{"held-by-the-test"}) << gc.out;
  ::close(held_fd);
}

}  // namespace
}  // namespace sandcell::test
