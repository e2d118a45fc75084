/* The confinement a process takes to become a sandbox's program from outside it (issue 30,
 * docs/architecture.md "Design B"): the process-level steps the sandbox's child takes after
 * "go" (child_setup.cpp), as one call with a flat plan. The engine (C++) writes the plan; the
 * library (confine.c, libsandcell-confine.so) runs it. The library is freestanding: raw system
 * calls, no libc, no allocation, no relocations against other objects, so it loads into any
 * image's interpreter (a zygote's child calls it through ctypes) and runs between fork and the
 * program's first instruction.
 *
 * The plan is one buffer: this header, then the variable parts at the offsets it names (from the
 * start of the buffer, each aligned to 8). Every offset and count is checked against `size`
 * before anything is done; a plan that does not check out is refused with EINVAL and nothing
 * changed. */
#ifndef SANDCELL_CONFINE_H
#define SANDCELL_CONFINE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SANDCELL_CONFINE_MAGIC 0x46434353u /* "SCCF" little-endian */
#define SANDCELL_CONFINE_VERSION 1u
#define SANDCELL_CONFINE_MAX_GROUPS 64u
#define SANDCELL_CONFINE_MAX_RLIMITS 16u
#define SANDCELL_CONFINE_MAX_LAYERS 8u
#define SANDCELL_CONFINE_MAX_WRITABLE 16u
#define SANDCELL_CONFINE_MAX_FILTER 4096u /* BPF_MAXINSNS */

struct sandcell_confine_rlimit {
  uint32_t resource; /* RLIMIT_* */
  uint32_t reserved;
  uint64_t soft, hard;
};

/* One seccomp filter: `count` struct sock_filter (8 bytes each) at `offset`. */
struct sandcell_confine_filter {
  uint32_t flags; /* SECCOMP_FILTER_FLAG_*; NEW_LISTENER only on the first (main) filter */
  uint32_t count;
  uint32_t offset;
  uint32_t reserved;
};

struct sandcell_confine_plan {
  uint32_t magic;   /* SANDCELL_CONFINE_MAGIC */
  uint32_t version; /* SANDCELL_CONFINE_VERSION */
  uint32_t size;    /* of the whole buffer, header included */
  /* CLONE_NEW* flags of the namespaces to join, each by its fd in sandcell_confine_fds (never
   * CLONE_NEWPID: the caller was forked into the pid namespace). 0: join nothing. */
  uint32_t join_namespaces;

  /* The user: setgroups (unless setgroups_denied), setresgid, setresuid, all three ids. */
  uint32_t uid, gid;
  uint32_t group_count; /* gid_t (uint32_t) each, at groups_offset */
  uint32_t groups_offset;
  uint32_t setgroups_denied; /* single-id rootless: /proc/self/setgroups says deny */

  /* Capabilities, as masks of capability numbers (bit N = capability N, N < 64). */
  uint64_t bounding_drop; /* dropped from the bounding set before the user changes */
  uint64_t cap_effective, cap_permitted, cap_inheritable;
  uint64_t cap_ambient; /* raised after the ambient set is cleared; 0 for none */

  uint32_t no_new_privs; /* 1: PR_SET_NO_NEW_PRIVS */
  uint32_t umask;        /* applied as given; > 0777: left alone */

  /* Landlock, the rules apparmor/src/landlock.cpp makes: abi 0 means none. "/" read and
   * execute, "/dev" read and write in place, each writable path every handled right;
   * deny_tcp (abi >= 4): TCP bind and connect handled with no rule; abi >= 6: abstract unix
   * sockets and signals scoped. Writable paths: NUL-terminated strings, one after the other. */
  uint32_t landlock_abi;
  uint32_t landlock_deny_tcp;
  uint32_t landlock_writable_count;
  uint32_t landlock_writable_offset;

  uint32_t rlimit_count; /* struct sandcell_confine_rlimit each, at rlimit_offset */
  uint32_t rlimit_offset;

  /* Seccomp, last: filter 0 is the main program (it may ask for a listener); the others are
   * layers stacked on it (Spec::seccomp_layers). */
  uint32_t filter_count; /* struct sandcell_confine_filter each, at filter_offset */
  uint32_t filter_offset;

  uint32_t cwd_offset; /* a NUL-terminated absolute path; chdir'd after the namespaces */
  uint32_t reserved;
};

/* The fds the caller gives (numbers in its own table); -1 where there is none. */
enum {
  SANDCELL_CONFINE_NS_USER,
  SANDCELL_CONFINE_NS_IPC,
  SANDCELL_CONFINE_NS_UTS,
  SANDCELL_CONFINE_NS_NET,
  SANDCELL_CONFINE_NS_CGROUP,
  SANDCELL_CONFINE_NS_MNT,
  SANDCELL_CONFINE_NS_COUNT
};

struct sandcell_confine_fds {
  /* The sandbox's namespaces, /proc/<init>/ns/<name> opened by the supervisor, joined in this
   * order (user first: it decides what the others may do; mount last: it changes the root),
   * each whose flag join_namespaces has; -1 for the others. Not the init's pidfd: setns() on a
   * pidfd needs ptrace access to the init, which is not dumpable. */
  int32_t namespace_fds[SANDCELL_CONFINE_NS_COUNT];
  /* Written "0" each, before the namespaces are joined: the run's cgroups (v1: each hierarchy's
   * `tasks`; v2: `cgroup.procs`), opened by the supervisor. */
  int32_t cgroup_fds[8];
  uint32_t cgroup_count;
  int32_t stdio[3];  /* dup'd onto 0, 1, 2 (without O_CLOEXEC); -1 leaves that fd as it is */
  int32_t report_fd; /* a unix socket: the seccomp listener is sent over it (SCM_RIGHTS, one
                        byte 'L') when filter 0 asks for one; closed at the end */
  /* Every other fd is closed (close_range) except these, which stay open with O_CLOEXEC. */
  int32_t keep[8];
  uint32_t keep_count;
};

/* What the library sends over report_fd (one SOCK_SEQPACKET message each): the seccomp listener
 * ('L', the fd with SCM_RIGHTS), or, when a step fails and report_fd is still open, the failure
 * ('E', err and step), before it returns. */
struct sandcell_confine_report {
  char tag; /* 'L' or 'E' */
  char reserved[3];
  int32_t err;   /* 'E': the errno */
  char step[56]; /* 'E': the step, NUL-terminated */
};

/* Runs the plan on the calling thread (the caller must be single-threaded: credentials are
 * changed by the raw system calls, for this thread alone), in this order:
 *   check the plan -> setsid -> cgroups -> setns() each namespace fd -> chdir(cwd) ->
 *   stdio -> close the other fds -> rlimits -> umask -> bounding set -> KEEPCAPS, groups, gid,
 *   uid -> capset -> ambient -> PR_SET_DUMPABLE 1 -> no_new_privs -> Landlock -> signal mask
 *   emptied -> seccomp (listener sent over report_fd, then closed) -> report_fd closed.
 * Returns 0, or a negative errno with `step` (if not null) pointed at a static string naming
 * the step that failed; the process is then half-confined and must exit. */
int sandcell_confine(const struct sandcell_confine_plan* plan,
                     const struct sandcell_confine_fds* fds, const char** step);

#ifdef __cplusplus
}
#endif

#endif
