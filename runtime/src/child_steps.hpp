#pragma once
// The child-side steps, in the order child_setup.cpp runs them. Each either succeeds or calls
// child_fail(), which reports "<step>: <errno text>" to the parent and exits 125.
#include <sys/uio.h>

#include "child_plan.hpp"

namespace sandcell::runtime {

[[noreturn]] void child_fail(const ChildPlan& plan, const char* format, ...)
    __attribute__((format(printf, 2, 3)));
[[noreturn]] void child_exec_failed(const ChildPlan& plan, int err, const char* program);

// Credential changes by the raw system calls, for the calling task alone. The child is a clone
// of one thread of a process that may have others (an agent's server runs sandboxes beside its
// other threads). glibc's set*id() and setgroups() apply a change to every thread glibc knows
// of (nptl "setxid"): in the child those are copies of the parent's bookkeeping, and for a
// thread that was still starting when the clone happened glibc waits for it to finish starting,
// which in the child never happens: the run hung until its wall timeout. Each returns 0, or -1
// with errno set.
int child_setgroups(size_t count, const gid_t* groups);
int child_setresgid(gid_t gid);  // real, effective and saved
int child_setresuid(uid_t uid);

// child_userns.cpp (--userns=auto, and the rootless sandbox's own user namespace; each step
// does nothing without them)
struct IdmappedLayers {
  int fds[kMaxIdmappedLayers];
  size_t count = 0;
};
// Until the parent has written our uid_map and gid_map, every id is unmapped and mounts, chown
// and setuid fail. --userns=auto also receives the idmapped layers with the go-ahead.
IdmappedLayers wait_for_id_maps(const ChildPlan& plan);
void switch_to_namespace_root(const ChildPlan& plan);
void attach_idmapped_layers(const ChildPlan& plan, const IdmappedLayers& layers);
// BindMount::late: their detached clones, in the plan's order, sent by send_late_binds once the
// caller has made their sources.
struct LateBinds {
  int fds[kMaxLateBinds];
  size_t count = 0;
};
LateBinds wait_for_late_binds(const ChildPlan& plan);

// child_mounts.cpp
void make_mounts_private(const ChildPlan& plan);
void mount_scratch(const ChildPlan& plan);
void mount_rootfs(const ChildPlan& plan);
void apply_declared_mounts(const ChildPlan& plan, const LateBinds& late);
void mount_proc_dev_sys(const ChildPlan& plan);
void pivot_into_rootfs(const ChildPlan& plan);
void mask_and_protect_paths(const ChildPlan& plan);
// Spec::rootfs_read_only: after every step that makes files or mount points in the root
// (the working directory included).
void make_root_read_only(const ChildPlan& plan);

// child_mounts.cpp, shared with the container checklist
int open_beneath(int dirfd, const char* path, int flags, unsigned long long resolve);
// Refuses a target an image symlink steered onto procfs, sysfs, devpts, mqueue or the runtime's
// /dev (see child_mounts.cpp, refuse_special_target).
int open_mount_target(const ChildPlan& plan, int rootfd, const char* path, bool as_file);
// After the container's /dev is mounted: remember its device, so a later mount that a symlink
// steers into it is refused.
void note_runtime_dev(const ChildPlan& plan, int rootfd);
void mount_at_fd(const ChildPlan& plan, const char* source, int target_fd, const char* fstype,
                 unsigned long flags, const char* data, const char* what);
void remount_read_only(const ChildPlan& plan, int target_fd, unsigned long extra, const char* what);
int open_root(const ChildPlan& plan);
void make_device_nodes(const ChildPlan& plan, int devfd);  // null zero full random urandom tty
// mknodat with the umask at 0 for the call, so no chmod by name is needed after it.
int mknod_exact(int dirfd, const char* name, mode_t mode, dev_t dev);

// One file per concern: child_process.cpp (signals, parent death, dumpable),
// child_supervisor_channel.cpp ("go", fds to and from the supervisor), child_network.cpp,
// child_resources.cpp (CPU mask, cgroup, rlimits), child_fds.cpp, child_credentials.cpp,
// child_confinement.cpp (LSM, seccomp), child_init.cpp (the init and exec).
void reset_signals();
void leave_callers_session(const ChildPlan& plan);  // setsid: kill(0) cannot reach the caller
void restore_cpu_mask(const ChildPlan& plan);  // ChildPlan::cpus, when the supervisor pinned
void install_stdio(const ChildPlan& plan);
// ChildPlan::terminal: a pty of the sandbox's own devpts (mounted and pivoted into) as 0, 1, 2;
// the master goes to the supervisor and is closed here, before anything of the program runs.
void open_terminal(const ChildPlan& plan);
// A new pty from the multiplexer at `ptmx` (the sandbox's devpts): unlocked, its peer opened by
// TIOCGPTPEER (no path lookup under /dev/pts the program could have replaced). Both O_CLOEXEC.
struct PtyPair {
  int master = -1;
  int slave = -1;
};
PtyPair open_pty_pair(const ChildPlan& plan, const char* ptmx);
// One message of the supervisor's on the sync socket, with up to `max` fds (SCM_RIGHTS) into
// `fds`; returns how many came. Exits 125 if the supervisor is gone; fails the child with `what`
// on an error or when more fds came than `max`.
// `extra`: more of the message is read into these buffers (scatter), and `*extra_bytes` says how
// many bytes landed there. `tag`: where to put the message's first byte, if wanted.
size_t receive_from_supervisor(const ChildPlan& plan, int* fds, size_t max, const char* what,
                               const iovec* extra = nullptr, size_t extra_count = 0,
                               size_t* extra_bytes = nullptr, char* tag = nullptr);
// The supervisor's go-ahead, and what came with it.
struct GoMessage {
  int cgroup_tasks_fds[kMaxCgroupTasksFds];
  size_t cgroup_tasks_count = 0;
  // kGoAndLeaveTag: the parents' `tasks` files, one per joined hierarchy, for the init to leave.
  int parent_tasks_fds[kMaxCgroupTasksFds];
  size_t parent_tasks_count = 0;
  // kGoLeaveAndLimitTag: the run's `pids.max` (read and write), set one above --pids for the
  // init; the init lowers it to --pids before it leaves. -1 when none came.
  int pids_max_fd = -1;
  // The seccomp program (Spec::seccomp), in a static buffer of the child's: null when none came
  // (unconfined).
  const SeccompHeader* seccomp = nullptr;
  const sock_filter* seccomp_filter = nullptr;
};
GoMessage wait_for_go(const ChildPlan& plan);
// v1: writes "0" into each `tasks` file that came with "go" (and closes it).
void join_cgroup(const ChildPlan& plan, const GoMessage& go);
void enter_cgroup_namespace(const ChildPlan& plan);
void set_hostname(const ChildPlan& plan);
// unshare_network only. True: it entered a namespace of the pool (netns_pool.hpp), whose lo is up.
bool enter_network_namespace(const ChildPlan& plan);
void bring_up_loopback(const ChildPlan& plan);
// `lo` up in the calling task's network namespace (also the pool's helper, netns_pool.cpp);
// false with errno set when that failed.
bool set_loopback_up();
void open_proxy_listener(const ChildPlan& plan);
void apply_rlimits(const ChildPlan& plan);
void close_inherited_fds_and_verify_cwd(const ChildPlan& plan);
// CVE-2016-9962: a process that enters a running container holds whatever its caller had open
// (a host directory, the host's pid namespace, the sync sockets), and once its credentials are
// the container's a process in there may take them from /proc/<pid>/fd. So before they change,
// every fd but 0-2, the preserved ones (--preserve-fds), the sync socket and `start`'s listener
// is closed (not only CLOEXEC), and the process is not dumpable until its execve.
void close_fds_not_needed(const ChildPlan& plan);
void drop_bounding_set(const ChildPlan& plan);
void switch_user(const ChildPlan& plan);
void set_capabilities(const ChildPlan& plan);
void die_with_supervisor(const ChildPlan& plan);
// AppArmor's attr/exec is written through a procfs of our own (proc_handle.hpp). Making one needs
// CAP_SYS_ADMIN and fsopen/open_tree, which the default seccomp profile denies, so the handle is
// opened while privileged and used after the credentials change. -1 when no profile is asked for.
int open_apparmor_attr(const ChildPlan& plan);
void apply_apparmor(const ChildPlan& plan, int thread_self);
void set_no_new_privs(const ChildPlan& plan);
void apply_landlock(const ChildPlan& plan);
// The program that came with "go", if one did.
void install_seccomp(const ChildPlan& plan, const GoMessage& go);
// Sends `fd` with a message of `kind` over the sync socket (SCM_RIGHTS); the caller closes its
// copy.
void send_fd_to_parent(const ChildPlan& plan, ChildMessage::Kind kind, int fd, const char* what);
[[noreturn]] void exec_program(const ChildPlan& plan);
// The init is a fork of sandcell: not dumpable, the program (same uid) cannot ptrace it, open
// its /proc/1/exe (CVE-2019-5736), environ or namespaces.
void set_not_dumpable(const ChildPlan& plan);
// Writes one message to the supervisor; best effort (nobody is left to tell if it is gone).
void send_message(const ChildPlan& plan, const ChildMessage& message);
// Starts the program as a child (pid 2) that execs it, and stays behind as the sandbox's pid 1:
// reaps, reports the program's status, exits. Never returns.
[[noreturn]] void run_program_under_init(const ChildPlan& plan, const GoMessage& go);

}  // namespace sandcell::runtime
