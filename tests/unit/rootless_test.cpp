// Rootless mode without privileges: /etc/subuid parsing, id maps, the message for a refused user
// namespace (against a fake /proc/sys), delegated cgroup v2 detection (against a fake cgroupfs)
// and the rlimit fallbacks.
#include "sandcell/base/rootless.hpp"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "rootless_limits.hpp"
#include "temp_tree.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;
using sandcell::test::TempTree;

void put(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(SubIds, FindsTheUsersRangeByNameOrUid) {
  const std::string file = "# comment\nalice:100000:65536\nbob:165536:1000\n1001:300000:10\n";
  auto alice = find_subid_range(file, "alice", 1000);
  ASSERT_TRUE(alice);
  EXPECT_EQ(alice->start, 100000u);
  EXPECT_EQ(alice->count, 65536u);
  auto by_uid = find_subid_range(file, "carol", 1001);
  ASSERT_TRUE(by_uid);
  EXPECT_EQ(by_uid->start, 300000u);
  EXPECT_FALSE(find_subid_range(file, "dave", 1002));
  EXPECT_FALSE(find_subid_range("eve:x:1\neve:5:0\n:1:2\n", "eve", 1003));  // bad numbers, empty range
  EXPECT_FALSE(find_subid_range(file, "", 1000));
}

TEST(IdMaps, InitialMapIsTheWholeRangeOnItself) {
  EXPECT_TRUE(is_initial_id_map("         0          0 4294967295\n"));
  EXPECT_FALSE(is_initial_id_map("0 1000 1\n1 100000 65536\n"));
  EXPECT_FALSE(is_initial_id_map(""));
}

TEST(IdMaps, NestedIdentityKeepsEveryInsideId) {
  EXPECT_EQ(identity_map_of("         0       1000          1\n         1     100000      65536\n"),
            "0 0 1\n1 1 65536\n");
  EXPECT_EQ(identity_map_of("0 1000 1\n"), "0 0 1\n");
}

TEST(UsernsDenied, NamesAppArmorAndItsFixesWhenTheSysctlIsSet) {
  TempTree sys("sc-procsys");
  put(sys.path / "kernel/apparmor_restrict_unprivileged_userns", "1\n");
  std::string m = userns_denied_message(EACCES, "write uid_map", sys.path.string());
  EXPECT_NE(m.find("write uid_map: Permission denied"), std::string::npos) << m;
  EXPECT_NE(m.find("kernel.apparmor_restrict_unprivileged_userns = 1"), std::string::npos) << m;
  EXPECT_NE(m.find("sudo sandcell setup apparmor"), std::string::npos) << m;
  EXPECT_NE(m.find("sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"), std::string::npos) << m;
}

TEST(UsernsDenied, OtherSwitchesGetTheirOwnFix) {
  TempTree sys("sc-procsys");
  put(sys.path / "kernel/apparmor_restrict_unprivileged_userns", "0\n");
  put(sys.path / "user/max_user_namespaces", "0\n");
  EXPECT_NE(userns_denied_message(ENOSPC, "unshare", sys.path.string()).find("user.max_user_namespaces=15000"),
            std::string::npos);
  put(sys.path / "kernel/unprivileged_userns_clone", "0\n");
  EXPECT_NE(userns_denied_message(EPERM, "unshare", sys.path.string()).find("kernel.unprivileged_userns_clone=1"),
            std::string::npos);
  TempTree none("sc-procsys");  // no switch at all: still says what mode needed what
  std::string m = userns_denied_message(EPERM, "unshare", none.path.string());
  EXPECT_NE(m.find("rootless mode needs a user namespace: unshare: Operation not permitted"), std::string::npos) << m;
  EXPECT_EQ(m.find("AppArmor"), std::string::npos) << m;
}

TEST(UsernsRefusal, MaxUserNamespacesZeroIsNamedWithItsFix) {
  TempTree sys("sc-procsys");
  put(sys.path / "user/max_user_namespaces", "0\n");
  UsernsRefusal r = explain_userns_refusal(ENOSPC, sys.path.string());
  EXPECT_EQ(r.cause, "user.max_user_namespaces is 0");
  std::string m = r.message();
  EXPECT_TRUE(m.starts_with(
      "the kernel refuses this process a user namespace (clone(CLONE_NEWUSER): No space left "
      "on device): user.max_user_namespaces is 0. Fix: `sudo sysctl -w "
      "user.max_user_namespaces=15000`"))
      << m;
}

// Root is not subject to Debian's switch: the refusal must have another cause.
TEST(UsernsRefusal, TheUnprivilegedSwitchIsNotBlamedForRoot) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  TempTree sys("sc-procsys");
  put(sys.path / "kernel/unprivileged_userns_clone", "0\n");
  put(sys.path / "user/max_user_namespaces", "15000\n");
  UsernsRefusal r = explain_userns_refusal(EPERM, sys.path.string());
  EXPECT_EQ(r.cause.find("unprivileged_userns_clone"), std::string::npos) << r.cause;
  EXPECT_FALSE(r.fix.empty());
}

// Here the kernel gives this root process user namespaces: nothing to refuse.
TEST(UsernsRefusal, TheProbeFindsNoRefusalOnThisHost) {
  std::optional<UsernsRefusal> refusal = user_namespace_refusal();
  EXPECT_FALSE(refusal.has_value()) << refusal->message();
}

// A systemd user service with Delegate=yes: the caller's cgroup, writable, offering the controllers.
TEST(DelegatedCgroup, FoundWhenTheOwnCgroupIsWritableAndOffersTheControllers) {
  TempTree root("sc-cgroupfs");
  const fs::path own = root.path / "user.slice/user-1000.slice/user@1000.service/app.slice/run.scope";
  put(own / "cgroup.controllers", "cpuset cpu io memory pids\n");
  put(own / "cgroup.procs", "");
  put(own / "cgroup.subtree_control", "");
  auto found = delegated_cgroup_v2(root.path.string(),
                                   "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run.scope\n");
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, own.string());
}

TEST(DelegatedCgroup, NotFoundWithoutControllersWritableFilesOrAV2Line) {
  TempTree root("sc-cgroupfs");
  const fs::path own = root.path / "session-3.scope";
  put(own / "cgroup.controllers", "cpu memory\n");  // no pids
  put(own / "cgroup.procs", "");
  put(own / "cgroup.subtree_control", "");
  EXPECT_FALSE(delegated_cgroup_v2(root.path.string(), "0::/session-3.scope\n"));
  put(own / "cgroup.controllers", "cpu memory pids\n");
  EXPECT_TRUE(delegated_cgroup_v2(root.path.string(), "0::/session-3.scope\n"));
  fs::remove(own / "cgroup.subtree_control");  // not there (or not ours): not delegated
  EXPECT_FALSE(delegated_cgroup_v2(root.path.string(), "0::/session-3.scope\n"));
  // cgroup v1 only (hybrid hosts list controllers on numbered lines), or an escape attempt.
  EXPECT_FALSE(delegated_cgroup_v2(root.path.string(), "4:memory:/session-3.scope\n"));
  EXPECT_FALSE(delegated_cgroup_v2(root.path.string(), "0::/../etc\n"));
}

TEST(RlimitFallbacks, MemoryCpuAndPidsAreRlimitsAndSaySo) {
  Limits limits{.memory_bytes = 64ull << 20,
                .pids = 16,
                .cpus = 1.0,
                .wall_s = 5.0,
                .cpu_s = 1.5,
                .output_bytes = 1024,
                .disk_bytes = std::nullopt};
  std::vector<Rlimit> rlimits;
  std::map<std::string, Enforcement> enforced;
  std::vector<std::string> warnings;
  add_rlimit_fallbacks(limits, true, rlimits, enforced, warnings);
  EXPECT_EQ(enforced["memory_bytes"], Enforcement::Rlimit);
  EXPECT_EQ(enforced["cpu_s"], Enforcement::Rlimit);
  EXPECT_EQ(enforced["pids"], Enforcement::Rlimit);
  EXPECT_FALSE(enforced.contains("cpus"));
  ASSERT_EQ(rlimits.size(), 3u);
  EXPECT_EQ(rlimits[0].resource, RLIMIT_AS);
  EXPECT_EQ(rlimits[0].hard, 64ull << 20);
  EXPECT_EQ(rlimits[1].resource, RLIMIT_CPU);
  EXPECT_EQ(rlimits[1].soft, 2u);  // whole seconds, rounded up: SIGXCPU there
  EXPECT_EQ(rlimits[1].hard, 3u);  // SIGKILL a second later, for a program that ignores SIGXCPU
  EXPECT_EQ(rlimits[2].resource, RLIMIT_NPROC);
  EXPECT_EQ(rlimits[2].soft, 17u);  // --pids 16 for the program, plus sandcell's init
}

TEST(RlimitFallbacks, PidsNeedTheSandboxsOwnUserNamespace) {
  std::vector<Rlimit> rlimits;
  std::map<std::string, Enforcement> enforced;
  std::vector<std::string> warnings;
  Limits limits;
  limits.pids = 16;
  add_rlimit_fallbacks(limits, false, rlimits, enforced, warnings);
  EXPECT_TRUE(rlimits.empty());
  EXPECT_FALSE(enforced.contains("pids"));  // the caller reports it as none
}

TEST(RlimitFallbacks, AValueAboveTheHardLimitIsClampedWithAWarning) {
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_AS, &saved), 0);
  // Lowering a hard limit cannot be undone without CAP_SYS_RESOURCE: do it in a child.
  pid_t pid = fork();
  if (pid == 0) {
    rlimit low{.rlim_cur = 32ull << 20, .rlim_max = 32ull << 20};
    if (setrlimit(RLIMIT_AS, &low) != 0) _exit(2);
    std::vector<Rlimit> rlimits;
    std::map<std::string, Enforcement> enforced;
    std::vector<std::string> warnings;
    Limits limits;
    limits.memory_bytes = 64ull << 20;
    add_rlimit_fallbacks(limits, true, rlimits, enforced, warnings);
    bool ok = rlimits.size() == 1 && rlimits[0].hard == (32ull << 20) && warnings.size() == 1 &&
              warnings[0].starts_with("memory_bytes: clamped to the current hard rlimit 33554432");
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace sandcell::runtime
