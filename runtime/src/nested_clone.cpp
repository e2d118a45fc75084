// The OCI path's spawner (container.cpp, run_spawner) with a user namespace in the init's flags:
// a helper joins the zygote's user and pid namespaces, becomes the root of the first (a user
// namespace is made only by an id its parent maps), and forks once more, since after
// setns(CLONE_NEWPID) only a child may make a pid namespace; that process clones the init with
// CLONE_PARENT, so the init is the supervisor's child as in any run, and writes its maps from
// the zygote's user namespace, the parent of the init's. Both helpers only make system calls
// between the clone and their exit (the supervisor may have other threads).
#include "nested_clone.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "child_steps.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/fd_passing.hpp"

namespace sandcell::runtime {
namespace {

// What the helpers say on their channel, in order: the second helper's pid (it is the
// supervisor's child, to be reaped), the init's pid with its pidfd, then that its maps are
// written; or a failed step.
struct NestReport {
  enum Kind : int { Helper = 0, Init = 1, Mapped = 2, Failed = 3 };
  int kind = Failed;
  pid_t pid = 0;  // as the host sees it
  int err = 0;
  char step[96] = {};
};

// Everything the helpers need, made before the clone.
struct NestedClone {
  const ChildPlan* plan;
  uint64_t flags;
  int userns_fd, pidns_fd;
  int channel;
  char uid_map[48], gid_map[48];
};

[[noreturn]] void fail(int channel, const char* step) {
  NestReport report{.kind = NestReport::Failed, .pid = 0, .err = errno};
  snprintf(report.step, sizeof report.step, "%s", step);
  ssize_t ignored = send(channel, &report, sizeof report, MSG_NOSIGNAL);
  (void)ignored;
  _exit(125);
}

// The pid the host's procfs gives the process of `pidfd` (its fdinfo's "Pid:"), without
// allocating; 0 if it cannot be read.
pid_t host_pid_of(int pidfd) {
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pidfd);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = '\0';
  const char* line = strstr(text, "\nPid:");
  return line ? static_cast<pid_t>(strtol(line + 5, nullptr, 10)) : 0;
}

void write_map(const NestedClone& n, pid_t init, const char* file, const char* map) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/%s", init, file);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  const ssize_t length = static_cast<ssize_t>(strlen(map));
  if (fd < 0 || write(fd, map, static_cast<size_t>(length)) != length)
    fail(n.channel, file[0] == 'u'
                        ? "write the sandbox's uid_map from the zygote's user namespace"
                        : "write the sandbox's gid_map from the zygote's user namespace");
  close(fd);
}

// The second helper: in P_Z (a pid there), U_Z's root.
[[noreturn]] void clone_the_init(const NestedClone& n) {
  int pidfd = -1;
  clone_args args{};
  // exit_signal stays 0: with CLONE_PARENT the init's is ours, SIGCHLD, as the supervisor's.
  args.flags = n.flags | CLONE_PARENT | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_child(*n.plan);
  if (pid < 0) fail(n.channel, "clone3 the sandbox's init under the zygote's namespaces");
  // The init first, so that the supervisor can end it whatever happens next.
  const pid_t init = host_pid_of(pidfd);
  const NestReport report{.kind = NestReport::Init, .pid = init};
  iovec data{.iov_base = const_cast<NestReport*>(&report), .iov_len = sizeof report};
  if (send_with_fds(n.channel, {&data, 1}, {&pidfd, 1}) < 0) _exit(125);
  if (init <= 0) fail(n.channel, "read the sandbox's init's pid from its pidfd");
  write_map(n, init, "uid_map", n.uid_map);
  write_map(n, init, "gid_map", n.gid_map);
  const NestReport mapped{.kind = NestReport::Mapped, .pid = init};
  if (send(n.channel, &mapped, sizeof mapped, MSG_NOSIGNAL) < 0) _exit(125);
  _exit(0);
}

// The first helper: the supervisor's child, single-threaded, so it may join a user namespace.
[[noreturn]] void run_nesting_helper(const NestedClone& n) {
  if (setns(n.userns_fd, CLONE_NEWUSER) < 0) fail(n.channel, "join the zygote's user namespace");
  if (setns(n.pidns_fd, CLONE_NEWPID) < 0) fail(n.channel, "join the zygote's pid namespace");
  if (child_setresgid(0) < 0 || child_setresuid(0) < 0)
    fail(n.channel, "become the root of the zygote's user namespace");
  // The id change made this process undumpable, and the init would inherit that: its /proc
  // files (uid_map) would then be the host root's, not ours to write.
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) fail(n.channel, "prctl(PR_SET_DUMPABLE, 1)");
  clone_args args{};
  args.flags = CLONE_PARENT;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) clone_the_init(n);
  if (pid < 0) fail(n.channel, "clone3 the second helper into the zygote's pid namespace");
  // Our active pid namespace is still the host's: clone3 gave the host's pid.
  const NestReport report{.kind = NestReport::Helper, .pid = static_cast<pid_t>(pid)};
  if (send(n.channel, &report, sizeof report, MSG_NOSIGNAL) < 0) _exit(125);
  _exit(0);
}

void reap(pid_t pid) {
  if (pid <= 0) return;
  while (waitpid(pid, nullptr, __WALL) < 0 && errno == EINTR) {
  }
}

}  // namespace

pid_t clone_nested(const ChildPlan& plan, uint64_t flags, const Nesting& nest, UniqueFd& pidfd) {
  if (nest.userns_fd < 0 || nest.pidns_fd < 0 || nest.size == 0 || nest.base == 0)
    throw Error::invalid(
        "nesting needs the zygote's user and pid namespaces and a range of "
        "its ids other than its root's");
  int pair[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), "socketpair");
  UniqueFd ours(pair[0]), theirs(pair[1]);
  NestedClone n{.plan = &plan,
                .flags = flags,
                .userns_fd = nest.userns_fd,
                .pidns_fd = nest.pidns_fd,
                .channel = theirs.get(),
                .uid_map = {},
                .gid_map = {}};
  snprintf(n.uid_map, sizeof n.uid_map, "0 %u %u\n", nest.base, nest.size);
  snprintf(n.gid_map, sizeof n.gid_map, "0 %u %u\n", nest.base, nest.size);
  clone_args args{};
  args.exit_signal = SIGCHLD;
  long helper = syscall(SYS_clone3, &args, sizeof args);
  if (helper == 0) run_nesting_helper(n);
  check(helper, "clone3 the helper that nests the sandbox under the zygote");
  theirs.reset();  // EOF once both helpers are gone
  pid_t second = 0, init = 0;
  NestReport failure;
  bool failed = false;
  bool mapped = false;
  while (!mapped && !failed) {
    NestReport report;
    int fd = -1;
    const ssize_t got = receive_with_fd(ours.get(), &report, sizeof report, 0, &fd);
    if (fd >= 0) pidfd.reset(fd);
    if (got < 0 && errno == EINTR) continue;
    if (got != sizeof report) {
      failed = true;
      failure.err = got < 0 ? errno : EPIPE;
      snprintf(failure.step, sizeof failure.step, "the helpers that nest the sandbox stopped");
      break;
    }
    if (report.kind == NestReport::Helper) second = report.pid;
    if (report.kind == NestReport::Init) init = report.pid;
    if (report.kind == NestReport::Mapped) mapped = true;
    if (report.kind == NestReport::Failed) {
      failed = true;
      failure = report;
    }
  }
  reap(static_cast<pid_t>(helper));
  reap(second);
  if (failed) {
    if (pidfd) {  // the init exists (our child): it waits for its maps; ended and reaped
      syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
      siginfo_t info{};
      while (waitid(P_PIDFD, static_cast<id_t>(pidfd.get()), &info, WEXITED | __WALL) < 0 &&
             errno == EINTR) {
      }
      pidfd.reset();
    }
    throw Error(failure.err, std::string(failure.step, strnlen(failure.step, sizeof failure.step)));
  }
  if (!pidfd || init <= 0) throw Error(EPROTO, "the sandbox's init came without its pidfd");
  return init;
}

}  // namespace sandcell::runtime
