// Child-side process steps: stdio, the go signal, hostname, loopback, the proxy listener, rlimits,
// fds and cwd, user, capabilities, no_new_privs, seccomp, exec. No allocation (see child_plan.hpp).
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "child_steps.hpp"
#include "fd_passing.hpp"
#include "proc_handle.hpp"
#include "sandcell/apparmor/profile.hpp"

namespace sandcell::runtime {

int child_setgroups(size_t count, const gid_t* groups) {
  return static_cast<int>(syscall(SYS_setgroups, count, groups));
}

int child_setresgid(gid_t gid) {
  return static_cast<int>(syscall(SYS_setresgid, gid, gid, gid));
}

int child_setresuid(uid_t uid) {
  return static_cast<int>(syscall(SYS_setresuid, uid, uid, uid));
}

void reset_signals() {
  // The supervisor blocks SIGINT/SIGTERM/SIGCHLD for its signalfd, and both the mask and
  // ignored dispositions survive execve: give the program a clean slate.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig = 1; sig < NSIG; ++sig) signal(sig, SIG_DFL);
}

void restore_cpu_mask(const ChildPlan& plan) {
  if (plan.restore_cpus && sched_setaffinity(0, sizeof plan.cpus, &plan.cpus) < 0)
    child_fail(plan, "restore sandcell's CPU affinity");
}

size_t receive_from_supervisor(const ChildPlan& plan, int* fds, size_t max, const char* what,
                               const iovec* extra, size_t extra_count, size_t* extra_bytes,
                               char* tag) {
  char first = 0;
  iovec data[4] = {{.iov_base = tag != nullptr ? tag : &first, .iov_len = 1}};
  if (extra_count > 3) {
    errno = EINVAL;
    child_fail(plan, "%s (too many buffers)", what);
  }
  for (size_t i = 0; i < extra_count; ++i) data[i + 1] = extra[i];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxIdmappedLayers)];
  static_assert(2 * kMaxCgroupTasksFds + 1 <= kMaxIdmappedLayers,
                "the control buffer fits the larger");
  msghdr header{};
  header.msg_iov = data;
  header.msg_iovlen = 1 + extra_count;
  header.msg_control = control;
  header.msg_controllen = CMSG_SPACE(sizeof(int) * max);
  ssize_t n = recvmsg(plan.sync_fd, &header, MSG_CMSG_CLOEXEC);
  if (n == 0) _exit(125);  // the supervisor is gone: run nothing
  if (n < 0) child_fail(plan, "%s", what);
  if (header.msg_flags & MSG_TRUNC) {
    errno = EMSGSIZE;
    child_fail(plan, "%s (longer than expected)", what);
  }
  if (extra_bytes != nullptr) *extra_bytes = static_cast<size_t>(n) - 1;
  size_t count = 0;
  cmsghdr* sent = CMSG_FIRSTHDR(&header);
  if (sent != nullptr && sent->cmsg_level == SOL_SOCKET && sent->cmsg_type == SCM_RIGHTS) {
    count = (sent->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(fds, CMSG_DATA(sent), count * sizeof(int));
  }
  if (header.msg_flags & MSG_CTRUNC) {
    errno = EPROTO;
    child_fail(plan, "%s (more files than expected)", what);
  }
  return count;
}

GoMessage wait_for_go(const ChildPlan& plan) {
  // Static, not on the stack: 32 KB the child touches only as far as a program fills it.
  static LateSeccompHeader late;
  static sock_filter filter[BPF_MAXINSNS];
  const iovec extra[] = {{.iov_base = &late, .iov_len = sizeof late},
                         {.iov_base = filter, .iov_len = sizeof filter}};
  size_t extra_bytes = 0;
  char tag = kGoTag;
  int fds[2 * kMaxCgroupTasksFds + 1];
  size_t count = receive_from_supervisor(plan, fds, 2 * kMaxCgroupTasksFds + 1,
                                         "wait for the go-ahead", extra, 2, &extra_bytes, &tag);
  GoMessage go;
  // kGoLeaveAndLimitTag: `pids.max` last.
  if (tag == kGoLeaveAndLimitTag && count > 0) go.pids_max_fd = fds[--count];
  // kGoAndLeaveTag (and kGoLeaveAndLimitTag): as many parents' `tasks` files as the ones to
  // join, after them.
  const size_t leave = tag == kGoAndLeaveTag || tag == kGoLeaveAndLimitTag ? count / 2 : 0;
  if ((leave > 0 && count % 2 != 0) || count - leave > kMaxCgroupTasksFds ||
      (tag == kGoLeaveAndLimitTag && (leave == 0 || go.pids_max_fd < 0))) {
    errno = EPROTO;
    child_fail(plan, "receive the cgroup files (%zu)", count);
  }
  go.cgroup_tasks_count = count - leave;
  memcpy(go.cgroup_tasks_fds, fds, go.cgroup_tasks_count * sizeof(int));
  go.parent_tasks_count = leave;
  memcpy(go.parent_tasks_fds, fds + go.cgroup_tasks_count, leave * sizeof(int));
  if (extra_bytes == 0) return go;
  if (extra_bytes < sizeof late || late.count > BPF_MAXINSNS ||
      extra_bytes != sizeof late + late.count * sizeof(sock_filter)) {
    errno = EPROTO;
    child_fail(plan, "receive the seccomp program (%zu bytes)", extra_bytes);
  }
  go.late_seccomp = &late;
  go.late_seccomp_filter = filter;
  return go;
}

void enter_cgroup_namespace(const ChildPlan& plan) {
  if (unshare(CLONE_NEWCGROUP) < 0) child_fail(plan, "unshare(CLONE_NEWCGROUP)");
}

void install_stdio(const ChildPlan& plan) {
  int in = plan.stdin_fd >= 0 ? plan.stdin_fd : open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (in < 0) child_fail(plan, "open /dev/null for stdin");
  if (dup2(in, 0) < 0 || dup2(plan.stdout_fd, 1) < 0 || dup2(plan.stderr_fd, 2) < 0)
    child_fail(plan, "dup2 stdio");
}

// v1: "0" in a `tasks` file moves the writing thread; we are the only thread, so the whole
// process moves, and the kernel skips the grace period a write of another pid waits for.
void join_cgroup(const ChildPlan& plan, const GoMessage& go) {
  for (size_t i = 0; i < go.cgroup_tasks_count; ++i) {
    if (write(go.cgroup_tasks_fds[i], "0", 1) != 1) child_fail(plan, "join the sandbox's cgroup");
    close(go.cgroup_tasks_fds[i]);
  }
}

void set_hostname(const ChildPlan& plan) {
  if (sethostname(plan.hostname.data(), plan.hostname.size()) < 0)
    child_fail(plan, "sethostname %s", plan.hostname.c_str());
}

bool enter_network_namespace(const ChildPlan& plan) {
  if (!plan.unshare_network) return false;
  if (plan.pooled_netns_fd >= 0) {
    // The supervisor checked it is a network namespace; if entering fails all the same, the
    // child's own is as good, only slower.
    bool entered = setns(plan.pooled_netns_fd, CLONE_NEWNET) == 0;
    close(plan.pooled_netns_fd);
    if (entered) return true;
  }
  if (unshare(CLONE_NEWNET) < 0)
    child_fail(plan, "unshare(CLONE_NEWNET) for the sandbox's network namespace");
  return false;
}

bool set_loopback_up() {
  // A new network namespace has only `lo`, and it starts down.
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return false;
  ifreq request{};
  snprintf(request.ifr_name, sizeof request.ifr_name, "lo");
  request.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  bool up = ioctl(sock, SIOCSIFFLAGS, &request) == 0;
  int saved = errno;
  close(sock);
  errno = saved;
  return up;
}

void bring_up_loopback(const ChildPlan& plan) {
  if (plan.host_network) return;  // the host's lo is already up, and not ours to touch
  if (!set_loopback_up()) child_fail(plan, "bring up lo");
}

// Socket transport (`--net allow:`): a socket belongs to the netns it was made in, so a listener
// made here and accepted on by the supervisor's proxy is the sandbox's only way out, with no
// link and no route. The program cannot take the port over: the socket holds it (no
// SO_REUSEPORT), and the child's own copy is closed before anything of the program runs.
void open_proxy_listener(const ChildPlan& plan) {
  if (plan.proxy_listener_port == 0) return;
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) child_fail(plan, "socket for the proxy listener");
  sockaddr_in address{.sin_family = AF_INET,
                      .sin_port = htons(plan.proxy_listener_port),
                      .sin_addr = {htonl(INADDR_LOOPBACK)},
                      .sin_zero = {}};
  if (bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) < 0)
    child_fail(plan, "bind the proxy listener to 127.0.0.1:%u", plan.proxy_listener_port);
  if (listen(sock, 128) < 0) child_fail(plan, "listen on 127.0.0.1:%u", plan.proxy_listener_port);
  send_fd_to_parent(plan, ChildMessage::ProxyListener, sock, "the proxy listener");
  close(sock);
}

void apply_rlimits(const ChildPlan& plan) {
  for (size_t i = 0; i < plan.rlimits.size(); ++i) {
    const Rlimit& limit = plan.rlimits[i];
    rlimit wanted{.rlim_cur = limit.soft, .rlim_max = limit.hard};
    if (plan.container) {
      // OCI: exactly what config.json asks. Raising a hard limit needs CAP_SYS_RESOURCE in the
      // host's user namespace; say which limit it was (podman's defaults trip over this).
      if (setrlimit(limit.resource, &wanted) < 0)
        child_fail(
            plan,
            "process.rlimits: setrlimit %s soft=%llu hard=%llu (above the current hard limit "
            "without CAP_SYS_RESOURCE?)",
            plan.container->rlimit_names[i].c_str(), static_cast<unsigned long long>(limit.soft),
            static_cast<unsigned long long>(limit.hard));
      continue;
    }
    // Never ask for more than the current hard limit: without CAP_SYS_RESOURCE in the host's
    // user namespace raising it fails, and lowering is all a sandbox needs.
    rlimit current{};
    if (getrlimit(limit.resource, &current) < 0) child_fail(plan, "getrlimit %d", limit.resource);
    if (wanted.rlim_max > current.rlim_max) wanted.rlim_max = current.rlim_max;
    if (wanted.rlim_cur > wanted.rlim_max) wanted.rlim_cur = wanted.rlim_max;
    if (setrlimit(limit.resource, &wanted) < 0) child_fail(plan, "setrlimit %d", limit.resource);
  }
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
      (errno != ENOENT || create_working_directory(plan) < 0 || chdir(plan.cwd.c_str()) < 0))
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

void drop_bounding_set(const ChildPlan& plan) {
  for (cap_value_t cap : plan.caps.drop_from_bounding)
    if (cap_drop_bound(cap) < 0 && errno != EINVAL)
      child_fail(plan, "drop capability %d from the bounding set", cap);
}

void switch_user(const ChildPlan& plan) {
  // KEEPCAPS: a requested capability must survive the switch away from uid 0.
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_KEEPCAPS)");
  // Single-id rootless: setgroups is denied for good (user_namespaces(7)); there are no groups
  // to set (make_child_plan refused any), and the inherited ones cannot be dropped.
  if (!plan.setgroups_denied && child_setgroups(plan.groups.size(), plan.groups.data()) < 0)
    child_fail(plan, "setgroups");
  if (child_setresgid(plan.gid) < 0) child_fail(plan, "setresgid %u", plan.gid);
  if (child_setresuid(plan.uid) < 0) child_fail(plan, "setresuid %u", plan.uid);
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_KEEPCAPS, 0)");
}

void set_capabilities(const ChildPlan& plan) {
  if (cap_set_proc(plan.caps.final_state.get()) < 0) child_fail(plan, "set capabilities");
  // One prctl. libcap's cap_reset_ambient() first asks PR_CAP_AMBIENT_IS_SET of every
  // capability until one is set: 42 system calls on the way of every run when none is.
  // EINVAL: a kernel without ambient capabilities (< 4.3), so none to clear.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    child_fail(plan, "clear ambient capabilities");
  // Root keeps its bounding set across execve; any other uid only keeps ambient capabilities.
  if (plan.uid == 0 && !plan.container) return;
  for (cap_value_t cap : plan.caps.keep)
    // OCI, as runc: an ambient capability that is not also inheritable and permitted cannot be
    // raised; that is the config's inconsistency, not a reason to refuse the container.
    if (cap_set_ambient(cap, CAP_SET) < 0 && !(plan.container && errno == EPERM))
      child_fail(plan, "raise ambient capability %d", cap);
}

void die_with_supervisor(const ChildPlan& plan) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_PDEATHSIG)");
  // If the supervisor died before the line above, the signal will never come; its end of the
  // sync socket is closed then, so check for the hang-up.
  pollfd hangup{.fd = plan.sync_fd, .events = POLLRDHUP, .revents = 0};
  if (poll(&hangup, 1, 0) > 0 && (hangup.revents & (POLLHUP | POLLRDHUP))) _exit(125);
}

void set_no_new_privs(const ChildPlan& plan) {
  if (!plan.no_new_privileges) return;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_NO_NEW_PRIVS)");
}

void apply_apparmor(const ChildPlan& plan) {
  if (plan.apparmor_profile.empty()) return;
  int proc = open_private_procfs();
  if (proc < 0) child_fail(plan, "open a procfs of our own for AppArmor's attr/exec");
  int thread_self = open_proc_thread_self(proc);
  if (thread_self < 0) child_fail(plan, "open thread-self in our procfs");
  if (apparmor::change_onexec(plan.apparmor_profile.c_str(), thread_self) < 0)
    child_fail(plan, "apply AppArmor profile %s", plan.apparmor_profile.c_str());
  close(thread_self);
  close(proc);
}

void apply_landlock(const ChildPlan& plan) {
  const char* step = nullptr;
  if (apparmor::restrict_with_landlock(plan.landlock, &step) < 0) child_fail(plan, "%s", step);
}

void install_seccomp(const ChildPlan& plan, const GoMessage& go) {
  sock_fprog program{};
  unsigned int flags = 0;
  const char* name = nullptr;
  if (go.late_seccomp != nullptr) {
    program.len = static_cast<unsigned short>(go.late_seccomp->count);
    program.filter = const_cast<sock_filter*>(go.late_seccomp_filter);
    flags = go.late_seccomp->flags;
    name = go.late_seccomp->name;
  } else if (plan.seccomp != nullptr) {
    program.len = static_cast<unsigned short>(plan.seccomp->instructions.size());
    program.filter = const_cast<sock_filter*>(plan.seccomp->instructions.data());
    flags = plan.seccomp->flags;
    name = plan.seccomp->name.c_str();
  } else {
    return;
  }
  long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
  if (listener < 0) child_fail(plan, "install seccomp filter %s", name);
  if (!(flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)) return;
  // The supervisor answers the filter's notifications; the program must never hold the
  // listener itself (it could approve its own denied calls), so it is closed right after.
  send_fd_to_parent(plan, ChildMessage::SeccompListener, static_cast<int>(listener),
                    "the seccomp listener");
  close(static_cast<int>(listener));
}

void send_fd_to_parent(const ChildPlan& plan, ChildMessage::Kind kind, int fd, const char* what) {
  ChildMessage message{.kind = kind};
  iovec data{.iov_base = &message, .iov_len = sizeof message};
  if (send_with_fds(plan.sync_fd, {&data, 1}, {&fd, 1}) < 0) child_fail(plan, "send %s", what);
}

void set_not_dumpable(const ChildPlan& plan) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_DUMPABLE, 0)");
}

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

#if !defined(__SANITIZE_ADDRESS__)
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

}  // namespace

void run_program_under_init(const ChildPlan& plan, const GoMessage& go) {
  // Before the program starts: it may read /proc/1/cmdline as soon as its execve returns.
  hide_command_line();
  // CLONE_VM | CLONE_VFORK, as posix_spawn does: the program does not get a copy of the address
  // space the init inherited from the supervisor (copying its page tables only for execve to
  // throw them away), and the init sleeps until the execve. Until then the program runs
  // exec_program() on this stack of its own and touches nothing else of the init's memory.
#if defined(__SANITIZE_ADDRESS__)
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
  const char* program = plan.argv[0];
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
