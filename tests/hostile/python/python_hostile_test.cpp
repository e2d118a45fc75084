// Hostile Python programs (tests/hostile/python/*.py) run the way an agent runs code: `sandcell
// code --skill python`, in the python skill image under the skill's `code` seccomp profile. Each
// case asserts what the kernel answered (the errno, signal or exit status the program saw) AND
// what sandcell reported (status, error class, events). The same attacks from static C and
// shell are in the other tests of tests/hostile/.
#include <signal.h>

#include <filesystem>

#include "skills_support.hpp"

namespace sandcell::test {
namespace {

std::string program(const std::string& name) {
  return read_text(std::filesystem::path(SANDCELL_HOSTILE_PYTHON_DIR) / name);
}

class HostilePython : public Skills {
 protected:
  CliRun python(const std::string& file, std::vector<std::string> flags = {},
                const std::string& preamble = "") {
    return code("python", preamble + program(file), std::move(flags));
  }
};

const nlohmann::json& events(const CliRun& r) {
  return r.record["report"]["events"];
}

uint64_t denied(const CliRun& r, const std::string& name) {
  for (const auto& entry : events(r)["denied_syscalls"])
    if (entry["name"] == name) return entry["count"].get<uint64_t>();
  return 0;
}

std::string error_class_of(const CliRun& r) {
  return r.record["error"].is_object() ? r.record["error"]["class"].get<std::string>() : "none";
}

// A denied call must be answered EPERM, be the run's only denial, and leave the run `ok`.
void expect_only_denial(const CliRun& r, const std::string& syscall,
                        const std::string& expected_stdout) {
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record["stdout"], expected_stdout) << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_EQ(r.record["report"]["isolation"]["seccomp"], "code");
  EXPECT_EQ(denied(r, syscall), 1u) << events(r).dump();
  EXPECT_EQ(events(r)["denied_syscalls"].size(), 1u) << events(r).dump();
}

class PythonSyscall : public HostilePython, public ::testing::WithParamInterface<const char*> {};

TEST_P(PythonSyscall, ThroughCtypesIsDeniedWithEpermAndReported) {
  const std::string name = GetParam();
  auto r = python("denied_syscall.py", {}, "NAME = \"" + name + "\"\n");
  expect_only_denial(r, name, name + " errno=EPERM\n");
}

INSTANTIATE_TEST_SUITE_P(Hostile, PythonSyscall,
                         ::testing::Values("unshare", "clone", "setns", "mount", "fsopen",
                                           "pivot_root", "chroot", "keyctl", "add_key", "bpf",
                                           "perf_event_open", "userfaultfd", "io_uring_setup",
                                           "ptrace", "process_vm_readv", "open_by_handle_at",
                                           "kexec_load", "init_module"));

class PythonSocket : public HostilePython, public ::testing::WithParamInterface<const char*> {};

TEST_P(PythonSocket, FamilyIsDeniedWithEpermAndReported) {
  const std::string kind = GetParam();
  auto r = python("denied_socket.py", {}, "NAME = \"" + kind + "\"\n");
  expect_only_denial(r, "socket", kind + " errno=EPERM\n");
}

INSTANTIATE_TEST_SUITE_P(Hostile, PythonSocket,
                         ::testing::Values("packet", "raw", "netlink_audit", "vsock", "alg"));

TEST_F(HostilePython, KernelKnobsAreReadOnly) {
  auto r = python("kernel_knobs.py");
  EXPECT_EQ(r.record["stdout"],
            std::string("/proc/sys/kernel/core_pattern EROFS\n/proc/sys/kernel/panic EROFS\n"
                        "/proc/sys/vm/drop_caches EROFS\n/sys/kernel/uevent_helper EROFS\n"))
      << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_TRUE(events(r)["denied_syscalls"].empty()) << events(r).dump();
}

TEST_F(HostilePython, MaskedFilesAreMissingOrEmpty) {
  auto r = python("masked_files.py");
  EXPECT_EQ(r.record["stdout"],
            std::string("/proc/kcore hidden\n/proc/keys hidden\n/proc/timer_list hidden\n"
                        "/proc/sched_debug hidden\n/proc/acpi hidden\n/sys/firmware hidden\n"))
      << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_TRUE(events(r)["denied_syscalls"].empty()) << events(r).dump();
}

TEST_F(HostilePython, ProcSelfExeAndTheInterpreterCannotBeOverwritten) {
  auto r = python("overwrite_exe.py");
  EXPECT_EQ(r.record["stdout"],
            // pid 1 is sandcell's init, not dumpable: its exe link cannot even be opened.
            "/proc/self/exe ETXTBSY\n/proc/1/exe EACCES\n/usr/bin/python3.11 ETXTBSY\n")
      << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_TRUE(events(r)["denied_syscalls"].empty()) << events(r).dump();
}

TEST_F(HostilePython, OnlyStdioIsOpenAndTheCwdIsTheWorkspace) {
  auto r = python("inherited_fds.py");
  EXPECT_EQ(r.record["stdout"], "fds [0, 1, 2]\ncwd /workspace /workspace\n") << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
}

TEST_F(HostilePython, KillMinusOneReachesNoOneAndOnlyItselfAndTheInitAreVisible) {
  auto r = python("kill_everything.py");
  // kill(-1) spares the namespace's init (pid 1) and the caller (pid 2): nobody else is there.
  EXPECT_EQ(r.record["stdout"], "kill -1 ESRCH\npids [1, 2]\n") << r.record["stderr"];
  EXPECT_EQ(r.record["status"], "ok");
  EXPECT_TRUE(events(r)["denied_syscalls"].empty()) << events(r).dump();
}

TEST_F(HostilePython, SethostnameIsDeniedAndReported) {
  expect_only_denial(python("sethostname.py"), "sethostname", "sethostname EPERM\n");
}

TEST_F(HostilePython, HugeExceptionLineIsClassifiedNotACrashOfTheRunner) {
  auto r = python("huge_exception.py");
  ASSERT_TRUE(r.record.is_object()) << "sandcell code exited " << r.exit_code << ": " << r.err;
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.record["status"], "exit_nonzero");
  EXPECT_EQ(error_class_of(r), "runtime_exception");
  EXPECT_EQ(r.record["error"]["exception"], "ValueError");
  EXPECT_GT(r.record["stderr"].get<std::string>().size(), 900000u);
}

TEST_F(HostilePython, ForkBombHitsThePidsLimit) {
  auto r = python("fork_bomb.py", {"--pids", "32"});
  EXPECT_EQ(r.record["stdout"], "fork failed: EAGAIN\n") << r.record["stderr"];
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.record["status"], "pids_limit");
  EXPECT_EQ(error_class_of(r), "process_limit");
  EXPECT_GT(events(r)["pids_limit_hits"].get<int>(), 0);
}

TEST_F(HostilePython, ThreadBombHitsThePidsLimit) {
  auto r = python("thread_bomb.py", {"--pids", "32"});
  EXPECT_EQ(r.record["stdout"], "thread failed: can't start new thread\n") << r.record["stderr"];
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.record["status"], "pids_limit");
  EXPECT_EQ(error_class_of(r), "process_limit");
  EXPECT_GT(events(r)["pids_limit_hits"].get<int>(), 0);
}

TEST_F(HostilePython, BytearrayMemoryBombIsOom) {
  auto r = python("memory_bomb.py", {"--memory", "128m"});
  EXPECT_EQ(r.record["status"], "oom") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(error_class_of(r), "memory_limit");
  EXPECT_GE(events(r)["oom_kills"].get<int>(), 1);
  EXPECT_LE(r.record["report"]["peak_memory_bytes"].get<int64_t>(), 128ll << 20);
}

TEST_F(HostilePython, MemfdFillIsOom) {
  auto r = python("memfd_fill.py", {"--memory", "128m"});
  EXPECT_EQ(r.record["status"], "oom") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(error_class_of(r), "memory_limit");
  EXPECT_GE(events(r)["oom_kills"].get<int>(), 1);
}

TEST_F(HostilePython, OutputFloodIsCappedAndStopped) {
  auto r = python("output_flood.py", {"--output-limit", "64k"});
  EXPECT_EQ(r.record["status"], "output_limit") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(error_class_of(r), "output_limit");
  EXPECT_TRUE(r.record["report"]["stdout_truncated"].get<bool>());
  EXPECT_EQ(r.record["stdout"].get<std::string>().size(), 64u << 10);
}

TEST_F(HostilePython, CpuSpinIsStoppedAtTheCpuTimeLimit) {
  auto r = python("cpu_spin.py", {"--cpu-time", "1", "--timeout", "60"});
  EXPECT_EQ(r.record["status"], "timeout_cpu") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(error_class_of(r), "timeout");
  EXPECT_GE(r.record["report"]["cpu_ms"].get<int64_t>(), 950);
}

}  // namespace
}  // namespace sandcell::test
