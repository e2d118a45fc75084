// The built-in seccomp filter (`--seccomp builtin`), seen from inside the sandbox: each denied
// call fails with EPERM (clone3 with ENOSYS so libc falls back to clone), and a call through
// another ABI kills the sandbox.
#include <gtest/gtest.h>
#include <signal.h>

#include "host_abi.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

class DeniedSyscall : public ::testing::TestWithParam<const char*> {};

TEST_P(DeniedSyscall, ReturnsEperm) {
  std::string name = GetParam();
  auto r = run_in_sandbox({"--seccomp", "builtin"}, {"/bin/sc-probe", "syscall", name});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record.value("stdout", ""), name + " errno=EPERM\n");
}

INSTANTIATE_TEST_SUITE_P(Builtin, DeniedSyscall,
    ::testing::Values("keyctl", "add_key", "request_key", "mount", "umount2", "unshare", "setns",
                      "clone-newns", "pivot_root", "kexec_load", "init_module", "finit_module",
                      "delete_module", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup",
                      "open_by_handle_at", "reboot", "swapon", "swapoff", "acct", "settimeofday",
                      "clock_settime"),
    [](const auto& info) {
      std::string name = info.param;
      for (char& c : name) if (c == '-') c = '_';
      return name;
    });

TEST(Seccomp, Clone3ReturnsEnosysSoLibcFallsBack) {
  auto r = run_in_sandbox({"--seccomp", "builtin"}, {"/bin/sc-probe", "syscall", "clone3"});
  EXPECT_EQ(r.record.value("stdout", ""), "clone3 errno=ENOSYS\n");
  auto fork_still_works = run_in_sandbox({}, {"/bin/sh", "-c", "(echo child) ; echo parent"});
  EXPECT_EQ(fork_still_works.record.value("stdout", ""), "child\nparent\n");
}

TEST(Seccomp, X32AbiKillsTheSandboxAndIsReportedSignaled) {
  auto r = run_in_sandbox({"--seccomp", "builtin"}, {"/bin/sc-probe", "x32", "getpid"});
  EXPECT_EQ(r.record["status"], "signaled") << r.out;
  EXPECT_EQ(r.record["signal"], SIGKILL);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(r.record["events"]["denied_syscalls"][0]["name"], "x32:getpid");
}

TEST(Seccomp, I386AbiKillsTheSandbox) {
  if (!kernel_runs_i386_calls()) GTEST_SKIP() << kNoI386Reason;
  auto r = run_in_sandbox({"--seccomp", "builtin"}, {"/bin/sc-probe", "int80", "getpid"});
  EXPECT_EQ(r.record["status"], "signaled") << r.out;
  EXPECT_EQ(r.record["signal"], SIGKILL);
  EXPECT_EQ(r.record["events"]["denied_syscalls"][0]["name"], "i386:getpid");
}

TEST(Seccomp, WithoutTheReportTheKernelKillsWithSigsys) {
  auto r = run_in_sandbox({"--seccomp", "builtin", "--no-denial-report"}, {"/bin/sc-probe", "x32", "getpid"});
  EXPECT_EQ(r.record["status"], "signaled");
  EXPECT_EQ(r.record["signal"], SIGSYS);
  EXPECT_TRUE(r.record["events"]["denied_syscalls"].empty());
}

}  // namespace
}  // namespace sandcell::test
