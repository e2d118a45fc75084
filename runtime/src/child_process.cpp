// Child-side steps on the process itself: signal dispositions, dying with the supervisor, not
// dumpable. The other steps are in child_*.cpp, one file per concern. No allocation (see
// child_plan.hpp).
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>

#include "child_steps.hpp"

namespace sandcell::runtime {

void reset_signals() {
  // The supervisor blocks SIGINT/SIGTERM/SIGCHLD for its signalfd, and both the mask and
  // ignored dispositions survive execve: give the program a clean slate. By the system call:
  // glibc's signal() refuses the two signals it keeps for itself (32 and 33), and its
  // posix_spawn leaves them ignored in the process it starts (a server's runner, a test's
  // sandcell), which the program would inherit.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct {
    void (*handler)(int);
    unsigned long flags;
    void (*restorer)();
    uint64_t mask;
  } defaults{SIG_DFL, 0, nullptr, 0};  // the kernel's struct sigaction
  for (int sig = 1; sig < NSIG; ++sig)
    if (sig != SIGKILL && sig != SIGSTOP)
      syscall(SYS_rt_sigaction, sig, &defaults, nullptr, sizeof defaults.mask);
}

void leave_callers_session(const ChildPlan& plan) {
  // The caller (sandcell, the API server, conmon) is not in the sandbox's pid namespace, but a
  // process group spans namespaces: kill(0, SIGKILL), or kill(-pgid), by a sandboxed process of
  // the caller's uid (rootless; root with --userns host) would reach every member of the
  // caller's group. A session of its own leaves it a group of its own, as runc's init does.
  if (setsid() < 0) child_fail(plan, "setsid");
}

void die_with_supervisor(const ChildPlan& plan) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_PDEATHSIG)");
  // If the supervisor died before the line above, the signal will never come; its end of the
  // sync socket is closed then, so check for the hang-up.
  pollfd hangup{.fd = plan.sync_fd, .events = POLLRDHUP, .revents = 0};
  if (poll(&hangup, 1, 0) > 0 && (hangup.revents & (POLLHUP | POLLRDHUP))) _exit(125);
}

void set_not_dumpable(const ChildPlan& plan) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_DUMPABLE, 0)");
}

}  // namespace sandcell::runtime
