// The sandbox's init (pid 1 of its pid namespace) and the program's exec: the command line
// hidden, the program cloned, the cgroups left, everything reaped, the exit reported. No
// allocation (see child_plan.hpp).
#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "child_steps.hpp"
#include "sandcell/base/timeline.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::runtime {

namespace {

// note_command_line(): where the kernel keeps this process's argv strings, or nulls.
char* command_line_start = nullptr;
char* command_line_end = nullptr;

}  // namespace

void note_command_line(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr || argv[argc - 1] == nullptr) return;
  command_line_start = argv[0];
  command_line_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
}

// The init is a fork of sandcell, so /proc/1/cmdline would show sandcell's own command line
// (host paths, --env values) to the program. Overwrite it in place, as setproctitle does. The
// kernel shows the bytes between arg_start and arg_end: the argv strings, laid out one after the
// other from argv[0] (note_command_line); callers that did not note theirs have them read from
// fields 48 and 49 of /proc/self/stat (~0.04 ms more on the way to the program's execve).
void hide_command_line() {
  if (command_line_start != nullptr && command_line_end > command_line_start) {
    const size_t size = static_cast<size_t>(command_line_end - command_line_start);
    memset(command_line_start, 0, size);
    snprintf(command_line_start, size, "sandcell-init");
    return;
  }
  char stat[1024];
  int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, stat, sizeof stat - 1);
  close(fd);
  if (n <= 0) return;
  stat[n] = '\0';
  const char* field = strrchr(stat, ')');  // the command name may hold spaces; it ends at ')'
  unsigned long long values[2] = {};
  // Each step moves `field` to the space before field `next`; ')' ends field 2.
  for (int next = 3; field != nullptr && next <= 49; ++next) {
    field = strchr(field + 1, ' ');
    if (field != nullptr && next >= 48) values[next - 48] = strtoull(field + 1, nullptr, 10);
  }
  if (field == nullptr || values[0] == 0 || values[1] <= values[0]) return;
  char* start = reinterpret_cast<char*>(values[0]);
  size_t size = values[1] - values[0];
  memset(start, 0, size);
  snprintf(start, size, "sandcell-init");
}

// A program that is pid 1 gets init's signal rules: the kernel drops every signal from inside
// the namespace that it has no handler for, so abort() ends in SIGSEGV and `kill 1` does
// nothing, and orphans it never waits for stay zombies. So pid 1 is this loop instead, as
// confined as the program (it runs after seccomp): it reaps everything, and when the program
// exits it ends what the program left running, reports the program's wait status and exits.
namespace {

#if !defined(SANDCELL_ASAN)
int exec_program_entry(void* plan) {
  exec_program(*static_cast<const ChildPlan*>(plan));
}
#endif

// Closes every fd but `keep` (at most kMaxCgroupTasksFds + 1 of them), without allocating.
void close_all_but(const int* keep, size_t count) {
  unsigned sorted[kMaxCgroupTasksFds + 1];
  for (size_t i = 0; i < count; ++i) {  // insertion sort: a handful of fds
    size_t j = i;
    for (; j > 0 && sorted[j - 1] > static_cast<unsigned>(keep[i]); --j) sorted[j] = sorted[j - 1];
    sorted[j] = static_cast<unsigned>(keep[i]);
  }
  unsigned from = 0;
  for (size_t i = 0; i < count; ++i) {
    if (sorted[i] > from) syscall(SYS_close_range, from, sorted[i] - 1, 0U);
    from = sorted[i] + 1;
  }
  syscall(SYS_close_range, from, ~0U, 0U);
}

// The run's `pids.max` counted the init, which was in the cgroup when it cloned the program: the
// limit is --pids + 1 (enforce_limits). Lowered to --pids, now that the init is about to leave.
// False (the init then stays, and leaves when the program has exited) if it could not.
bool lower_pids_limit(const GoMessage& go) {
  if (go.pids_max_fd < 0) return true;
  char text[24] = {};
  const ssize_t n = pread(go.pids_max_fd, text, sizeof text - 1, 0);
  char* end = nullptr;
  const unsigned long long limit = n > 0 ? strtoull(text, &end, 10) : 0;
  bool lowered = false;
  if (limit > 1 && end != text) {
    const int len = snprintf(text, sizeof text, "%llu", limit - 1);
    lowered = write(go.pids_max_fd, text, static_cast<size_t>(len)) == len;
  }
  close(go.pids_max_fd);
  return lowered;
}

// The program runs: the init moves itself into the parents of the run's cgroups, so they hold
// only the program's processes, are empty once those are gone, and the supervisor removes them
// while the init tears its namespaces down. Writing "0" moves the writer, which needs no
// privilege (the supervisor opened the files) and no RCU grace period. It used to happen when
// the program had exited, on the way to the end of every run; beside the program it costs
// nothing there (-0.03 to -0.08 ms per run, interleaved, bench/README.md "Session 18"). False
// if it did not move.
bool leave_cgroups(const GoMessage& go) {
  bool left = go.parent_tasks_count > 0;
  for (size_t i = 0; i < go.parent_tasks_count; ++i) {
    left = write(go.parent_tasks_fds[i], "0", 1) == 1 && left;  // a profile may deny write
    close(go.parent_tasks_fds[i]);
  }
  return left;
}

// The program has exited: ends what it left running and reaps it all, so that the init's
// report, not its exit, tells the supervisor the run is over. The init's exit tears its
// namespaces down (two RCU grace periods for the mounts and the overlay, ~0.5 ms here), and the
// supervisor finishes the run meanwhile instead of waiting for it (supervisor.hpp). Everything
// in the pid namespace descends from the init (orphans are reparented to it), so with no child
// left nothing else is; kill(-1) reaches every process of the namespace but the init, all of the
// program's user. False when that cannot be made sure of: the supervisor waits for the init's
// exit instead, which ends the rest. So when the program kept a capability or may gain one
// (without no_new_privs): with CAP_SETUID it can leave a process of another user behind, which
// kill(-1) would skip while still succeeding for the others, and the wait below would never end.
// And when a profile denied the kill (its denial report then lists the init's kill).
bool end_the_rest(const ChildPlan& plan) {
  if (waitpid(-1, nullptr, WNOHANG | __WALL) < 0 && errno == ECHILD) return true;  // the usual
  if (!plan.caps.keep.empty() || !plan.no_new_privileges) return false;
  if (kill(-1, SIGKILL) < 0 && errno != ESRCH) return false;
  while (true) {
    if (waitpid(-1, nullptr, __WALL) >= 0 || errno == EINTR) continue;
    return errno == ECHILD;
  }
}

// ChildPlan::program_done_signal: the program's word that it is done (kProgramDoneSignal,
// sandbox.hpp), its exit status as the value, reported from the handler itself: one write() of
// a message to a SOCK_SEQPACKET socket is async-signal-safe and atomic, and a report left to the
// loop below could wait for the next child's exit (a signal between its check and its waitpid).
// Taken once, from the program's process only (its pid is set once the clone returns; nothing of
// the program's sends it before that), by sigqueue only.
volatile sig_atomic_t program_pid = 0;
volatile sig_atomic_t program_done = 0;
volatile sig_atomic_t program_done_fd = -1;

void take_program_done(int, siginfo_t* info, void*) {
  if (program_done || program_pid == 0 || info->si_code != SI_QUEUE || info->si_pid != program_pid)
    return;
  program_done = 1;
  const int saved_errno = errno;
  // An exit status is 8 bits, as exit(2) takes it.
  const ChildMessage message{.kind = ChildMessage::ProgramDone,
                             .wait_status = (info->si_value.sival_int & 0xff) << 8};
  ssize_t ignored = write(program_done_fd, &message, sizeof message);
  (void)ignored;
  errno = saved_errno;
}

void catch_program_done(const ChildPlan& plan) {
  program_done_fd = plan.sync_fd;
  struct sigaction action {};
  action.sa_sigaction = take_program_done;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(kProgramDoneSignal, &action, nullptr);
}

// ChildPlan::outside_program (RunOptions::outside_program): the program is a process the caller
// makes in this pid namespace, which joins the others and confines itself. The init leaves the
// run's cgroups as if it had cloned the program (the program is put into them alone, and the
// pids limit that counted the init is lowered first), says it waits, learns the program's pid
// (for program_done_signal), and then only reaps: with SIGCHLD ignored the kernel reaps the
// children it is given (the program's orphans) by itself. The program is not its child, so the
// supervisor ends the sandbox once the program has exited, and the init with it; a hang-up of
// the sync socket (the supervisor gone) ends it too.
[[noreturn]] void await_outside_program(const ChildPlan& plan, const GoMessage& go) {
  const bool left_cgroups = lower_pids_limit(go) && leave_cgroups(go);
  close_all_but(&plan.sync_fd, 1);  // the parents' `tasks` files too: it stays if it did not leave
  signal(SIGCHLD, SIG_IGN);
  send_message(plan, ChildMessage{.kind = ChildMessage::AwaitingProgram,
                                  .left_cgroups = left_cgroups ? 1 : 0});
  pid_t program = 0;
  ssize_t n;
  while ((n = read(plan.sync_fd, &program, sizeof program)) < 0 && errno == EINTR) {
  }
  if (n != sizeof program || program <= 1) _exit(125);
  program_pid = program;
  while (true) {
    char ignored;
    const ssize_t got = read(plan.sync_fd, &ignored, sizeof ignored);
    if (got == 0 || (got < 0 && errno != EINTR)) _exit(0);
  }
}

}  // namespace

void run_program_under_init(const ChildPlan& plan, const GoMessage& go) {
  if (plan.program_done_signal) catch_program_done(plan);
  // Before the program starts: it may read /proc/1/cmdline as soon as its execve returns.
  hide_command_line();
  if (plan.outside_program) await_outside_program(plan, go);
    // CLONE_VM | CLONE_VFORK, as posix_spawn does: the program does not get a copy of the address
    // space the init inherited from the supervisor (copying its page tables only for execve to
    // throw them away), and the init sleeps until the execve. Until then the program runs
    // exec_program() on this stack of its own and touches nothing else of the init's memory.
#if defined(SANDCELL_ASAN)
  // ASan cannot follow a switch to a stack it did not make (it warns on stderr, which the
  // program's callers read): sanitizer builds fork.
  pid_t program = fork();
  if (program == 0) exec_program(plan);
#else
  alignas(64) static char program_stack[64 * 1024];
  pid_t program = clone(exec_program_entry, program_stack + sizeof program_stack,
                        CLONE_VM | CLONE_VFORK | SIGCHLD, const_cast<ChildPlan*>(&plan));
#endif
  if (program < 0) child_fail(plan, "start the program under the sandbox's init");
  program_pid = program;
  // The program started in the run's cgroups; the init leaves them (and lowers the pids limit
  // that counted it first), unless that failed: then it leaves when the program has exited.
  // It keeps only the sync socket (and then the parents' `tasks` files). The program's streams
  // end when the program ends, and the supervisor's fds the clone copied (the output pipes'
  // read ends, its epoll and pidfds) would keep those files alive, and their epoll entries with
  // them, until the init exits. The program cannot reach what the init keeps: the init is not
  // dumpable, so neither /proc/1/fd nor pidfd_getfd() lets it in.
  const bool leave_now = lower_pids_limit(go);
  bool left_cgroups = leave_now && leave_cgroups(go);
  int keep[kMaxCgroupTasksFds + 1] = {plan.sync_fd};
  if (!leave_now) memcpy(keep + 1, go.parent_tasks_fds, go.parent_tasks_count * sizeof(int));
  close_all_but(keep, leave_now ? 1 : go.parent_tasks_count + 1);
  while (true) {
    int status = 0;
    pid_t reaped = waitpid(-1, &status, 0);
    if (reaped < 0 && errno == EINTR) continue;
    if (reaped < 0) _exit(125);  // no children: cannot happen before the program is reaped
    if (reaped != program) continue;
    const bool tree_ended = end_the_rest(plan);
    if (!leave_now) left_cgroups = leave_cgroups(go);
    ChildMessage message{.kind = ChildMessage::ProgramExited,
                         .wait_status = status,
                         .left_cgroups = left_cgroups ? 1 : 0,
                         .tree_ended = tree_ended ? 1 : 0};
    if (tree_ended) getrusage(RUSAGE_CHILDREN, &message.children_usage);
    send_message(plan, message);
    _exit(0);
  }
}

// execvpe without allocation: try each PATH entry, remembering the most telling errno.
void exec_program(const ChildPlan& plan) {
  // A session of its own (the init's, or the caller's for an exec'd process, is not the
  // program's to share) with the pty on 0 as its controlling terminal: ^C, ^Z and SIGWINCH go
  // to the program's foreground group.
  if (plan.terminal) {
    if (getsid(0) != getpid() && setsid() < 0) child_fail(plan, "setsid for the terminal");
    if (ioctl(0, TIOCSCTTY, 0) < 0) child_fail(plan, "make the pty the controlling terminal");
  }
  const char* program = plan.argv[0];
  timeline::mark("exec");
  if (strchr(program, '/') != nullptr) {
    execve(program, plan.argv.data(), plan.envp.data());
    child_exec_failed(plan, errno, program);
  }
  int best = ENOENT;
  char candidate[PATH_MAX];
  const char* dir = plan.path_env.c_str();
  while (true) {
    const char* end = strchrnul(dir, ':');
    int len = static_cast<int>(end - dir);
    snprintf(candidate, sizeof candidate, "%.*s%s%s", len, dir, len ? "/" : "", program);
    execve(candidate, plan.argv.data(), plan.envp.data());
    if (errno != ENOENT && errno != ENOTDIR) best = errno;
    if (*end == '\0') break;
    dir = end + 1;
  }
  child_exec_failed(plan, best, program);
}

}  // namespace sandcell::runtime
