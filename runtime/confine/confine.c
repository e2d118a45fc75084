/* libsandcell-confine.so: runs a sandcell_confine_plan (sandcell_confine.h) in the calling
 * process: the process-level steps child_setup.cpp takes after "go", in the same order.
 *
 * Freestanding (runtime/confine/CMakeLists.txt): no libc, no allocation, no relocations, and
 * only sandcell_confine exported. It runs in a zygote's child between fork and the program,
 * loaded by whatever interpreter the image has, so it relies on nothing but the kernel: raw
 * system calls through inline assembly, and the kernel's UAPI headers for constants and structs. */
#include <asm-generic/signal-defs.h>
#include <asm/socket.h>
#include <asm/unistd.h>
#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/filter.h>
#include <linux/prctl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/uio.h>
#include <stddef.h>
#include <stdint.h>

/* -fvisibility=hidden hides everything else. */
#pragma GCC visibility push(default)
#include "sandcell_confine.h"
#pragma GCC visibility pop

/* ---- Raw system calls: they return a negative errno on failure, as the kernel does. ---- */

#if defined(__x86_64__)
static long sys6(long nr, long a, long b, long c, long d, long e, long f) {
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  long ret;
  __asm__ volatile("syscall"
                   : "=a"(ret)
                   : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return ret;
}
#elif defined(__aarch64__)
static long sys6(long nr, long a, long b, long c, long d, long e, long f) {
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory", "cc");
  return x0;
}
#else
#error "libsandcell-confine: raw system calls are written for x86_64 and aarch64 only"
#endif

static long sys1(long nr, long a) {
  return sys6(nr, a, 0, 0, 0, 0, 0);
}
static long sys2(long nr, long a, long b) {
  return sys6(nr, a, b, 0, 0, 0, 0);
}
static long sys3(long nr, long a, long b, long c) {
  return sys6(nr, a, b, c, 0, 0, 0);
}
static long sys4(long nr, long a, long b, long c, long d) {
  return sys6(nr, a, b, c, d, 0, 0);
}
static long prctl3(long option, long arg2, long arg3) {
  return sys6(__NR_prctl, option, arg2, arg3, 0, 0, 0);
}

/* The compiler may emit calls to these for struct copies and zeroing even when freestanding.
 * Hidden like every symbol here but sandcell_confine; volatile, so that the loops are not
 * recognised and turned back into calls to themselves. */
void* memset(void* dest, int c, size_t n) {
  volatile unsigned char* d = dest;
  while (n--) *d++ = (unsigned char)c;
  return dest;
}

void* memcpy(void* dest, const void* src, size_t n) {
  volatile unsigned char* d = dest;
  const unsigned char* s = src;
  while (n--) *d++ = *s++;
  return dest;
}

/* ---- The checks: all of them before the first step, so a refused plan changes nothing. ---- */

static const unsigned char* plan_bytes(const struct sandcell_confine_plan* plan) {
  return (const unsigned char*)plan;
}

/* `count` elements of `size` bytes at `offset`: after the header, aligned for the element, and
 * inside the plan. The caller bounds `count` first, so nothing here overflows 64 bits. */
static int part_fits(const struct sandcell_confine_plan* plan, uint32_t offset, uint64_t count,
                     uint64_t size, uint64_t align) {
  if (count == 0) return 1;
  if (offset < sizeof *plan || offset % align != 0) return 0;
  return (uint64_t)offset + count * size <= plan->size;
}

/* Just past the NUL of the string at `offset`; 0 if it is not terminated inside the plan. */
static uint32_t string_end(const struct sandcell_confine_plan* plan, uint32_t offset) {
  if (offset < sizeof *plan) return 0;
  for (uint32_t at = offset; at < plan->size; ++at)
    if (plan_bytes(plan)[at] == '\0') return at + 1;
  return 0;
}

static int absolute_path_at(const struct sandcell_confine_plan* plan, uint32_t offset) {
  return string_end(plan, offset) != 0 && plan_bytes(plan)[offset] == '/';
}

static int writable_paths_check_out(const struct sandcell_confine_plan* plan) {
  if (plan->landlock_writable_count > SANDCELL_CONFINE_MAX_WRITABLE) return 0;
  uint32_t at = plan->landlock_writable_offset;
  for (uint32_t i = 0; i < plan->landlock_writable_count; ++i) {
    if (!absolute_path_at(plan, at)) return 0;
    at = string_end(plan, at);
  }
  return 1;
}

static const struct sandcell_confine_filter* filters(const struct sandcell_confine_plan* plan) {
  return (const struct sandcell_confine_filter*)(plan_bytes(plan) + plan->filter_offset);
}

static int filters_check_out(const struct sandcell_confine_plan* plan) {
  if (plan->filter_count > SANDCELL_CONFINE_MAX_LAYERS ||
      !part_fits(plan, plan->filter_offset, plan->filter_count,
                 sizeof(struct sandcell_confine_filter), _Alignof(struct sandcell_confine_filter)))
    return 0;
  for (uint32_t i = 0; i < plan->filter_count; ++i) {
    const struct sandcell_confine_filter* f = &filters(plan)[i];
    /* Only the main program's listener goes to the supervisor. */
    if (i > 0 && (f->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)) return 0;
    if (f->count == 0 || f->count > SANDCELL_CONFINE_MAX_FILTER ||
        !part_fits(plan, f->offset, f->count, sizeof(struct sock_filter),
                   _Alignof(struct sock_filter)))
      return 0;
  }
  return 1;
}

/* SANDCELL_CONFINE_NS_*'s flags, in their order. */
static const uint32_t kNamespaceFlag[SANDCELL_CONFINE_NS_COUNT] = {
    CLONE_NEWUSER, CLONE_NEWIPC, CLONE_NEWUTS, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWNS};
static const char kSetnsStep[SANDCELL_CONFINE_NS_COUNT][24] = {
    "setns user", "setns ipc", "setns uts", "setns net", "setns cgroup", "setns mnt"};

/* Never CLONE_NEWPID: the caller was forked into the pid namespace, and a setns to it would
 * move only its future children. */
static const uint32_t kJoinable =
    CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWCGROUP;

static int plan_checks_out(const struct sandcell_confine_plan* plan) {
  if (plan == NULL || (uintptr_t)plan % 8 != 0) return 0;
  if (plan->magic != SANDCELL_CONFINE_MAGIC || plan->version != SANDCELL_CONFINE_VERSION ||
      plan->size < sizeof *plan || (plan->join_namespaces & ~kJoinable))
    return 0;
  /* Groups with setgroups denied would be silently ignored: refused instead. */
  if (plan->group_count > SANDCELL_CONFINE_MAX_GROUPS ||
      (plan->setgroups_denied && plan->group_count != 0) ||
      !part_fits(plan, plan->groups_offset, plan->group_count, sizeof(uint32_t),
                 _Alignof(uint32_t)))
    return 0;
  if (plan->rlimit_count > SANDCELL_CONFINE_MAX_RLIMITS ||
      !part_fits(plan, plan->rlimit_offset, plan->rlimit_count,
                 sizeof(struct sandcell_confine_rlimit), _Alignof(struct sandcell_confine_rlimit)))
    return 0;
  return writable_paths_check_out(plan) && filters_check_out(plan) &&
         absolute_path_at(plan, plan->cwd_offset);
}

static int fds_check_out(const struct sandcell_confine_plan* plan,
                         const struct sandcell_confine_fds* fds) {
  if (fds == NULL || fds->cgroup_count > sizeof fds->cgroup_fds / sizeof fds->cgroup_fds[0] ||
      fds->keep_count > sizeof fds->keep / sizeof fds->keep[0])
    return 0;
  for (uint32_t i = 0; i < fds->cgroup_count; ++i)
    if (fds->cgroup_fds[i] < 0) return 0;
  for (int i = 0; i < 3; ++i)
    if (fds->stdio[i] < -1) return 0;
  for (int i = 0; i < SANDCELL_CONFINE_NS_COUNT; ++i)
    if ((plan->join_namespaces & kNamespaceFlag[i]) && fds->namespace_fds[i] < 0) return 0;
  if (plan->filter_count > 0 && (filters(plan)[0].flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) &&
      fds->report_fd < 0)
    return 0;
  return 1;
}

/* ---- The steps: each returns 0, or a negative errno with *step naming it. ---- */

struct run {
  const struct sandcell_confine_plan* plan;
  const struct sandcell_confine_fds* fds;
  const char** step;
};

static int checked(const struct run* r, long ret, const char* step) {
  if (ret >= 0) return 0;
  *r->step = step;
  return (int)ret;
}

/* Names with an index, as arrays of characters: a table of pointers would need relocations,
 * and the library has none. */
static const char kCgroupStep[8][24] = {"write 0 to cgroup fd 0", "write 0 to cgroup fd 1",
                                        "write 0 to cgroup fd 2", "write 0 to cgroup fd 3",
                                        "write 0 to cgroup fd 4", "write 0 to cgroup fd 5",
                                        "write 0 to cgroup fd 6", "write 0 to cgroup fd 7"};
static const char kStdioStep[3][12] = {"dup stdin", "dup stdout", "dup stderr"};
static const char kRlimitStep[16][28] = {
    "prlimit RLIMIT_CPU",      "prlimit RLIMIT_FSIZE",  "prlimit RLIMIT_DATA",
    "prlimit RLIMIT_STACK",    "prlimit RLIMIT_CORE",   "prlimit RLIMIT_RSS",
    "prlimit RLIMIT_NPROC",    "prlimit RLIMIT_NOFILE", "prlimit RLIMIT_MEMLOCK",
    "prlimit RLIMIT_AS",       "prlimit RLIMIT_LOCKS",  "prlimit RLIMIT_SIGPENDING",
    "prlimit RLIMIT_MSGQUEUE", "prlimit RLIMIT_NICE",   "prlimit RLIMIT_RTPRIO",
    "prlimit RLIMIT_RTTIME"};
static const char kSeccompStep[SANDCELL_CONFINE_MAX_LAYERS][20] = {
    "seccomp filter 0", "seccomp filter 1", "seccomp filter 2", "seccomp filter 3",
    "seccomp filter 4", "seccomp filter 5", "seccomp filter 6", "seccomp filter 7"};

static int leave_callers_session(const struct run* r) {
  return checked(r, sys6(__NR_setsid, 0, 0, 0, 0, 0, 0), "setsid");
}

static int join_cgroups(const struct run* r) {
  for (uint32_t i = 0; i < r->fds->cgroup_count; ++i) {
    int err = checked(r, sys3(__NR_write, r->fds->cgroup_fds[i], (long)"0", 1), kCgroupStep[i]);
    if (err) return err;
  }
  return 0;
}

static int join_namespaces(const struct run* r) {
  for (int i = 0; i < SANDCELL_CONFINE_NS_COUNT; ++i) {
    if (!(r->plan->join_namespaces & kNamespaceFlag[i])) continue;
    int err =
        checked(r, sys2(__NR_setns, r->fds->namespace_fds[i], kNamespaceFlag[i]), kSetnsStep[i]);
    if (err) return err;
  }
  return 0;
}

static int enter_working_directory(const struct run* r) {
  const char* cwd = (const char*)plan_bytes(r->plan) + r->plan->cwd_offset;
  int err = checked(r, sys1(__NR_chdir, (long)cwd), "chdir");
  if (err) return err;
  /* CVE-2024-21626: a cwd reached through a leaked fd (/proc/self/fd/N) lies outside the root,
   * and getcwd() then answers "(unreachable)/...". Ours must be a path under "/". */
  char path[4096];
  if ((err = checked(r, sys2(__NR_getcwd, (long)path, sizeof path), "getcwd"))) return err;
  if (path[0] == '/') return 0;
  *r->step = "working directory outside the root";
  return -EPERM;
}

/* A source that is itself 0, 1 or 2 (not its own target) would be overwritten by an earlier
 * dup: it is copied above 2 first, and close_other_fds closes the copy. */
static int install_stdio(const struct run* r) {
  long from[3];
  for (int i = 0; i < 3; ++i) {
    from[i] = r->fds->stdio[i];
    if (from[i] < 0 || from[i] >= 3 || from[i] == i) continue;
    from[i] = sys3(__NR_fcntl, from[i], F_DUPFD_CLOEXEC, 3);
    if (from[i] < 0) return checked(r, from[i], kStdioStep[i]);
  }
  for (int i = 0; i < 3; ++i) {
    if (from[i] < 0) continue;
    /* dup3 refuses an fd onto itself: then only its close-on-exec flag is cleared. */
    long ret = from[i] == i ? sys3(__NR_fcntl, i, F_SETFD, 0) : sys3(__NR_dup3, from[i], i, 0);
    if (ret < 0) return checked(r, ret, kStdioStep[i]);
  }
  return 0;
}

static void insert_sorted(unsigned* fds, unsigned* count, unsigned fd) {
  unsigned i = (*count)++;
  for (; i > 0 && fds[i - 1] > fd; --i) fds[i] = fds[i - 1];
  fds[i] = fd;
}

/* Every fd but 0, 1, 2, keep[] (close-on-exec from here) and report_fd (closed last). */
static int close_other_fds(const struct run* r) {
  unsigned open[9], count = 0;
  for (uint32_t i = 0; i < r->fds->keep_count; ++i) {
    const int fd = r->fds->keep[i];
    if (fd < 3) continue;
    int err =
        checked(r, sys3(__NR_fcntl, fd, F_SETFD, FD_CLOEXEC), "set close-on-exec on a kept fd");
    if (err) return err;
    insert_sorted(open, &count, (unsigned)fd);
  }
  if (r->fds->report_fd >= 3) insert_sorted(open, &count, (unsigned)r->fds->report_fd);
  unsigned from = 3;
  for (unsigned i = 0; i < count; ++i) {
    if (open[i] > from) {
      int err = checked(r, sys3(__NR_close_range, from, open[i] - 1, 0), "close_range");
      if (err) return err;
    }
    if (open[i] >= from) from = open[i] + 1;
  }
  return checked(r, sys3(__NR_close_range, from, ~0u, 0), "close_range");
}

static int apply_rlimits(const struct run* r) {
  const struct sandcell_confine_rlimit* limits =
      (const struct sandcell_confine_rlimit*)(plan_bytes(r->plan) + r->plan->rlimit_offset);
  for (uint32_t i = 0; i < r->plan->rlimit_count; ++i) {
    const uint32_t resource = limits[i].resource;
    /* soft and hard, two 64-bit words one after the other: the kernel's struct rlimit64. */
    long ret = sys4(__NR_prlimit64, 0, resource, (long)&limits[i].soft, 0);
    if (ret < 0) return checked(r, ret, resource < 16 ? kRlimitStep[resource] : "prlimit");
  }
  return 0;
}

static int set_umask(const struct run* r) {
  if (r->plan->umask <= 0777) sys1(__NR_umask, r->plan->umask);
  return 0;
}

/* Needs CAP_SETPCAP, so before the uid changes. */
static int drop_bounding_set(const struct run* r) {
  for (long cap = 0; cap < 64; ++cap) {
    if (!((r->plan->bounding_drop >> cap) & 1)) continue;
    long ret = prctl3(PR_CAPBSET_DROP, cap, 0);
    /* EINVAL: past the kernel's last capability, and so are all after it. */
    if (ret == -EINVAL) break;
    if (ret < 0) return checked(r, ret, "drop from the bounding set");
  }
  return 0;
}

static int switch_user(const struct run* r) {
  const struct sandcell_confine_plan* p = r->plan;
  /* KEEPCAPS: the permitted set must survive the switch away from uid 0 (capset follows). */
  int err = checked(r, prctl3(PR_SET_KEEPCAPS, 1, 0), "PR_SET_KEEPCAPS 1");
  if (err) return err;
  /* Single-id rootless: setgroups is denied for good (user_namespaces(7)). */
  const long groups = (long)(plan_bytes(p) + p->groups_offset);
  if (!p->setgroups_denied &&
      (err = checked(r, sys2(__NR_setgroups, p->group_count, groups), "setgroups")))
    return err;
  if ((err = checked(r, sys3(__NR_setresgid, p->gid, p->gid, p->gid), "setresgid"))) return err;
  if ((err = checked(r, sys3(__NR_setresuid, p->uid, p->uid, p->uid), "setresuid"))) return err;
  return checked(r, prctl3(PR_SET_KEEPCAPS, 0, 0), "PR_SET_KEEPCAPS 0");
}

static int set_capabilities(const struct run* r) {
  const struct sandcell_confine_plan* p = r->plan;
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2] = {{.effective = (uint32_t)p->cap_effective,
                                            .permitted = (uint32_t)p->cap_permitted,
                                            .inheritable = (uint32_t)p->cap_inheritable},
                                           {.effective = (uint32_t)(p->cap_effective >> 32),
                                            .permitted = (uint32_t)(p->cap_permitted >> 32),
                                            .inheritable = (uint32_t)(p->cap_inheritable >> 32)}};
  return checked(r, sys2(__NR_capset, (long)&header, (long)data), "capset");
}

static int raise_ambient(const struct run* r) {
  long ret = sys6(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0, 0);
  /* EINVAL: a kernel without ambient capabilities (< 4.3), so none to clear. */
  if (ret < 0 && ret != -EINVAL) return checked(r, ret, "clear the ambient set");
  for (long cap = 0; cap < 64; ++cap) {
    if (!((r->plan->cap_ambient >> cap) & 1)) continue;
    ret = sys6(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0, 0);
    if (ret < 0) return checked(r, ret, "raise an ambient capability");
  }
  return 0;
}

/* The uid change cleared it, and the caller runs the program without an execve that would set
 * it again: /proc/self would stay root's, unreadable to the program. */
static int make_dumpable(const struct run* r) {
  return checked(r, prctl3(PR_SET_DUMPABLE, 1, 0), "PR_SET_DUMPABLE 1");
}

static int set_no_new_privs(const struct run* r) {
  if (!r->plan->no_new_privs) return 0;
  return checked(r, prctl3(PR_SET_NO_NEW_PRIVS, 1, 0), "PR_SET_NO_NEW_PRIVS");
}

/* ---- Landlock: exactly the rules apparmor/src/landlock.cpp makes. ---- */

/* The UAPI values (include/uapi/linux/landlock.h), spelled out because Debian 12's headers
 * stop at ABI 2. */
static const uint64_t kExecute = 1ull << 0, kWriteFile = 1ull << 1, kReadFile = 1ull << 2,
                      kReadDir = 1ull << 3, kMakeSym = 1ull << 12, kRefer = 1ull << 13,
                      kTruncate = 1ull << 14, kIoctlDev = 1ull << 15;
static const uint64_t kBindTcp = 1ull << 0, kConnectTcp = 1ull << 1;
static const uint64_t kScopeAbstractUnix = 1ull << 0, kScopeSignal = 1ull << 1;
static const long kRulePathBeneath = 1;

struct landlock_ruleset_attr_v6 {
  uint64_t handled_access_fs;
  uint64_t handled_access_net; /* ABI 4 */
  uint64_t scoped;             /* ABI 6 */
};

struct __attribute__((packed)) landlock_path_beneath {
  uint64_t allowed_access;
  int32_t parent_fd;
};

static uint64_t fs_rights_for(uint32_t abi) {
  uint64_t rights = (kMakeSym << 1) - 1; /* ABI 1: bits 0..12 */
  if (abi >= 2) rights |= kRefer;
  if (abi >= 3) rights |= kTruncate;
  if (abi >= 5) rights |= kIoctlDev;
  return rights;
}

static long add_path_rule(long ruleset, const char* path, uint64_t access) {
  long fd = sys4(__NR_openat, AT_FDCWD, (long)path, O_PATH | O_CLOEXEC, 0);
  if (fd == -ENOENT) return 0; /* an optional writable path the image lacks */
  if (fd < 0) return fd;
  struct landlock_path_beneath rule = {.allowed_access = access, .parent_fd = (int32_t)fd};
  long ret = sys4(__NR_landlock_add_rule, ruleset, kRulePathBeneath, (long)&rule, 0);
  sys1(__NR_close, fd);
  return ret;
}

static int add_landlock_rules(const struct run* r, long ruleset) {
  const uint32_t abi = r->plan->landlock_abi;
  const uint64_t read_exec = kExecute | kReadFile | kReadDir;
  int err = checked(r, add_path_rule(ruleset, "/", read_exec), "landlock rule for /");
  if (err) return err;
  /* Device nodes are read and written in place (/dev/null, /dev/tty); nothing is created there. */
  const uint64_t dev =
      kReadFile | kWriteFile | kReadDir | (abi >= 3 ? kTruncate : 0) | (abi >= 5 ? kIoctlDev : 0);
  if ((err = checked(r, add_path_rule(ruleset, "/dev", dev), "landlock rule for /dev"))) return err;
  const char* path = (const char*)plan_bytes(r->plan) + r->plan->landlock_writable_offset;
  for (uint32_t i = 0; i < r->plan->landlock_writable_count; ++i) {
    err = checked(r, add_path_rule(ruleset, path, fs_rights_for(abi)),
                  "landlock rule for a writable path");
    if (err) return err;
    while (*path++ != '\0') continue;
  }
  return 0;
}

/* Needs no_new_privs (or CAP_SYS_ADMIN). */
static int restrict_with_landlock(const struct run* r) {
  const uint32_t abi = r->plan->landlock_abi;
  if (abi == 0) return 0;
  struct landlock_ruleset_attr_v6 attr = {
      .handled_access_fs = fs_rights_for(abi),
      .handled_access_net = abi >= 4 && r->plan->landlock_deny_tcp ? (kBindTcp | kConnectTcp) : 0,
      .scoped = abi >= 6 ? (kScopeAbstractUnix | kScopeSignal) : 0};
  long ruleset = sys3(__NR_landlock_create_ruleset, (long)&attr, sizeof attr, 0);
  if (ruleset < 0) return checked(r, ruleset, "landlock_create_ruleset");
  int err = add_landlock_rules(r, ruleset);
  if (!err)
    err = checked(r, sys2(__NR_landlock_restrict_self, ruleset, 0), "landlock_restrict_self");
  sys1(__NR_close, ruleset);
  return err;
}

/* ---- Signals, seccomp, the report fd. ---- */

static int unblock_signals(const struct run* r) {
  const uint64_t none = 0; /* the kernel's sigset_t: 64 signals, 8 bytes */
  return checked(r, sys4(__NR_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none),
                 "rt_sigprocmask");
}

/* struct user_msghdr and one SCM_RIGHTS control message (CMSG_SPACE(sizeof(int))), as the
 * kernel reads them: the UAPI headers have neither. */
struct message_header {
  void* name;
  int name_length;
  struct iovec* iov;
  size_t iov_count;
  void* control;
  size_t control_length;
  unsigned flags;
};
struct fd_control {
  size_t length;
  int level, type;
  int fd, padding;
};
static const int kScmRights = 1;
static const long kMsgNoSignal = 0x4000; /* a peer gone is an EPIPE, not a SIGPIPE */

static long send_fd(int socket, int fd) {
  char byte = 'L';
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  struct fd_control control = {.length = offsetof(struct fd_control, fd) + sizeof(int),
                               .level = SOL_SOCKET,
                               .type = kScmRights,
                               .fd = fd};
  struct message_header message = {
      .iov = &iov, .iov_count = 1, .control = &control, .control_length = sizeof control};
  return sys3(__NR_sendmsg, socket, (long)&message, kMsgNoSignal);
}

/* A failed step, told to the supervisor (sandcell_confine_report 'E') while report_fd is open:
 * best effort, the caller exits next. */
static void report_failure(const struct sandcell_confine_fds* fds, int err, const char* step) {
  if (fds == NULL || fds->report_fd < 0) return;
  struct sandcell_confine_report report = {.tag = 'E', .err = -err};
  for (size_t i = 0; step != NULL && i + 1 < sizeof report.step && step[i] != '\0'; ++i)
    report.step[i] = step[i];
  struct iovec iov = {.iov_base = &report, .iov_len = sizeof report};
  struct message_header message = {.iov = &iov, .iov_count = 1};
  sys3(__NR_sendmsg, fds->report_fd, (long)&message, kMsgNoSignal);
}

static int install_seccomp(const struct run* r) {
  for (uint32_t i = 0; i < r->plan->filter_count; ++i) {
    const struct sandcell_confine_filter* f = &filters(r->plan)[i];
    struct sock_fprog program = {
        .len = (unsigned short)f->count,
        .filter = (struct sock_filter*)(uintptr_t)(plan_bytes(r->plan) + f->offset)};
    long ret = sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, f->flags, (long)&program);
    if (ret < 0) return checked(r, ret, kSeccompStep[i]);
    if (!(f->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)) continue;
    /* The supervisor answers the notifications; the program must never hold the listener (it
     * could approve its own denied calls), so it is closed right after, before the layers: one
     * that denies sendmsg or close must not keep it here. */
    int err = checked(r, send_fd(r->fds->report_fd, (int)ret), "send the seccomp listener");
    sys1(__NR_close, ret);
    if (err) return err;
  }
  return 0;
}

static int close_report_fd(const struct run* r) {
  if (r->fds->report_fd < 0) return 0;
  return checked(r, sys1(__NR_close, r->fds->report_fd), "close report_fd");
}

static int check_the_plan(const struct run* r) {
  if (!plan_checks_out(r->plan))
    *r->step = "check the plan";
  else if (!fds_check_out(r->plan, r->fds))
    *r->step = "check the fds";
  else
    return 0;
  return -EINVAL;
}

/* One step a line; the order is the security argument (child_setup.cpp's run_child). */
int sandcell_confine(const struct sandcell_confine_plan* plan,
                     const struct sandcell_confine_fds* fds, const char** step) {
  const char* failed_step = NULL;
  const struct run r = {.plan = plan, .fds = fds, .step = &failed_step};
  int err;
  // clang-format off
  if ((err = check_the_plan(&r)) ||           // all before the first change: a refused plan changes nothing
      (err = leave_callers_session(&r)) ||    // kill(0) from the sandbox must not reach the caller's group
      (err = join_cgroups(&r)) ||             // the supervisor's tasks files, before the cgroup namespace
      (err = join_namespaces(&r)) ||          // one setns on the init's pidfd
      (err = enter_working_directory(&r)) ||  // resolved in the joined mount namespace
      (err = install_stdio(&r)) ||
      (err = close_other_fds(&r)) ||          // nothing of the caller's reaches the program
      (err = apply_rlimits(&r)) ||            // raising a hard limit needs CAP_SYS_RESOURCE: while root
      (err = set_umask(&r)) ||
      (err = drop_bounding_set(&r)) ||        // needs CAP_SETPCAP: before the uid changes
      (err = switch_user(&r)) ||
      (err = set_capabilities(&r)) ||
      (err = raise_ambient(&r)) ||            // an ambient capability must be permitted and inheritable
      (err = make_dumpable(&r)) ||
      (err = set_no_new_privs(&r)) ||
      (err = restrict_with_landlock(&r)) ||   // needs no_new_privs
      (err = unblock_signals(&r)) ||
      (err = install_seccomp(&r)) ||          // last: every step above needs calls it may deny
      (err = close_report_fd(&r))) {
    if (step != NULL) *step = failed_step;
    report_failure(fds, err, failed_step);
    return err;
  }
  // clang-format on
  return 0;
}
