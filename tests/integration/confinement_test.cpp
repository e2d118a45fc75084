// Confinement: each denied call is checked twice, in what the kernel did (the errno or signal the
// program saw) and in what the result record reports (events.denied_syscalls).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include <filesystem>
#include <fstream>

#include "host_abi.hpp"
#include "sandcell_cli.hpp"

// A namespace of its own: unity builds put several test files in one translation unit.
namespace sandcell::test::confinement_tests {
namespace {

namespace fs = std::filesystem;

const char* kDockerDefault = "/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json";
const char* kContainersCommon = "/usr/share/containers/seccomp.json";

uint64_t times_denied(const CliRun& r, const std::string& name) {
  if (!r.record.is_object()) return 0;
  for (const auto& entry : r.record["events"]["denied_syscalls"])
    if (entry["name"] == name) return entry["count"].get<uint64_t>();
  return 0;
}

struct Denial {
  const char* probe;    // sc-probe syscall NAME
  const char* syscall;  // the name the report uses
};

class ReportedDenial : public ::testing::TestWithParam<std::tuple<std::string, Denial>> {};

TEST_P(ReportedDenial, FailsWithEpermAndIsReported) {
  auto [profile, denial] = GetParam();
  auto r = run_in_sandbox({"--seccomp", profile}, {"/bin/sc-probe", "syscall", denial.probe});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record.value("stdout", ""), std::string(denial.probe) + " errno=EPERM\n");
  EXPECT_GE(times_denied(r, denial.syscall), 1u) << r.record["events"].dump();
  EXPECT_EQ(r.record["isolation"]["seccomp"], profile);
}

const Denial kDenials[] = {
    {"keyctl", "keyctl"},         {"unshare", "unshare"},           {"mount", "mount"},
    {"setns", "setns"},           {"bpf", "bpf"},                   {"perf_event_open", "perf_event_open"},
    {"userfaultfd", "userfaultfd"}, {"io_uring_setup", "io_uring_setup"},
    {"open_by_handle_at", "open_by_handle_at"}, {"clone-newns", "clone"},
};

INSTANTIATE_TEST_SUITE_P(Profiles, ReportedDenial,
    ::testing::Combine(::testing::Values("builtin", "default", "code"), ::testing::ValuesIn(kDenials)),
    [](const auto& info) {
      std::string name = std::get<0>(info.param) + "_" + std::get<1>(info.param).probe;
      for (char& c : name) if (c == '-') c = '_';
      return name;
    });

TEST(Confinement, VsockAndAlgSocketsAreDeniedAndReported) {
  for (const char* profile : {"default", "code"}) {
    for (const char* family : {"vsock", "alg"}) {
      auto r = run_in_sandbox({"--seccomp", profile}, {"/bin/sc-probe", "socket", family});
      EXPECT_EQ(r.record.value("stdout", ""), std::string("socket ") + family + " errno=EPERM\n") << profile;
      EXPECT_GE(times_denied(r, "socket"), 1u) << profile << " " << family;
    }
    auto inet = run_in_sandbox({"--seccomp", profile}, {"/bin/sc-probe", "socket", "inet"});
    EXPECT_EQ(inet.record.value("stdout", ""), "socket inet ok\n");
  }
}

TEST(Confinement, CodeProfileAlsoDeniesPacketAndRawSockets) {
  for (const char* family : {"packet", "raw"}) {
    auto r = run_in_sandbox({"--seccomp", "code", "--cap-add", "NET_RAW"}, {"/bin/sc-probe", "socket", family});
    EXPECT_EQ(r.record.value("stdout", ""), std::string("socket ") + family + " errno=EPERM\n");
    EXPECT_GE(times_denied(r, "socket"), 1u);
  }
}

TEST(Confinement, ForeignAbiCallsAreDeniedAndReported) {
  auto x32 = run_in_sandbox({"--seccomp", "default"}, {"/bin/sc-probe", "x32", "getpid"});
  EXPECT_EQ(x32.record.value("stdout", ""), "x32 getpid errno=EPERM\n");
  EXPECT_EQ(times_denied(x32, "x32:getpid"), 1u) << x32.record["events"].dump();
  if (!kernel_runs_i386_calls()) GTEST_SKIP() << "x32 checked; i386 not: " << kNoI386Reason;
  auto i386 = run_in_sandbox({"--seccomp", "default"}, {"/bin/sc-probe", "int80", "getpid"});
  EXPECT_EQ(i386.record.value("stdout", ""), "int80 getpid errno=EPERM\n");
  EXPECT_EQ(times_denied(i386, "i386:getpid"), 1u) << i386.record["events"].dump();
}

TEST(Confinement, CodeProfileKillsForeignAbiCallsAndSaysWhy) {
  for (const char* abi : {"x32", "int80"}) {
    if (std::string(abi) == "int80" && !kernel_runs_i386_calls())
      GTEST_SKIP() << "x32 checked; i386 not: " << kNoI386Reason;
    auto r = run_in_sandbox({"--seccomp", "code"}, {"/bin/sc-probe", abi, "getpid"});
    EXPECT_EQ(r.record["status"], "signaled") << r.out;
    EXPECT_EQ(r.record["signal"], SIGKILL);
    EXPECT_EQ(r.record.value("stdout", ""), "");  // the call never returned
    std::string name = std::string(abi) == "x32" ? "x32:getpid" : "i386:getpid";
    EXPECT_EQ(times_denied(r, name), 1u) << r.record["events"].dump();
    EXPECT_NE(r.record.value("error", "").find(name), std::string::npos) << r.record.dump();
  }
}

TEST(Confinement, DeniedCallFromASecondThreadIsReported) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "thread-syscall", "bpf"});
  EXPECT_EQ(r.record.value("stdout", ""), "bpf errno=EPERM\n");
  EXPECT_EQ(times_denied(r, "bpf"), 1u);
}

TEST(Confinement, ProgramsOwnPermissiveFilterDoesNotLoosenTheSandbox) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "own-filter-exec", "/bin/sc-probe", "syscall", "keyctl"});
  EXPECT_EQ(r.record.value("stdout", ""), "keyctl errno=EPERM\n");
  EXPECT_EQ(times_denied(r, "keyctl"), 1u);
}

TEST(Confinement, RepeatedDenialsAreCounted) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "for i in 1 2 3 4 5; do /bin/sc-probe syscall keyctl; done"});
  EXPECT_EQ(times_denied(r, "keyctl"), 5u);
}

TEST(Confinement, UnconfinedHasNoFilter) {
  auto r = run_in_sandbox({"--seccomp", "unconfined"}, {"/bin/sc-probe", "caps"});
  EXPECT_NE(r.record.value("stdout", "").find("Seccomp:\t0"), std::string::npos);
  EXPECT_EQ(r.record["isolation"]["seccomp"], "unconfined");
}

TEST(Confinement, DockersOwnProfilesRunABusyboxWorkload) {
  for (const char* profile : {kDockerDefault, kContainersCommon}) {
    ASSERT_TRUE(fs::exists(profile)) << profile << " missing: scripts/install-deps.sh installs it";
    auto r = run_in_sandbox({"--seccomp", profile}, {"/bin/sh", "-c",
        "echo hello | tr a-z A-Z; ls /bin | wc -l > /tmp/n; cat /tmp/n >/dev/null; (sleep 0.1 &) ; wait; "
        "/bin/sc-probe syscall keyctl"});
    EXPECT_EQ(r.record["status"], "ok") << profile << r.record.dump();
    EXPECT_EQ(r.record.value("stdout", "").substr(0, 6), "HELLO\n") << profile;
    EXPECT_EQ(r.record["isolation"]["seccomp"], profile);
  }
}

TEST(Confinement, MalformedProfileNamesFieldAndIndex) {
  fs::path bad = fs::temp_directory_path() / ("sandcell-bad-profile-" + std::to_string(getpid()) + ".json");
  std::ofstream(bad) << R"({"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW"}, {"names": ["write"], "action": "SCMP_ACT_NOPE"}]})";
  auto r = run_sandcell({"run", "--rootfs", test_rootfs(), "--seccomp", bad.string(), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("syscalls[1]"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("action"), std::string::npos) << r.err;
  fs::remove(bad);
}

TEST(Confinement, SandboxDoesNotHangOrGainCallsWhenSupervisorDies) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // reap the orphaned sandbox pid 1 here
  pid_t supervisor = spawn_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/sc-probe",
                                     "syscall-loop", "keyctl", "100000000"});
  for (int i = 0; i < 100 && processes_matching("/bin/sc-probe syscall-loop").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(processes_matching("/bin/sc-probe syscall-loop").empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // in the middle of denied calls
  kill(supervisor, SIGKILL);
  waitpid(supervisor, nullptr, 0);
  for (int i = 0; i < 100 && !processes_matching("/bin/sc-probe syscall-loop").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(processes_matching("/bin/sc-probe syscall-loop").empty()) << "sandbox hung without its supervisor";
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  EXPECT_EQ(run_sandcell({"gc"}).exit_code, 0);
}

TEST(Landlock, WritesOutsideWritablePathsAreBlockedEvenOnAWritableOverlay) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "echo x > /etc/x 2>&1 || echo blocked; echo y > /tmp/y && echo tmp-ok; echo z > /dev/null && echo dev-ok"});
  EXPECT_EQ(r.record.value("stdout", ""), "blocked\ntmp-ok\ndev-ok\n") << r.record.value("stderr", "");
  EXPECT_NE(r.record.value("stderr", "").find("Permission denied"), std::string::npos);
  // landlock:abiN here; apparmor:sandcell-default+landlock:abiN where AppArmor runs (tests/vm).
  EXPECT_NE(r.record["isolation"]["lsm"].get<std::string>().find("landlock:abi"), std::string::npos);
}

TEST(Landlock, WorkdirAndReadWriteMountsAreWritable) {
  fs::path host = fs::temp_directory_path() / ("sandcell-ll-" + std::to_string(getpid()));
  fs::create_directories(host);
  auto r = run_in_sandbox({"--mount", host.string() + ":/data", "--workdir", "/work"},
                          {"/bin/sh", "-c", "echo a > /data/a && echo b > /work/b && echo ok"});
  EXPECT_EQ(r.record.value("stdout", ""), "ok\n") << r.record.value("stderr", "");
  fs::remove_all(host);
}

TEST(Landlock, TcpIsDeniedUnderNetworkNoneUdpIsNot) {
  auto tcp = run_in_sandbox({}, {"/bin/sc-probe", "loopback", "tcp"});
  // TCP rules came with Landlock ABI 4 (Linux 6.7); Debian 12's 6.1 (tests/vm) has ABI 2.
  const std::string lsm = tcp.record["isolation"]["lsm"].get<std::string>();
  const size_t abi_at = lsm.find("landlock:abi");
  ASSERT_NE(abi_at, std::string::npos) << lsm;
  const int abi = std::stoi(lsm.substr(abi_at + 12));
  EXPECT_EQ(tcp.record.value("stdout", ""), abi >= 4 ? "tcp loopback bind errno=EACCES\n" : "tcp loopback ok\n");
  auto udp = run_in_sandbox({}, {"/bin/sc-probe", "loopback", "udp"});
  EXPECT_EQ(udp.record.value("stdout", ""), "udp loopback ok\n");
}

}  // namespace
}  // namespace sandcell::test::confinement_tests
