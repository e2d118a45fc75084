// The OCI container's init, between clone and execve: the config's namespaces, rootfs, mounts
// and devices, then the same confinement steps as `sandcell run`, then "ready" and a wait for
// `start`. No allocation (see child_plan.hpp).
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <climits>
#include <cstdio>
#include <cstring>

#include "child_container_steps.hpp"
#include "child_steps.hpp"
#include "proc_handle.hpp"

namespace sandcell::runtime {
namespace {

void set_root_propagation(const ChildPlan& plan) {
  // runc's default is rslave: host mount events still arrive, nothing flows back.
  unsigned long propagation = plan.container->rootfs_propagation;
  if (propagation == 0) propagation = MS_SLAVE | MS_REC;
  if (mount(nullptr, "/", nullptr, propagation, nullptr) < 0) child_fail(plan, "set the propagation of /");
}

void bind_container_root(const ChildPlan& plan) {
  // pivot_root needs the new root to be a mount point.
  if (mount(plan.root_dir.c_str(), plan.root_dir.c_str(), nullptr, MS_BIND | MS_REC, nullptr) < 0)
    child_fail(plan, "bind-mount root.path %s onto itself", plan.root_dir.c_str());
}

void mount_one(const ChildPlan& plan, int rootfd, const PlannedContainerMount& m) {
  const char* dst = m.destination.c_str();
  int target = open_mount_target(plan, rootfd, dst, m.bind && !m.source_is_dir);
  if (m.bind) {
    mount_at_fd(plan, m.source.c_str(), target, nullptr, m.flags & (MS_BIND | MS_REC), nullptr, dst);
    unsigned long extra = m.flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
    if (extra != 0) {
      // Flags apply to a bind mount only through a remount of the new mount, which a fresh
      // lookup reaches (the old fd still names what lies beneath).
      close(target);
      target = open_beneath(rootfd, dst, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
      if (target < 0) child_fail(plan, "reopen %s", dst);
      char path[64];
      snprintf(path, sizeof path, "/proc/self/fd/%d", target);
      if (mount(nullptr, path, nullptr, MS_BIND | MS_REMOUNT | extra, nullptr) < 0)
        child_fail(plan, "remount bind mount %s with its options", dst);
    }
  } else {
    mount_at_fd(plan, m.source.c_str(), target, m.fstype.c_str(), m.flags, m.data.c_str(), dst);
  }
  if (m.propagation != 0) {
    close(target);
    target = open_beneath(rootfd, dst, O_PATH, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
    if (target < 0) child_fail(plan, "reopen %s", dst);
    mount_at_fd(plan, nullptr, target, nullptr, m.propagation, nullptr, dst);
  }
  close(target);
  if (strcmp(dst, "/dev") == 0 || strcmp(dst, "/dev/") == 0) note_runtime_dev(plan, rootfd);
}

void apply_container_mounts(const ChildPlan& plan) {
  int rootfd = open_root(plan);
  for (const PlannedContainerMount& m : plan.container->mounts) mount_one(plan, rootfd, m);
  close(rootfd);
}

// The node we just made, by an fd that is checked to be it (a process sharing the directory may
// have swapped in a symlink or another file), and chown on that fd: never a chown by name.
void chown_made_node(const ChildPlan& plan, int dirfd, const char* name, const PlannedDevice& d) {
  int node = open_beneath(dirfd, name, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
  struct stat st{};
  if (node < 0 || fstat(node, &st) < 0) child_fail(plan, "open device %s", d.path.c_str());
  if ((st.st_mode & S_IFMT) != (d.mode & S_IFMT) ||
      ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && st.st_rdev != d.dev)) {
    errno = EPERM;
    child_fail(plan, "device %s was replaced while it was being made", d.path.c_str());
  }
  if (fchownat(node, "", d.uid, d.gid, AT_EMPTY_PATH) < 0)
    child_fail(plan, "set the owner of device %s", d.path.c_str());
  close(node);
}

void make_config_device(const ChildPlan& plan, int rootfd, const PlannedDevice& d) {
  // The parent directory, then the node in it: mknod where allowed, else the host's node.
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", d.path.c_str());
  char* slash = strrchr(dir, '/');
  *slash = '\0';
  int dirfd = dir[0] == '\0' ? dup(rootfd) : open_mount_target(plan, rootfd, dir, false);
  char dirpath[64];
  snprintf(dirpath, sizeof dirpath, "/proc/self/fd/%d", dirfd);
  int dirreal = open(dirpath, O_DIRECTORY | O_CLOEXEC);
  if (dirreal < 0) child_fail(plan, "open the directory of device %s", d.path.c_str());
  const char* name = strrchr(d.path.c_str(), '/') + 1;
  unlinkat(dirreal, name, 0);
  if (mknod_exact(dirreal, name, d.mode, d.dev) < 0) {
    if (d.host_path.empty() || (errno != EPERM && errno != EACCES)) child_fail(plan, "mknod %s", d.path.c_str());
    int made = openat(dirreal, name, O_CREAT | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (made < 0) child_fail(plan, "create %s", d.path.c_str());
    close(made);
    int target = open_beneath(dirreal, name, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
    if (target < 0) child_fail(plan, "open %s", d.path.c_str());
    mount_at_fd(plan, d.host_path.c_str(), target, nullptr, MS_BIND, nullptr, d.path.c_str());
    close(target);
  } else {
    chown_made_node(plan, dirreal, name, d);
  }
  close(dirreal);
  close(dirfd);
}

void create_container_devices(const ChildPlan& plan) {
  int rootfd = open_root(plan);
  // /dev must be the container's own directory: through a symlink (into a volume another
  // container shares, say) the nodes would be made where someone else can swap them.
  if (mkdirat(rootfd, "dev", 0755) < 0 && errno != EEXIST) child_fail(plan, "create /dev");
  int devpath = open_beneath(rootfd, "dev", O_PATH | O_DIRECTORY, RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS);
  if (devpath < 0) child_fail(plan, "open /dev in the container (it must be a directory, not a symlink)");
  char path[64];
  snprintf(path, sizeof path, "/proc/self/fd/%d", devpath);
  int devfd = open(path, O_DIRECTORY | O_CLOEXEC);
  if (devfd < 0) child_fail(plan, "open /dev in the container");
  make_device_nodes(plan, devfd);
  // The runtime-spec's default links; an image that has them already keeps its own.
  static constexpr const char* kLinks[][2] = {{"ptmx", "pts/ptmx"}, {"fd", "/proc/self/fd"},
      {"stdin", "/proc/self/fd/0"}, {"stdout", "/proc/self/fd/1"}, {"stderr", "/proc/self/fd/2"},
      {"core", "/proc/kcore"}};
  for (const auto& link : kLinks)
    if (symlinkat(link[1], devfd, link[0]) < 0 && errno != EEXIST) child_fail(plan, "symlink /dev/%s", link[0]);
  for (const PlannedDevice& d : plan.container->devices) make_config_device(plan, rootfd, d);
  close(devfd);
  close(devpath);
  close(rootfd);
}

void enter_container_root(const ChildPlan& plan) {
  if (!plan.container->no_pivot) {
    pivot_into_rootfs(plan);
    return;
  }
  // --no-pivot (a rootfs on ramfs, where pivot_root fails): move the root over / and chroot.
  if (chdir(plan.root_dir.c_str()) < 0) child_fail(plan, "chdir %s", plan.root_dir.c_str());
  if (mount(plan.root_dir.c_str(), "/", nullptr, MS_MOVE, nullptr) < 0) child_fail(plan, "move the root to /");
  if (chroot(".") < 0) child_fail(plan, "chroot into %s", plan.root_dir.c_str());
  if (chdir("/") < 0) child_fail(plan, "chdir / after chroot");
}

// Through a procfs of our own (proc_handle.hpp): the container's /proc/sys is whatever its
// mounts and symlinks made of it, and a redirected write lands in a host-global file.
void write_sysctls(const ChildPlan& plan) {
  const ContainerPlan& c = *plan.container;
  if (c.sysctl_paths.empty()) return;
  int proc = open_private_procfs();
  if (proc < 0) child_fail(plan, "linux.sysctl: open a procfs of our own");
  for (size_t i = 0; i < c.sysctl_paths.size(); ++i) {
    const char* path = c.sysctl_paths[i].c_str();
    int fd = strncmp(path, "/proc/", 6) == 0 ? open_proc_file(proc, path + 6, O_WRONLY) : -1;
    if (fd < 0) child_fail(plan, "linux.sysctl: open %s beneath procfs, without symlinks", path);
    const std::string& value = c.sysctl_values[i];
    if (write(fd, value.data(), value.size()) != static_cast<ssize_t>(value.size()))
      child_fail(plan, "linux.sysctl: write %s to %s", value.c_str(), path);
    close(fd);
  }
  close(proc);
}

void finish_root(const ChildPlan& plan) {
  if (plan.container->readonly_root &&
      mount(nullptr, "/", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY, nullptr) < 0)
    child_fail(plan, "remount root.path read-only");
}

void set_names(const ChildPlan& plan) {
  if (!plan.hostname.empty()) set_hostname(plan);
  const std::string& domain = plan.container->domainname;
  if (!domain.empty() && setdomainname(domain.data(), domain.size()) < 0)
    child_fail(plan, "setdomainname %s", domain.c_str());
}

// The credentials a fresh or joined user namespace gives us are the host's, unmapped inside
// (shown as the overflow id): become the namespace's root, now that the parent has written the
// maps (runc's init does setuid(0) in a joined one too).
void become_namespace_root(const ChildPlan& plan) {
  if (!plan.container->new_user_ns && plan.container->user_join_fd < 0) return;
  if (child_setresgid(0) < 0 || child_setresuid(0) < 0)
    child_fail(plan, "become root of the container's user namespace (are uid/gid 0 mapped?)");
}

void report_ready(const ChildPlan& plan) {
  ChildMessage ready{.kind = ChildMessage::Ready};
  if (write(plan.sync_fd, &ready, sizeof ready) != sizeof ready) _exit(125);
}

// Blocks until `start` connects and says go. The connection replaces the sync socket, so an
// exec failure is reported to `start`, which is still waiting to hear that the program runs.
void wait_for_start(const ChildPlan& plan) {
  int conn = accept4(plan.container->start_fd, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) _exit(125);
  char go = 0;
  if (read(conn, &go, 1) != 1) _exit(125);  // `start` went away: run nothing
  if (dup3(conn, plan.sync_fd, O_CLOEXEC) < 0) _exit(125);
  close(conn);
  close(plan.container->start_fd);
}

// vfork in a frame of its own: the caller's loop state cannot be clobbered by it.
__attribute__((noinline)) pid_t spawn_hook(const PlannedHook& hook, int stdin_fd) {
  pid_t pid = vfork();
  if (pid == 0) {
    dup2(stdin_fd, 0);
    execve(hook.path.c_str(), hook.argv.data(), hook.envp.data());
    _exit(127);
  }
  return pid;
}

// Waits for a hook, killing it once its timeout passes (a pidfd: poll with a deadline, no
// signal handler). Returns its wait status, -1 when it timed out, -2 without a pidfd.
int wait_hook(pid_t pid, int timeout_s) {
  bool timed_out = false;
  if (timeout_s > 0) {
    int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) return -2;
    pollfd exited{.fd = pidfd, .events = POLLIN, .revents = 0};
    int ready = 0;
    while ((ready = poll(&exited, 1, timeout_s * 1000)) < 0 && errno == EINTR) {
    }
    close(pidfd);
    if (ready == 0) timed_out = kill(pid, SIGKILL) == 0;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return timed_out ? -1 : status;
}

// Hooks the init runs (startContainer, createContainer), in the container's namespaces: vfork
// + execve (no allocation), the state on stdin. A failure is reported on the sync socket (at
// start, the connection of `start` by then).
void run_init_hooks(const ChildPlan& plan, const std::vector<PlannedHook>& hooks,
                    const char* phase) {
  for (size_t i = 0; i < hooks.size(); ++i) {
    const PlannedHook& hook = hooks[i];
    int in[2];
    if (pipe2(in, O_CLOEXEC) < 0) child_fail(plan, "pipe for hooks.%s[%zu]", phase, i);
    pid_t pid = spawn_hook(hook, in[0]);
    close(in[0]);
    if (pid < 0) child_fail(plan, "fork hooks.%s[%zu]", phase, i);
    // A hook that exits without reading its stdin must not kill the init with SIGPIPE; the
    // disposition is put back before the program's execve, which would inherit SIG_IGN.
    signal(SIGPIPE, SIG_IGN);
    ssize_t ignored = write(in[1], hook.state_json.data(), hook.state_json.size());
    (void)ignored;
    signal(SIGPIPE, SIG_DFL);
    close(in[1]);
    int status = wait_hook(pid, hook.timeout_s);
    if (status == -2) {
      kill(pid, SIGKILL);
      child_fail(plan, "pidfd_open hooks.%s[%zu], to enforce its timeout", phase, i);
    }
    if (status < 0) {
      errno = ETIMEDOUT;
      child_fail(plan, "hook hooks.%s[%zu] (%s) timed out after %ds", phase, i, hook.path.c_str(),
                 hook.timeout_s);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      errno = ECANCELED;
      child_fail(plan, "hook hooks.%s[%zu] (%s) failed with status %d", phase, i, hook.path.c_str(),
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  }
}

// The runtime-spec's moment for the create-time hooks: the environment is made (namespaces,
// cgroups, mounts, devices) and the root not yet pivoted. With prestart/createRuntime hooks the
// caller runs them now, in the runtime's namespaces, while we wait; then the createContainer
// hooks run here, in the container's namespaces, their paths resolved in the mount tree we still
// share with the runtime (a copy of it, in our mount namespace). runc's order.
void run_create_hooks(const ChildPlan& plan) {
  if (plan.container->pause_before_pivot) {
    send_message(plan, ChildMessage{.kind = ChildMessage::Prepared});
    char go = 0;
    if (read(plan.sync_fd, &go, 1) != 1) _exit(125);  // create went away: run nothing
  }
  run_init_hooks(plan, plan.container->create_hooks, "createContainer");
}

}  // namespace

[[noreturn]] void run_container_child(const ChildPlan& plan) {
  reset_signals();
  leave_callers_session(plan);    // kill(0, ...) must not reach the caller's group (conmon's, ctr's)
  install_stdio(plan);
  join_namespaces(plan);          // linux.namespaces entries with a path (the user one: the spawner)
  const GoMessage go = wait_for_go(plan);  // id maps written; with the seccomp program
  join_cgroup(plan, go);          // v1: joins with the files sent
  set_not_dumpable(plan);         // CVE-2016-9962: after the maps are written (rootless needs us dumpable)
  become_namespace_root(plan);
  if (plan.container->new_cgroup_ns) enter_cgroup_namespace(plan);
  set_root_propagation(plan);
  bind_container_root(plan);
  apply_container_mounts(plan);   // config.json "mounts", in order
  create_container_devices(plan);
  run_create_hooks(plan);         // prestart/createRuntime (the caller's), createContainer (ours)
  enter_container_root(plan);     // pivot_root, or MS_MOVE + chroot with --no-pivot
  attach_terminal(plan, true);    // process.terminal: on /dev/console (before the root is read-only), master to --console-socket
  write_sysctls(plan);            // before /proc/sys turns read-only
  mask_and_protect_paths(plan);
  finish_root(plan);              // root.readonly
  set_names(plan);
  bring_up_loopback(plan);        // a new network namespace only
  apply_rlimits(plan);
  set_process_attributes(plan);   // personality, umask
  close_fds_not_needed(plan);     // CVE-2016-9962: the caller's fds, before the credentials change
  close_inherited_fds_and_verify_cwd(plan);  // CVE-2024-21626
  const int apparmor_attr = open_apparmor_attr(plan);  // while privileged, before seccomp
  // Without no_new_privs only a task with CAP_SYS_ADMIN may install a filter: then it goes in
  // now, while privileged (as runc does), and must allow the few steps that follow.
  if (!plan.no_new_privileges) install_seccomp(plan, go);
  drop_bounding_set(plan);
  switch_user(plan);
  set_capabilities(plan);
  apply_apparmor(plan, apparmor_attr);
  set_no_new_privs(plan);
  if (plan.no_new_privileges) install_seccomp(plan, go);  // plain actions: no notify listener here
  report_ready(plan);             // `create` writes the state and exits
  wait_for_start(plan);
  run_init_hooks(plan, plan.container->start_hooks, "startContainer");
  exec_program(plan);
}

}  // namespace sandcell::runtime
