// RunOptions::outside_program (docs/architecture.md, "Design B, in the order to build it", step
// 1): the sandbox is made as for any run, but its program is a process made outside it, which
// joins the init's namespaces and confines itself with libsandcell-confine.so. Here the test is
// that outside: it forks into the init's pid namespace as a skill's zygote will, and the child
// calls the library (loaded before the fork, through dlopen, as the zygote's interpreter will
// load it) and execs. What the program sees of its sandbox, and what the record says, must be a
// cold run's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "outside_support.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
// How the test's program is started from outside: as given, or with a plan the library refuses.
enum class Plan { AsGiven, Corrupted };

// The zygote's part, played by the test: fork into the init's pid namespace; the child calls the
// library with the entry's fds and plan, then execs `argv` (found in the sandbox's root).
class TestZygote {
 public:
  TestZygote(std::vector<std::string> argv, Plan plan = Plan::AsGiven)
      : args_(std::move(argv)), plan_kind_(plan) {
    for (std::string& arg : args_) argv_.push_back(arg.data());
    argv_.push_back(nullptr);
    program_.start = [this](const runtime::OutsideEntry& entry) { return start(entry); };
    program_.wait_status = [this] {
      int status = 0;
      while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
      pid_ = -1;
      return status;
    };
  }
  ~TestZygote() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  const runtime::OutsideProgram* program() const { return &program_; }
  pid_t pid() const { return pid_; }

 private:
  runtime::UniqueFd start(const runtime::OutsideEntry& entry) {
    ConfineFn confine = confine_function();
    if (confine == nullptr) throw Error(ENOENT, std::string("dlopen ") + dlerror());
    // Everything the child needs is made here: it only makes system calls.
    plan_.assign(entry.plan.begin(), entry.plan.end());
    if (plan_kind_ == Plan::Corrupted)
      reinterpret_cast<sandcell_confine_plan*>(plan_.data())->magic = 0;
    sandcell_confine_fds fds{};
    for (size_t i = 0; i < entry.namespace_fds.size(); ++i)
      fds.namespace_fds[i] = entry.namespace_fds[i];
    fds.cgroup_count = static_cast<uint32_t>(entry.cgroup_fds.size());
    for (size_t i = 0; i < entry.cgroup_fds.size() && i < 8; ++i)
      fds.cgroup_fds[i] = entry.cgroup_fds[i];
    fds.stdio[0] = entry.stdin_fd;
    fds.stdio[1] = entry.stdout_fd;
    fds.stdio[2] = entry.stderr_fd;
    fds.report_fd = entry.report_fd;
    const auto* plan = reinterpret_cast<const sandcell_confine_plan*>(plan_.data());
    static char* const kNoEnv[] = {const_cast<char*>("PATH=/bin:/usr/bin"), nullptr};

    runtime::UniqueFd own_pid_ns(open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
    if (!own_pid_ns || setns(entry.pid_namespace_fd, CLONE_NEWPID) < 0)
      throw Error(errno, "join the sandbox's pid namespace for the next child");
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    const long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
      const char* step = nullptr;
      if (confine(plan, &fds, &step) < 0) _exit(125);
      execve(argv_[0], argv_.data(), kNoEnv);
      _exit(127);
    }
    const int saved = errno;
    setns(own_pid_ns.get(), CLONE_NEWPID);
    if (pid < 0) throw Error(saved, "clone3 into the sandbox");
    pid_ = static_cast<pid_t>(pid);
    return runtime::UniqueFd(pidfd);
  }

  std::vector<std::string> args_;
  std::vector<char*> argv_;
  Plan plan_kind_;
  std::vector<unsigned char> plan_;
  runtime::OutsideProgram program_;
  pid_t pid_ = -1;
};

struct Observed {
  runtime::Result result;
  std::string out, err;
  pid_t init = 0;
  std::vector<std::string> cgroups;
  // Each of the program's namespaces, "same" or "differs" from the init's, read by the test
  // while the program waits (the init is not dumpable: the program cannot read them itself).
  std::string namespaces;
};

std::string link_of(const std::string& path) {
  std::error_code error;
  return fs::read_symlink(path, error).string();
}

// The program's host pid: the init's child (cold), or the one the zygote made.
pid_t program_pid(pid_t init, const TestZygote* zygote) {
  if (zygote != nullptr) return zygote->pid();
  std::ifstream children("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) +
                         "/children");
  pid_t pid = 0;
  children >> pid;
  return pid;
}

// Runs `script` with busybox sh in the test rootfs, cold or from outside (`zygote`). A script
// that prints "ready" then reads a line gets the namespace comparison done meanwhile.
Observed run(const std::string& script, TestZygote* zygote,
             runtime::Spec spec = spec_with_seccomp()) {
  Observed r;
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/sh", "-c", script};
  if (!spec.limits.wall_s) spec.limits.wall_s = 20;
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  runtime::UniqueFd stdin_read(fds[0]), stdin_write(fds[1]);
  runtime::RunOptions options;
  options.stdin_fd = stdin_read.get();
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    std::string& to = s == runtime::Stream::Stdout ? r.out : r.err;
    to.append(data.data(), data.size());
    if (s != runtime::Stream::Stdout || r.out.find("ready\n") == std::string::npos ||
        !r.namespaces.empty())
      return;
    const std::string program = "/proc/" + std::to_string(program_pid(r.init, zygote)) + "/ns/";
    const std::string init = "/proc/" + std::to_string(r.init) + "/ns/";
    for (const char* ns : {"mnt", "uts", "ipc", "net", "cgroup", "user", "pid"}) {
      const std::string theirs = link_of(program + ns);
      r.namespaces += std::string(ns) +
                      (!theirs.empty() && theirs == link_of(init + ns) ? " same\n" : " differs\n");
    }
    // The same root (the pivoted one), and not the host's mount namespace.
    struct stat program_root {
    }, init_root{};
    const bool roots = stat((program + "../root/").c_str(), &program_root) == 0 &&
                       stat((init + "../root/").c_str(), &init_root) == 0;
    r.namespaces += std::string("root ") + (roots && program_root.st_dev == init_root.st_dev &&
                                                    program_root.st_ino == init_root.st_ino
                                                ? "same\n"
                                                : "differs\n");
    r.namespaces +=
        std::string("host mnt ") +
        (link_of(program + "mnt") == link_of("/proc/self/ns/mnt") ? "same\n" : "differs\n");
    ssize_t n = write(stdin_write.get(), "go\n", 3);
    (void)n;
  };
  options.on_started = [&](pid_t init, const std::vector<std::string>& paths) {
    r.init = init;
    r.cgroups = paths;
  };
  options.outside_program = zygote ? zygote->program() : nullptr;
  r.result = runtime::run_sandbox(spec, options);
  return r;
}

const std::string kSelfPortrait = self_portrait();

TEST(OutsideProgram, SeesTheSandboxAColdProgramSees) {
  ASSERT_NE(confine_function(), nullptr) << dlerror();
  Observed cold = run(kSelfPortrait, nullptr);
  TestZygote zygote({"/bin/sh", "-c", kSelfPortrait});
  Observed outside = run(kSelfPortrait, &zygote);
  ASSERT_EQ(cold.result.status, runtime::Status::Ok) << cold.result.error << cold.err;
  ASSERT_EQ(outside.result.status, runtime::Status::Ok) << outside.result.error << outside.err;
  EXPECT_EQ(outside.out, cold.out);
  EXPECT_EQ(outside.err, cold.err);
  EXPECT_NE(cold.out.find("pid 2\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("NoNewPrivs:\t1\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("Seccomp:\t2\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("after go\n"), std::string::npos) << cold.out;
  const std::string expected =
      "mnt same\nuts same\nipc same\nnet same\ncgroup same\nuser same\npid same\nroot same\nhost "
      "mnt "
      "differs\n";
  EXPECT_EQ(cold.namespaces, expected);
  EXPECT_EQ(outside.namespaces, expected);
  EXPECT_EQ(outside.result.exit_code, 0);
}

// The same in a user namespace of the sandbox's own (--userns=auto), as an unprivileged user with
// groups, a kept capability (ambient), a working directory and an rlimit of the spec's.
TEST(OutsideProgram, SeesTheSandboxAColdProgramSeesInAUserNamespaceAsAnotherUser) {
  runtime::Spec spec = spec_with_seccomp();
  spec.user_namespace = runtime::UserNamespace::Auto;
  spec.uid = 1000;
  spec.gid = 1000;
  spec.additional_gids = {2000, 3000};
  spec.capabilities = {"CAP_NET_BIND_SERVICE"};
  spec.cwd = "/tmp";
  spec.rlimits = {{.resource = RLIMIT_NOFILE, .soft = 100, .hard = 200}};
  const std::string script = kSelfPortrait + "; touch /tmp/mine && ls -n /tmp/mine | cut -c1-30";
  Observed cold = run(script, nullptr, spec);
  TestZygote zygote({"/bin/sh", "-c", script});
  Observed outside = run(script, &zygote, spec);
  ASSERT_EQ(cold.result.status, runtime::Status::Ok) << cold.result.error << cold.err;
  ASSERT_EQ(outside.result.status, runtime::Status::Ok) << outside.result.error << outside.err;
  EXPECT_EQ(outside.out, cold.out);
  EXPECT_EQ(outside.err, cold.err);
  EXPECT_NE(cold.out.find("Uid:\t1000\t1000\t1000\t1000\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("Groups:\t2000 3000 \n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("CapAmb:\t0000000000000400\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("cwd /tmp\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("\n100\n"), std::string::npos) << cold.out;
  const std::string expected =
      "mnt same\nuts same\nipc same\nnet same\ncgroup same\nuser same\npid same\nroot same\nhost "
      "mnt "
      "differs\n";
  EXPECT_EQ(outside.namespaces, expected);
}

TEST(OutsideProgram, ItsExitStatusIsTheRunsAndWhatItLeftRunningEnds) {
  TestZygote zygote({"/bin/sh", "-c", "sleep 1000 & echo bye; exit 7"});
  Observed r = run("unused", &zygote);
  EXPECT_EQ(r.result.status, runtime::Status::ExitNonzero) << r.result.error << r.err;
  EXPECT_EQ(r.result.exit_code, 7);
  EXPECT_EQ(r.out, "bye\n");
  for (const std::string& dir : r.cgroups) EXPECT_FALSE(fs::exists(dir)) << dir;
  EXPECT_FALSE(fs::exists("/proc/" + std::to_string(r.init))) << "the init is still there";
}

TEST(OutsideProgram, TheWallLimitStopsIt) {
  runtime::Spec spec = spec_with_seccomp();
  spec.limits.wall_s = 0.5;
  TestZygote zygote({"/bin/sleep", "1000"});
  Observed r = run("unused", &zygote, spec);
  EXPECT_EQ(r.result.status, runtime::Status::TimeoutWall) << r.result.error;
}

TEST(OutsideProgram, ThePidsLimitCountsItsProcesses) {
  runtime::Spec spec = spec_with_seccomp();
  spec.limits.pids = 5;
  const char* script = "for i in 1 2 3 4 5 6 7 8; do sleep 100 & done; wait";
  Observed cold = run(script, nullptr, spec);
  TestZygote zygote({"/bin/sh", "-c", script});
  Observed outside = run(script, &zygote, spec);
  EXPECT_EQ(outside.result.status, cold.result.status) << outside.result.error;
  EXPECT_EQ(outside.result.events.pids_limit_hits, cold.result.events.pids_limit_hits);
  EXPECT_GT(cold.result.events.pids_limit_hits, 0u);
  EXPECT_NE(outside.err.find("can't fork"), std::string::npos) << outside.err;
}

TEST(OutsideProgram, ItsDeniedSystemCallsAreRecorded) {
  const std::vector<std::string> probe = {"/bin/sc-probe", "syscall", "keyctl"};
  runtime::Spec spec = spec_with_seccomp();
  TestZygote zygote(probe);
  Observed outside = run("unused", &zygote, spec);
  spec.args = probe;
  EXPECT_EQ(outside.out, "keyctl errno=EPERM\n") << outside.err;
  ASSERT_EQ(outside.result.events.denied_syscalls.size(), 1u) << runtime::to_json(outside.result);
  EXPECT_EQ(outside.result.events.denied_syscalls[0].name, "keyctl");
}

TEST(OutsideProgram, AConfinementThatFailsIsARuntimeErrorNamingTheStep) {
  TestZygote zygote({"/bin/true"}, Plan::Corrupted);
  Observed r = run("unused", &zygote);
  EXPECT_EQ(r.result.status, runtime::Status::RuntimeError);
  EXPECT_NE(r.result.error.find("check the plan"), std::string::npos) << r.result.error;
}

TEST(OutsideProgram, IsRefusedWithATerminal) {
  TestZygote zygote({"/bin/true"});
  runtime::RunOptions options;
  options.output = [](runtime::Stream, std::span<const char>) {};
  options.on_terminal = [](runtime::UniqueFd) {};
  options.outside_program = zygote.program();
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/true"};
  EXPECT_THROW(runtime::run_sandbox(spec, options), Error);
}

}  // namespace
}  // namespace sandcell::test
