// Child-side steps of OCI containers shared by the init and exec'd processes, and the exec
// checklist itself. No allocation (see child_plan.hpp).
#include "child_container_steps.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "child_steps.hpp"
#include "sandcell/runtime/fd_passing.hpp"

namespace sandcell::runtime {
namespace {

struct PtyName {
  char path[32];
  size_t length;
};

PtyName pty_name(int master) {
  PtyName name{};
  unsigned int number = 0;
  ioctl(master, TIOCGPTN, &number);
  name.length = static_cast<size_t>(snprintf(name.path, sizeof name.path, "/dev/pts/%u", number));
  return name;
}

void send_console(const ChildPlan& plan, int master) {
  PtyName name = pty_name(master);
  iovec data{.iov_base = name.path, .iov_len = name.length};
  if (send_with_fds(plan.container->console_fd, {&data, 1}, {&master, 1}) < 0)
    child_fail(plan, "send the pty master to --console-socket");
}

// The pty bind-mounted on /dev/console, made as an empty file where the rootfs has none (as
// runc). Inside the container's root already, so a link could only lead elsewhere inside it;
// a /dev/console that is a link or a directory is refused all the same.
void mount_console(const ChildPlan& plan, int master) {
  struct stat st {};
  if (lstat("/dev/console", &st) < 0) {
    if (errno != ENOENT) child_fail(plan, "stat /dev/console");
    int made = open("/dev/console", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
    if (made < 0) child_fail(plan, "create /dev/console for the terminal");
    close(made);
  } else if (!S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode)) {
    errno = EINVAL;
    child_fail(plan, "/dev/console is neither a file nor a device (a link or a directory), cannot mount the terminal on it");
  }
  const PtyName name = pty_name(master);
  if (mount(name.path, "/dev/console", nullptr, MS_BIND, nullptr) < 0)
    child_fail(plan, "bind the terminal %s on /dev/console", name.path);
}

}  // namespace

void join_namespaces(const ChildPlan& plan) {
  for (const ContainerPlan::Join& join : plan.container->joins) {
    if (setns(join.fd, join.nstype) < 0) child_fail(plan, "setns into namespace fd %d (type 0x%x)", join.fd, join.nstype);
    close(join.fd);
  }
}

void set_process_attributes(const ChildPlan& plan) {
  const ContainerPlan& c = *plan.container;
  if (c.personality >= 0 && personality(static_cast<unsigned long>(c.personality)) < 0)
    child_fail(plan, "linux.personality %ld", c.personality);
  if (c.umask >= 0) umask(static_cast<mode_t>(c.umask));
}

void attach_terminal(const ChildPlan& plan, bool console) {
  const ContainerPlan& c = *plan.container;
  if (!c.terminal) return;
  if (c.console_fd < 0) {
    errno = EINVAL;
    child_fail(plan, "process.terminal is true but no --console-socket was given");
  }
  const auto [master, slave] = open_pty_pair(plan, "/dev/ptmx");
  if (c.rows > 0 || c.columns > 0) {
    winsize size{.ws_row = c.rows, .ws_col = c.columns, .ws_xpixel = 0, .ws_ypixel = 0};
    if (ioctl(slave, TIOCSWINSZ, &size) < 0) child_fail(plan, "process.consoleSize");
  }
  if (fchown(slave, plan.uid, plan.gid) < 0) child_fail(plan, "chown the pty to the process user");
  if (console) mount_console(plan, master);
  send_console(plan, master);
  close(master);
  close(c.console_fd);
  // A session leader already (leave_callers_session), without a controlling terminal.
  if (ioctl(slave, TIOCSCTTY, 0) < 0) child_fail(plan, "make the pty the controlling terminal");
  if (dup2(slave, 0) < 0 || dup2(slave, 1) < 0 || dup2(slave, 2) < 0) child_fail(plan, "dup2 the pty");
  close(slave);
}

// An exec'd process: the init's namespaces (the pid namespace was joined by the parent before
// fork, as setns(CLONE_NEWPID) only takes effect for children), its cgroups, then the same
// confinement as the init.
[[noreturn]] void run_exec_child(const ChildPlan& plan) {
  set_not_dumpable(plan);         // CVE-2016-9962: no /proc/<pid>/fd for the container; execve resets it
  reset_signals();
  leave_callers_session(plan);    // kill(0, ...) must not reach the caller's group
  install_stdio(plan);
  join_namespaces(plan);
  const GoMessage go = wait_for_go(plan);  // with the seccomp program
  join_cgroup(plan, go);          // the container's cgroups (v1: the files sent)
  apply_rlimits(plan);
  set_process_attributes(plan);
  attach_terminal(plan, false);
  close_fds_not_needed(plan);     // the caller's fds, before the credentials change
  close_inherited_fds_and_verify_cwd(plan);
  const int apparmor_attr = open_apparmor_attr(plan);  // while privileged, before seccomp
  // Without no_new_privs only a task with CAP_SYS_ADMIN may install a filter: then it goes in
  // now, while privileged (as runc does), and must allow the few steps that follow.
  if (!plan.no_new_privileges) install_seccomp(plan, go);
  drop_bounding_set(plan);
  switch_user(plan);
  set_capabilities(plan);
  apply_apparmor(plan, apparmor_attr);
  set_no_new_privs(plan);
  if (plan.no_new_privileges) install_seccomp(plan, go);
  exec_program(plan);
}

}  // namespace sandcell::runtime
