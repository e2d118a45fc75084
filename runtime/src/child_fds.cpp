// Child-side fd steps: stdio, the working directory (created as Docker does, and verified to be
// inside the root: CVE-2024-21626), closing every fd the program must not inherit. No
// allocation (see child_plan.hpp).
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#include "child_steps.hpp"

namespace sandcell::runtime {

void install_stdio(const ChildPlan& plan) {
  int in = plan.stdin_fd >= 0 ? plan.stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0) child_fail(plan, "open /dev/null for stdin");
  if (dup2(in, 0) < 0 || dup2(plan.stdout_fd, 1) < 0 || dup2(plan.stderr_fd, 2) < 0)
    child_fail(plan, "dup2 stdio");
}

PtyPair open_pty_pair(const ChildPlan& plan, const char* ptmx) {
  PtyPair pty;
  pty.master = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty.master < 0) child_fail(plan, "open the pty multiplexer for the program's terminal");
  int unlock = 0;
  if (ioctl(pty.master, TIOCSPTLCK, &unlock) < 0) child_fail(plan, "unlock the pty");
  pty.slave = ioctl(pty.master, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (pty.slave < 0) child_fail(plan, "open the pty's peer");
  return pty;
}

void open_terminal(const ChildPlan& plan) {
  if (!plan.terminal) return;
  // The new instance mount_proc_dev_sys made (newinstance, ptmxmode=0666): the pty is the
  // sandbox's own, not one of the host's devpts, and ttyname() finds it under /dev/pts.
  const auto [master, slave] = open_pty_pair(plan, "/dev/pts/ptmx");
  if (fchown(slave, plan.uid, plan.gid) < 0) child_fail(plan, "chown the pty to the program's user");
  send_fd_to_parent(plan, ChildMessage::Terminal, master, "the pty master");
  close(master);
  if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0) child_fail(plan, "dup2 the pty");
  close(slave);
}

// As Docker does for WORKDIR: a missing working directory is created (in the overlay, so the
// rootfs is untouched), owned by the user the program runs as.
int create_working_directory(const ChildPlan& plan) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", plan.cwd.c_str());
  for (char* slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
    if (slash != nullptr) *slash = '\0';
    if (mkdir(path, 0755) == 0) {
      // By an fd of the directory just made, never by name: the name may be a symlink by now.
      int dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (dir < 0) return -1;
      int owned = fchown(dir, plan.uid, plan.gid);
      close(dir);
      if (owned < 0) return -1;
    } else if (errno != EEXIST) {
      return -1;
    }
    if (slash == nullptr) return 0;
    *slash = '/';
  }
}

void close_inherited_fds_and_verify_cwd(const ChildPlan& plan) {
  // Only 0-2 may reach the program. CLOEXEC rather than close keeps the sync socket usable to
  // report an execve failure; execve closes the rest.
  // OCI --preserve-fds: 3 .. 3+N-1 are the program's too.
  unsigned first = 3 + static_cast<unsigned>(plan.container ? plan.container->preserve_fds : 0);
  for (unsigned fd = 3; fd < first; ++fd)
    if (fcntl(static_cast<int>(fd), F_SETFD, 0) < 0) child_fail(plan, "keep preserved fd %u", fd);
  if (syscall(SYS_close_range, first, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
    child_fail(plan, "close_range");
  if (chdir(plan.cwd.c_str()) < 0 &&
      (errno != ENOENT || !plan.make_missing_cwd || create_working_directory(plan) < 0 ||
       chdir(plan.cwd.c_str()) < 0))
    child_fail(plan, "chdir to the working directory %s", plan.cwd.c_str());
  // CVE-2024-21626: a cwd reached through a leaked host fd would lie outside the root, and
  // getcwd() then reports it as "(unreachable)/...". Ours must be a path under "/".
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof cwd) == nullptr || cwd[0] != '/') {
    errno = EPERM;
    child_fail(plan, "working directory %s is outside the sandbox root", plan.cwd.c_str());
  }
}

void close_fds_not_needed(const ChildPlan& plan) {
  const ContainerPlan* c = plan.container.get();
  unsigned first = 3 + static_cast<unsigned>(c ? c->preserve_fds : 0);
  unsigned keep[2] = {static_cast<unsigned>(plan.sync_fd),
                      static_cast<unsigned>(c && c->start_fd >= 0 ? c->start_fd : plan.sync_fd)};
  if (keep[0] > keep[1]) std::swap(keep[0], keep[1]);
  for (unsigned kept : keep) {
    if (kept > first) syscall(SYS_close_range, first, kept - 1, 0U);
    first = kept + 1 > first ? kept + 1 : first;
  }
  if (syscall(SYS_close_range, first, ~0U, 0U) < 0) child_fail(plan, "close_range");
}

}  // namespace sandcell::runtime
