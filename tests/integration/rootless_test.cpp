// Rootless mode (issue 11): the same CLI for an unprivileged user, run here as a user the test
// creates (CI runs as root). Limits hold through rlimits on this host (cgroup v1, no delegation)
// and the record says so; nothing is left behind: no processes, no mounts, empty run state.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "rootless_user.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

class Rootless : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { user_ = std::make_unique<RootlessUser>(); }
  static void TearDownTestSuite() { user_.reset(); }
  void TearDown() override {
    EXPECT_TRUE(user_->processes().empty()) << "processes of " << user_->name() << " left";
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);)
      EXPECT_EQ(line.find(user_->dir()), std::string::npos) << "mount left on the host: " << line;
    if (fs::exists(user_->state_dir())) {
      EXPECT_TRUE(fs::is_empty(user_->state_dir())) << "run state left in " << user_->state_dir();
    }
  }
  static CliRun run(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
    std::vector<std::string> args = {"run", "--json", "--rootfs", user_->rootfs()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return user_->sandcell(args);
  }
  static std::string status_of(const CliRun& r) {
    return r.record.is_object() ? r.record["status"].get<std::string>() : "no record: " + r.out + r.err;
  }
  static std::unique_ptr<RootlessUser> user_;
};
std::unique_ptr<RootlessUser> Rootless::user_;

TEST_F(Rootless, RunIsRootOfItsOwnUserNamespaceAndSaysHowLimitsAreEnforced) {
  auto r = run({}, {"/bin/sh", "-c", "/bin/sc-probe ids; cat /proc/self/uid_map"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(status_of(r), "ok");
  // uid 0 is the user, 1..65536 its subordinate range: the sandbox's map is the identity of that.
  EXPECT_EQ(r.record["stdout"], "uid 0 0 0 gid 0 0 0\n         0          0          1\n"
                                "         1          1      65536\n");
  EXPECT_TRUE(r.record["isolation"]["rootless"].get<bool>());
  EXPECT_EQ(r.record["isolation"]["cgroup"], "none");
  EXPECT_NE(r.record["isolation"]["namespaces"].dump().find("\"user\""), std::string::npos);
  EXPECT_EQ(r.record["enforced"]["memory_bytes"], "rlimit");
  EXPECT_EQ(r.record["enforced"]["pids"], "rlimit");
  EXPECT_EQ(r.record["enforced"]["cpus"], "none");  // no rlimit bounds CPU bandwidth
  EXPECT_EQ(r.record["enforced"]["wall_s"], "supervisor");
  EXPECT_EQ(r.record["enforced"]["output_bytes"], "supervisor");
}

TEST_F(Rootless, MemoryLimitByRlimitAsStopsABigAllocation) {
  auto r = run({"--memory", "64m"}, {"/bin/sc-probe", "mem", "512"});
  EXPECT_EQ(r.record["enforced"]["memory_bytes"], "rlimit");
  EXPECT_EQ(status_of(r), "exit_nonzero");  // the allocation fails; there is no OOM kill to see
  EXPECT_NE(r.record["stdout"].get<std::string>().find("malloc failed after"), std::string::npos) << r.out;
}

TEST_F(Rootless, PidsLimitByRlimitNprocCountsThisSandboxOnly) {
  // Another sandbox of the same user holds 20 threads meanwhile: RLIMIT_NPROC counts per user
  // namespace, and each sandbox has its own, so they do not add up.
  std::thread other([] { run({"--timeout", "3"}, {"/bin/sc-probe", "threads", "20"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto r = run({"--pids", "16", "--timeout", "2"}, {"/bin/sc-probe", "threads", "64"});
  other.join();
  EXPECT_EQ(r.record["enforced"]["pids"], "rlimit");
  // pid 1 is the probe itself: 15 more threads make 16.
  EXPECT_EQ(r.record["stdout"], "started 15 of 64 threads: errno=EAGAIN\n") << r.out;
}

TEST_F(Rootless, ForkBombEndsAtTheWallTimeoutAndLeavesNothing) {
  auto r = run({"--pids", "32", "--timeout", "2"}, {"/bin/sc-probe", "forkbomb"});
  EXPECT_EQ(status_of(r), "timeout_wall") << r.out;
  EXPECT_EQ(system("true"), 0);  // the host can still start processes
}

TEST_F(Rootless, CpuTimeByRlimitKillsASpin) {
  auto r = run({"--cpu-time", "1", "--timeout", "30"}, {"/bin/sc-probe", "spin"});
  EXPECT_EQ(r.record["enforced"]["cpu_s"], "rlimit");
  EXPECT_EQ(status_of(r), "timeout_cpu") << r.out;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

TEST_F(Rootless, WallTimeoutKillsASleep) {
  auto r = run({"--timeout", "0.5"}, {"/bin/sc-probe", "sleep", "100"});
  EXPECT_EQ(status_of(r), "timeout_wall") << r.out;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

// allow: needs no veth: the proxy's listener is made inside the sandbox's netns. A denied name
// is refused by the proxy before any lookup, so nothing leaves the machine.
TEST_F(Rootless, AllowModeGoesThroughTheProxyOverTheSocketTransport) {
  auto r = run({"--net", "allow:allowed.test"},
               {"/bin/sh", "-c", "wget -q -O- http://denied.test/ >/dev/null 2>&1; echo rc=$?"});
  EXPECT_EQ(status_of(r), "ok") << r.out << r.err;
  EXPECT_EQ(r.record["stdout"], "rc=1\n");
  EXPECT_EQ(r.record["isolation"]["network_transport"], "socket");
  ASSERT_EQ(r.record["events"]["blocked_connections"].size(), 1u) << r.record["events"];
  EXPECT_EQ(r.record["events"]["blocked_connections"][0]["host"], "denied.test");
}

// full rootless is not there yet (slirp4netns as the user fails to configure the netns): it is
// refused with a reason, never started half-way.
TEST_F(Rootless, FullModeIsRefusedWithAReason) {
  auto r = user_->sandcell({"run", "--rootfs", user_->rootfs(), "--net", "full", "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("not available rootless yet"), std::string::npos) << r.err;
}

TEST_F(Rootless, VethTransportAndUsernsAutoAreRefusedWithAReason) {
  auto veth = user_->sandcell({"run", "--rootfs", user_->rootfs(), "--net", "allow:example.com",
                               "--net-transport", "veth", "--", "/bin/true"});
  EXPECT_EQ(veth.exit_code, 125);
  EXPECT_NE(veth.err.find("needs root"), std::string::npos) << veth.err;
  auto userns = user_->sandcell({"run", "--rootfs", user_->rootfs(), "--userns", "auto", "--", "/bin/true"});
  EXPECT_EQ(userns.exit_code, 125);
  EXPECT_NE(userns.err.find("needs root"), std::string::npos) << userns.err;
}

// Installing the AppArmor profile is root's job; the user can see what it would install.
TEST_F(Rootless, SetupApparmorPrintsTheProfileForTheUsersBinariesAndNeedsRootToInstall) {
  auto install = user_->sandcell({"setup", "apparmor"});
  EXPECT_EQ(install.exit_code, 125);
  EXPECT_NE(install.err.find("run it as root (sudo sandcell setup apparmor)"), std::string::npos) << install.err;
  auto print = user_->sandcell({"setup", "apparmor", "--print"});
  EXPECT_EQ(print.exit_code, 0) << print.err;
  EXPECT_NE(print.out.find("profile sandcell " + user_->dir() + "/bin/sandcell{,-images} flags=(unconfined) {"),
            std::string::npos) << print.out;
  EXPECT_NE(print.out.find("\n  userns,\n"), std::string::npos) << print.out;
}

TEST_F(Rootless, BuildChownsAndDeletesInsideAndTheStoreIsTheUsers) {
  const std::string ctx = user_->home() + "/ctx";
  fs::create_directories(ctx);
  fs::copy_file(user_->rootfs() + "/bin/busybox", ctx + "/busybox");
  std::ofstream(ctx + "/Dockerfile") << R"(FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /home/app && chown 1000:1000 /home/app && rm /bin/ls
CMD ["sh", "-c", "stat -c '%u %g' /home/app; test -e /bin/ls || echo ls-deleted"]
)";
  ASSERT_EQ(system(("chown -R " + user_->name() + ": " + ctx).c_str()), 0);
  auto b = user_->sandcell({"build", "-t", "rootless:1", ctx});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto r = user_->sandcell({"run", "rootless:1"});
  EXPECT_EQ(r.out, "1000 1000\nls-deleted\n") << r.err;
  // On the host the store is the user's, and uid 1000 inside is subordinate id 1000 (the range's
  // 1000th id, as uid 0 is the user itself).
  struct stat st {};
  ASSERT_EQ(stat(user_->store().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user_->uid());
  bool found = false;
  for (const auto& layer : fs::directory_iterator(user_->store() + "/layers")) {
    if (stat((layer.path() / "home/app").c_str(), &st) != 0) continue;
    found = true;
    EXPECT_EQ(st.st_uid, RootlessUser::kSubIdStart + 999);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace sandcell::test
