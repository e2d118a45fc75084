// The supervisor clones pinned to its CPU and then moves away (runtime/src/cpu_handoff.hpp), and
// the seccomp program is made after the clone (Spec::seccomp's function). Neither may show:
// the program gets sandcell's own CPU mask, a caller of run_sandbox() gets its mask back, and the
// late program confines and reports as the spec's would.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

std::string own_status_field(const std::string& name) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(name + ":", 0) == 0)
      return line.substr(line.find_first_not_of(" \t", name.size() + 1));
  return "";
}

runtime::Result run_direct(runtime::Spec spec, const runtime::RunOptions& base, std::string& out) {
  runtime::RunOptions options = base;
  options.output = [&](runtime::Stream, std::span<const char> bytes) {
    out.append(bytes.begin(), bytes.end());
  };
  options.stdin_fd = -1;
  return runtime::run_sandbox(spec, options);
}

runtime::Spec spec_running(std::vector<std::string> args) {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = std::move(args);
  return spec;
}

TEST(CpuHandOff, ProgramGetsSandcellsOwnCpuMask) {
  const std::string mine = own_status_field("Cpus_allowed_list");
  ASSERT_FALSE(mine.empty());
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"});
  EXPECT_EQ(r.record.value("stdout", ""), "Cpus_allowed_list:\t" + mine + "\n") << r.out;
  // A one-CPU mask has nowhere to hand off to; it still reaches the program unchanged.
  cpu_set_t own;
  ASSERT_EQ(sched_getaffinity(0, sizeof own, &own), 0);
  int last = CPU_SETSIZE - 1;
  while (last > 0 && !CPU_ISSET(last, &own)) --last;  // the highest CPU this test may use
  auto pinned = run_program({"/usr/bin/taskset", "-c", std::to_string(last), sandcell_binary(),
                             "run", "--json", "--rootfs", test_rootfs(), "--", "/bin/sh", "-c",
                             "grep Cpus_allowed_list /proc/self/status"});
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_NE(pinned.out.find("Cpus_allowed_list:\\t" + std::to_string(last) + "\\n"),
            std::string::npos)
      << pinned.out;
}

TEST(CpuHandOff, CallerGetsItsMaskBackAfterTheRun) {
  cpu_set_t before, after;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  std::string out;
  runtime::Result result = run_direct(spec_running({"/bin/true"}), {}, out);
  EXPECT_EQ(result.status, runtime::Status::Ok) << result.error;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after))
      << "CPUs before " << CPU_COUNT(&before) << ", after " << CPU_COUNT(&after);
}

// The supervisor stays off the CPU the child started on until the run ends: given its whole
// mask back early, the kernel woke it on the child's CPU, where it ran first and held up the
// program's start (cpu_handoff.hpp). Read from outside while a run sleeps.
TEST(CpuHandOff, SupervisorStaysOffTheChildsCpuDuringTheRun) {
  cpu_set_t own;
  ASSERT_EQ(sched_getaffinity(0, sizeof own, &own), 0);
  if (CPU_COUNT(&own) < 2) GTEST_SKIP() << "one CPU: there is nowhere to hand off to";
  pid_t sandcell = spawn_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/sleep", "2"});
  ASSERT_GT(sandcell, 0);
  cpu_set_t during;
  CPU_ZERO(&during);
  // The hand-off is done once the child runs; the sleep keeps the run going meanwhile.
  for (int i = 0; i < 100; ++i) {
    usleep(20 * 1000);
    if (sched_getaffinity(sandcell, sizeof during, &during) == 0 && CPU_COUNT(&during) > 0 &&
        !CPU_EQUAL(&during, &own))
      break;
  }
  int status = 0;
  ASSERT_EQ(waitpid(sandcell, &status, 0), sandcell);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(CPU_COUNT(&during), CPU_COUNT(&own) - 1)
      << "the supervisor had " << CPU_COUNT(&during) << " of " << CPU_COUNT(&own)
      << " CPUs during the run";
  cpu_set_t both;
  CPU_OR(&both, &during, &own);
  EXPECT_TRUE(CPU_EQUAL(&both, &own)) << "the supervisor ran outside sandcell's own mask";
}

// A caller of run_sandbox() that never called note_command_line() (this test binary) has its
// command line found through /proc/self/stat and hidden all the same.
TEST(CpuHandOff, InitHidesTheCommandLineOfACallerThatDidNotNoteIt) {
  std::string out;
  runtime::Result result = run_direct(spec_running({"/bin/cat", "/proc/1/cmdline"}), {}, out);
  ASSERT_EQ(result.status, runtime::Status::Ok) << result.error;
  EXPECT_EQ(out.substr(0, out.find('\0')), "sandcell-init");
  EXPECT_EQ(out.find_first_not_of('\0', sizeof "sandcell-init" - 1), std::string::npos)
      << "left behind the new name: " << out;
}

TEST(LateSeccomp, ProgramMadeAfterTheCloneConfinesAndReports) {
  runtime::RunOptions options;
  bool compiled = false;
  runtime::Spec spec =
      spec_running({"/bin/sh", "-c", "grep '^Seccomp:' /proc/self/status; /bin/sc-probe syscall keyctl"});
  spec.seccomp = runtime::SeccompSource([&]() -> std::optional<runtime::SeccompProgram> {
    compiled = true;
    auto profile = seccomp::load_profile_arg("default", {});
    runtime::SeccompProgram program = seccomp::compile(*profile, {.report_denials = true});
    program.name = "default";
    return program;
  });
  std::string out;
  runtime::Result result = run_direct(spec, options, out);
  EXPECT_TRUE(compiled);
  EXPECT_EQ(out, "Seccomp:\t2\nkeyctl errno=EPERM\n") << result.error;
  EXPECT_EQ(result.isolation.seccomp, "default");
  ASSERT_EQ(result.events.denied_syscalls.size(), 1u);
  EXPECT_EQ(result.events.denied_syscalls[0].name, "keyctl");
}

TEST(LateSeccomp, NulloptMeansUnconfined) {
  runtime::RunOptions options;
  runtime::Spec spec = spec_running({"/bin/sh", "-c", "grep '^Seccomp:' /proc/self/status"});
  spec.seccomp = runtime::SeccompSource([] { return std::optional<runtime::SeccompProgram>(); });
  std::string out;
  runtime::Result result = run_direct(spec, options, out);
  EXPECT_EQ(out, "Seccomp:\t0\n") << result.error;
  EXPECT_EQ(result.isolation.seccomp, "unconfined");
}

TEST(LateSeccomp, WhatItThrowsComesOutOfRunSandboxAfterCleanup) {
  runtime::RunOptions options;
  runtime::Spec spec = spec_running({"/bin/true"});
  spec.seccomp = runtime::SeccompSource([]() -> std::optional<runtime::SeccompProgram> {
    throw sandcell::Error::invalid("no such profile: test");
  });
  std::string out;
  EXPECT_THROW(run_direct(spec, options, out), sandcell::Error);
  EXPECT_TRUE(sandcell_cgroups().empty());
}

}  // namespace
}  // namespace sandcell::test
