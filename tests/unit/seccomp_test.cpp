// The seccomp compiler, and the built-in filter's behaviour on the real kernel. Installing a
// filter needs no root once no_new_privs is set, so each behavioural test forks a child, filters
// it, makes one call and reports through its exit status.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/profile.hpp"
#include "host_abi.hpp"
#include "seccomp_install.hpp"

namespace sandcell::seccomp {
namespace {

using test::i386_getpid;
using test::install;
using test::kInstallFailed;
using test::kX32SyscallBit;

bool same_program(const std::vector<sock_filter>& a, const std::vector<sock_filter>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
}

// Runs `body` in a child, under `program` if given; returns the child's wait status. The child
// exits with what body returns, or kInstallFailed if the filter did not load.
int wait_status_of(const std::function<int()>& body, const runtime::SeccompProgram* program) {
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};  // SIGSYS dumps core by default; keep the test dir clean
    setrlimit(RLIMIT_CORE, &no_core);
    if (program != nullptr && install(*program) != 0) _exit(kInstallFailed);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

int status_under_builtin(const std::function<int()>& body) {
  static const runtime::SeccompProgram program = compile(builtin_profile());
  return wait_status_of(body, &program);
}

// The errno `call` fails with under the built-in filter; 0 if it succeeds.
int errno_under_builtin(const std::function<long()>& call) {
  const int status = status_under_builtin([&] { return call() == -1 ? errno : 0; });
  EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  return WEXITSTATUS(status);
}

Profile one_rule_profile(Rule rule) {
  return {.name = "test", .default_action = {ActionKind::Allow, 0}, .rules = {std::move(rule)}};
}

TEST(SeccompCompile, BuiltinProfile_CompilesToNonEmptyProgramWithinKernelLimit) {
  const runtime::SeccompProgram program = compile(builtin_profile());
  EXPECT_EQ(program.name, "builtin");
  EXPECT_GT(program.instructions.size(), 10u);
  EXPECT_LE(program.instructions.size(), static_cast<size_t>(BPF_MAXINSNS));
  EXPECT_EQ(program.flags, 0u);
}

TEST(SeccompCompile, UnknownSyscallNames_AreSkipped) {
  const Action eperm{ActionKind::Errno, EPERM};
  const auto with_unknown =
      compile(one_rule_profile({.names = {"no_such_syscall", "stime", "keyctl"}, .action = eperm}));
  const auto keyctl_only = compile(one_rule_profile({.names = {"keyctl"}, .action = eperm}));
  EXPECT_TRUE(same_program(with_unknown.instructions, keyctl_only.instructions));
}

TEST(SeccompCompile, ArgIndexSeven_ThrowsErrorNamingTheSyscall) {
  const Rule bad{.names = {"keyctl"},
                 .action = {ActionKind::Errno, EPERM},
                 .args = {{.index = 7, .op = ArgCondition::Op::Equal, .value = 1}}};
  try {
    compile(one_rule_profile(bad));
    FAIL() << "compile accepted argument index 7";
  } catch (const Error& e) {
    EXPECT_EQ(e.code().value(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("seccomp rule for 'keyctl'"), std::string::npos)
        << e.what();
  }
}

TEST(SeccompCompile, NotifyRule_SetsNewListenerFlag) {
  const auto program =
      compile(one_rule_profile({.names = {"mkdir"}, .action = {ActionKind::Notify, 0}}));
  EXPECT_EQ(program.flags, static_cast<unsigned>(SECCOMP_FILTER_FLAG_NEW_LISTENER));
}

TEST(SeccompCompile, RuleRepeatingDefaultAction_IsSkipped) {
  const auto program = compile(one_rule_profile({.names = {"getpid"}, .action = {}}));
  EXPECT_FALSE(program.instructions.empty());
}

TEST(BuiltinProfile, KeyctlReturnsEperm) {
  EXPECT_EQ(errno_under_builtin([] { return syscall(SYS_keyctl, 0 /* GET_KEYRING_ID */, -3, 0); }),
            EPERM);
}

TEST(BuiltinProfile, UnshareNewUserReturnsEperm) {
  EXPECT_EQ(errno_under_builtin([] { return long{unshare(CLONE_NEWUSER)}; }), EPERM);
}

TEST(BuiltinProfile, BpfReturnsEperm) {
  EXPECT_EQ(errno_under_builtin([] { return syscall(SYS_bpf, 1000, nullptr, 0); }), EPERM);
}

TEST(BuiltinProfile, CloneWithNamespaceFlagReturnsEperm) {
  EXPECT_EQ(
      errno_under_builtin([] { return syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0); }),
      EPERM);
  EXPECT_EQ(
      errno_under_builtin([] { return syscall(SYS_clone, CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0); }),
      EPERM);
}

TEST(BuiltinProfile, Clone3ReturnsEnosys) {
  EXPECT_EQ(errno_under_builtin([] { return syscall(SYS_clone3, nullptr, 0); }), ENOSYS);
}

TEST(BuiltinProfile, ForkAndThreadsStillWork) {
  EXPECT_EQ(errno_under_builtin([] {
              const pid_t pid = fork();
              if (pid == 0) _exit(0);
              return pid < 0 ? -1L : long{waitpid(pid, nullptr, 0)};
            }),
            0);
  // glibc tries clone3 for threads first and falls back to clone on ENOSYS.
  EXPECT_EQ(errno_under_builtin([] {
              std::thread([] {}).join();
              return 0L;
            }),
            0);
}

TEST(BuiltinProfile, GetpidWorks) {
  EXPECT_EQ(errno_under_builtin([] { return getpid() > 0 ? 0L : -1L; }), 0);
}

TEST(BuiltinProfile, TiocstiReturnsEpermAlsoWithHighBitsSet) {
  EXPECT_EQ(errno_under_builtin([] {
              char c = 'x';
              return syscall(SYS_ioctl, 0, TIOCSTI, &c);
            }),
            EPERM);
  EXPECT_EQ(errno_under_builtin([] {
              char c = 'x';
              return syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c);
            }),
            EPERM);
}

TEST(BuiltinProfile, PersonalityAllowsOnlyDockersValues) {
  for (unsigned long persona : {0xffffffffUL, 0x0UL, 0x8UL, 0x20000UL, 0x20008UL}) {
    EXPECT_EQ(errno_under_builtin([=] { return syscall(SYS_personality, persona); }), 0)
        << std::hex << persona;
  }
  constexpr auto kNoAslr = static_cast<unsigned long>(ADDR_NO_RANDOMIZE);
  constexpr auto kExecData = static_cast<unsigned long>(READ_IMPLIES_EXEC);
  for (unsigned long persona :
       {kNoAslr, kExecData, 0x1UL, 0x20009UL, 0x8000000UL, 0xfffffffeUL, 0x7fffffffUL}) {
    EXPECT_EQ(errno_under_builtin([=] { return syscall(SYS_personality, persona); }), EPERM)
        << std::hex << persona;
  }
}

TEST(BuiltinProfile, X32SyscallKillsProcessWithSigsys) {
  const int status =
      status_under_builtin([] { return static_cast<int>(syscall(kX32SyscallBit | SYS_getpid)); });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

TEST(BuiltinProfile, I386SyscallKillsProcessWithSigsys) {
  if (!test::kernel_runs_i386_calls()) GTEST_SKIP() << test::kNoI386Reason;
  const int status = status_under_builtin([] { return static_cast<int>(i386_getpid()); });
  ASSERT_TRUE(WIFSIGNALED(status)) << "exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGSYS);
}

}  // namespace
}  // namespace sandcell::seccomp
