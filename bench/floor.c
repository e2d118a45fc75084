// A floor for bench/floor.sh: the kernel work a sandbox like sandcell's cannot avoid, in plain C
// with no runtime of its own, one step at a time. It is not a sandbox to use (no Landlock, no
// supervision, no output handling, no result record, no cleanup after a crash; seccomp only at
// level complete).
//
//   floor LEVEL ROOTFS [SCRATCH [NETNS]]
//   LEVEL  ns       clone3 into new pid, mount, uts, ipc and net namespaces, exec /bin/true
//          rootfs   + a tmpfs scratch, an overlay of ROOTFS over it, /proc, pivot_root
//          mounts   + /dev (tmpfs, six nodes, devpts, shm), read-only sysfs, Docker's masked and
//                   read-only paths, hostname, lo up
//          cgroups  + five v1 cgroups (freezer memory pids cpu cpuacct) made, limited, joined
//                   and removed (v2: one cgroup with memory.max, pids.max, cpu.max)
//          full     + every capability dropped, no_new_privs, and /bin/true run by an init (pid 1
//                   forks it and reaps it), as sandcell does
//   The next levels take what sandcell does to keep work off the path from exec to exit:
//          pooled   full, but the child joins a network namespace made ahead of time (NETNS, a
//                   bind-mounted nsfs file) instead of making one, the four v1 cgroups sandcell
//                   makes (no freezer), and a cgroup namespace once the child is in them
//          parallel + the parent makes the cgroups while the child mounts, sends "go" when they
//                   are ready, then makes the next run's network namespace while the program runs
//                   (bound on NETNS in place of this run's, as sandcell's pool does); the init
//                   leaves the cgroups once the program runs and says when it has reaped it, so
//                   that the parent removes them while the init's exit tears the namespaces down;
//                   and sandcell's CPU hand-off at the clone
//          complete + what else issue 2 asks of the kernel: a libseccomp filter denying the system
//                   calls it names (compiled by the parent meanwhile, loaded by the init before it
//                   forks the program), swap off, the rlimits, close_range (above the fds the init
//                   still needs), the cwd check, and the usage the result record needs read
//                   before the cgroups go
//   SCRATCH  an empty directory for the scratch tmpfs (default /run/sandcell/scratch)
//   NETNS    for pooled and above: a file with a network namespace bound on it
// Exit status: /bin/true's (0), or 125 with a message when a step fails.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NS, ROOTFS, MOUNTS, CGROUPS, FULL, POOLED, PARALLEL, COMPLETE };

static void die(const char* what) {
  fprintf(stderr, "floor: %s: %s\n", what, strerror(errno));
  _exit(125);
}

static void write_file(const char* path, const char* value) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, value, strlen(value)) < 0) die(path);
  close(fd);
}

static void write_in(const char* dir, const char* name, const char* value) {
  char path[512];
  snprintf(path, sizeof path, "%.255s/%s", dir, name);
  write_file(path, value);
}

// ---- cgroups: v2 when the unified tree has memory, pids and cpu, else v1 --------------------
static const char* const kV1[] = {"freezer", "memory", "pids", "cpu", "cpuacct"};
static char cgroup_dirs[5][256];
static int cgroup_count;
static int without_freezer;  // pooled and above: sandcell's four hierarchies
static int swap_off;         // complete: memory.memsw.limit_in_bytes and swappiness too

static int unified, memory_dir, pids_dir, cpu_dir;
static int leave_fds[5] = {-1, -1, -1, -1, -1};   // parallel: the parents' "tasks", for the init
static int parent_fds[5] = {-1, -1, -1, -1, -1};  // parallel: the parents, for the child to join
static int done_fd = -1;                          // parallel: the init says "program reaped" here

// The cgroups' paths, decided before the clone so that the child knows them when the parent
// makes them afterwards (level parallel).
static void name_cgroups(pid_t owner) {
  char controllers[256] = "";
  int fd = open("/sys/fs/cgroup/cgroup.controllers", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, controllers, sizeof controllers - 1);
    controllers[n > 0 ? n : 0] = '\0';
    close(fd);
  }
  unified =
      strstr(controllers, "memory") && strstr(controllers, "pids") && strstr(controllers, "cpu");
  if (unified) {
    snprintf(cgroup_dirs[0], sizeof cgroup_dirs[0], "/sys/fs/cgroup/sandcell/floor-%d", owner);
    cgroup_count = 1;
    return;
  }
  for (int i = without_freezer; i < 5; ++i) {
    int n = cgroup_count++;
    snprintf(cgroup_dirs[n], sizeof cgroup_dirs[n], "/sys/fs/cgroup/%s/sandcell/floor-%d", kV1[i],
             owner);
    if (i == 1) memory_dir = n;
    if (i == 2) pids_dir = n;
    if (i == 3) cpu_dir = n;
  }
}

static void make_cgroups(void) {
  if (unified) {
    mkdir("/sys/fs/cgroup/sandcell", 0755);
    write_file("/sys/fs/cgroup/sandcell/cgroup.subtree_control", "+memory +pids +cpu");
    if (mkdir(cgroup_dirs[0], 0755) < 0) die(cgroup_dirs[0]);
    write_in(cgroup_dirs[0], "memory.max", "536870912");
    write_in(cgroup_dirs[0], "pids.max", "129");
    write_in(cgroup_dirs[0], "cpu.max", "100000 100000");
    return;
  }
  for (int n = 0; n < cgroup_count; ++n) {
    char parent[sizeof cgroup_dirs[0]];
    memcpy(parent, cgroup_dirs[n], sizeof parent);
    *strrchr(parent, '/') = '\0';
    mkdir(parent, 0755);
    if (mkdir(cgroup_dirs[n], 0755) < 0) die(cgroup_dirs[n]);
  }
  write_in(cgroup_dirs[memory_dir], "memory.limit_in_bytes", "536870912");
  write_in(cgroup_dirs[pids_dir], "pids.max", "129");
  write_in(cgroup_dirs[cpu_dir], "cpu.cfs_quota_us", "100000");
  if (swap_off) {
    write_in(cgroup_dirs[memory_dir], "memory.memsw.limit_in_bytes", "536870912");
    write_in(cgroup_dirs[memory_dir], "memory.swappiness", "0");
  }
}

// Level complete: what the result record needs (cpu time, peak memory, OOM kills, pids limit
// hits), read before the cgroups are removed (v1; the v2 floor reads none).
static void read_usage(void) {
  static const char* const files[][2] = {{"cpuacct", "cpuacct.usage"},
                                         {"memory", "memory.max_usage_in_bytes"},
                                         {"memory", "memory.oom_control"},
                                         {"pids", "pids.events"}};
  for (size_t i = 0; !unified && i < sizeof files / sizeof files[0]; ++i) {
    char prefix[64], path[sizeof cgroup_dirs[0] + 64], text[256];
    snprintf(prefix, sizeof prefix, "/sys/fs/cgroup/%s/", files[i][0]);
    for (int n = 0; n < cgroup_count; ++n) {
      if (strncmp(cgroup_dirs[n], prefix, strlen(prefix)) != 0) continue;
      snprintf(path, sizeof path, "%s/%s", cgroup_dirs[n], files[i][1]);
      int fd = open(path, O_RDONLY | O_CLOEXEC);
      if (fd < 0 || read(fd, text, sizeof text) < 0) die(path);
      close(fd);
    }
  }
}

// In the child before its pivot_root: v1 "tasks" (or v2 "cgroup.procs") gets "0", the writer.
static void join_cgroups(void) {
  for (int i = 0; i < cgroup_count; ++i)
    write_in(cgroup_dirs[i], unified ? "cgroup.procs" : "tasks", "0");
}

static void remove_cgroups(void) {
  for (int i = cgroup_count - 1; i >= 0; --i)
    if (rmdir(cgroup_dirs[i]) < 0) die(cgroup_dirs[i]);
}

// ---- the child's mounts -------------------------------------------------------------------
static void mount_rootfs(const char* lower, const char* scratch) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) die("make / private");
  if (mount("tmpfs", scratch, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=0700") < 0)
    die("mount the scratch tmpfs");
  if (chdir(scratch) < 0) die("chdir scratch");
  if (mkdir("upper", 0755) < 0 || mkdir("work", 0755) < 0 || mkdir("root", 0755) < 0)
    die("mkdir upper/work/root");
  char options[4096];
  snprintf(options, sizeof options, "lowerdir=%s,upperdir=upper,workdir=work", lower);
  if (mount("overlay", "root", "overlay", MS_NOSUID | MS_NODEV, options) < 0) die("mount overlay");
  if (chdir("root") < 0) die("chdir root");
  if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0) die("mount proc");
}

static void mount_dev_sys(void) {
  if (mount("tmpfs", "dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=65536k") < 0)
    die("mount /dev");
  static const struct {
    const char* name;
    unsigned major, minor;
  } nodes[] = {{"dev/null", 1, 3},   {"dev/zero", 1, 5},    {"dev/full", 1, 7},
               {"dev/random", 1, 8}, {"dev/urandom", 1, 9}, {"dev/tty", 5, 0}};
  mode_t old = umask(0);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; ++i)
    if (mknod(nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0)
      die(nodes[i].name);
  umask(old);
  if (symlink("pts/ptmx", "dev/ptmx") < 0 || symlink("/proc/self/fd", "dev/fd") < 0)
    die("symlinks");
  if (mkdir("dev/pts", 0755) < 0 || mkdir("dev/shm", 01777) < 0) die("mkdir pts/shm");
  if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
            "newinstance,ptmxmode=0666,mode=0620") < 0)
    die("mount devpts");
  if (mount("shm", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k") <
      0)
    die("mount shm");
  if (mount("sysfs", "sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY, NULL) < 0)
    die("mount sysfs");
}

static void pivot(void) {
  if (syscall(SYS_pivot_root, ".", ".") < 0) die("pivot_root");
  if (umount2(".", MNT_DETACH) < 0) die("detach the old root");
  if (chdir("/") < 0) die("chdir /");
}

static void mask_paths(void) {  // Docker's lists, as sandcell applies them
  static const char* const masked[] = {
      "/proc/acpi",        "/proc/asound",  "/proc/interrupts",
      "/proc/kcore",       "/proc/keys",    "/proc/latency_stats",
      "/proc/sched_debug", "/proc/scsi",    "/proc/timer_list",
      "/proc/timer_stats", "/sys/firmware", "/sys/devices/virtual/powercap"};
  static const char* const readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                         "/proc/sysrq-trigger"};
  struct stat st;
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; ++i) {
    if (stat(masked[i], &st) < 0) continue;
    int r = S_ISDIR(st.st_mode) ? mount("tmpfs", masked[i], "tmpfs",
                                        MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0")
                                : mount("/dev/null", masked[i], NULL, MS_BIND, NULL);
    if (r < 0) die(masked[i]);
  }
  for (size_t i = 0; i < sizeof readonly / sizeof readonly[0]; ++i) {
    if (stat(readonly[i], &st) < 0) continue;
    if (mount(readonly[i], readonly[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
        mount(NULL, readonly[i], NULL,
              MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
      die(readonly[i]);
  }
  if (sethostname("sandcell", 8) < 0) die("sethostname");
}

static void drop_privileges(void) {
  for (int cap = 0; cap <= 63; ++cap)
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL) die("drop the bounding set");
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) die("clear ambient");
  struct __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {{0}};
  if (syscall(SYS_capset, &header, data) < 0) die("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
}

// The deny list issue 2 names, as a libseccomp filter compiled to BPF (into buf; returns its
// length): EPERM for each, other ABIs (x32, i386) killed, clone with any namespace flag refused
// and clone3 answered ENOSYS (glibc then falls back to clone, whose flags a filter can see). The
// parent compiles it while the child mounts and sends it with "go", as sandcell does.
static size_t compile_seccomp(char* buf, size_t size) {
  // clang-format off
  static const char* const denied[] = {
      "keyctl", "add_key", "request_key", "mount", "umount2", "unshare", "setns", "pivot_root",
      "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "bpf",
      "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
      "open_by_handle_at", "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
      "clock_adjtime", "adjtimex"};
  // clang-format on
  static const unsigned long namespaces[] = {CLONE_NEWNS,    CLONE_NEWUTS, CLONE_NEWIPC,
                                             CLONE_NEWUSER,  CLONE_NEWPID, CLONE_NEWNET,
                                             CLONE_NEWCGROUP};
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == NULL || seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0)
    die("seccomp_init");
  for (size_t i = 0; i < sizeof denied / sizeof denied[0]; ++i) {
    int nr = seccomp_syscall_resolve_name(denied[i]);
    if (nr != __NR_SCMP_ERROR && seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0) < 0)
      die(denied[i]);
  }
  for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; ++i)
    if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
                         SCMP_A0(SCMP_CMP_MASKED_EQ, namespaces[i], namespaces[i])) < 0)
      die("seccomp clone rule");
  if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0)
    die("seccomp clone3 rule");
  int fd = memfd_create("floor-bpf", MFD_CLOEXEC);
  if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0) die("seccomp_export_bpf");
  ssize_t n = pread(fd, buf, size, 0);
  if (n <= 0 || (size_t)n == size) die("read the BPF program back");
  close(fd);
  seccomp_release(ctx);
  return (size_t)n;
}

static void bring_up_lo(void) {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq lo = {0};
  strcpy(lo.ifr_name, "lo");
  lo.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  if (s < 0 || ioctl(s, SIOCSIFFLAGS, &lo) < 0) die("bring up lo");
  close(s);
}

// Level parallel: after "go" the child joins the cgroups the parent made meanwhile through
// directories it opened before its pivot_root. It writes "0", which moves the writer: a pid
// instead makes the kernel take cgroup_threadgroup_rwsem for writing, which can wait for a whole
// RCU grace period (up to 10 ms here, in one run of five).
static void join_made_cgroups(void) {
  for (int i = 0; i < cgroup_count; ++i) {
    char name[sizeof cgroup_dirs[0] + 8];
    snprintf(name, sizeof name, "%s/%s", strrchr(cgroup_dirs[i], '/') + 1,
             unified ? "cgroup.procs" : "tasks");
    int fd = openat(parent_fds[i], name, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) die(name);
    close(fd);
  }
}

// Level parallel: the init leaves the run's cgroups once the program runs (as sandcell's does),
// so that the parent can remove them while the init's exit tears the namespaces down.
static void leave_cgroups(void) {
  for (int i = 0; i < cgroup_count; ++i)
    if (leave_fds[i] >= 0 && write(leave_fds[i], "0", 1) != 1) die("leave the run's cgroups");
}

static int run_true(int under_init) {
  char* argv[] = {"/bin/true", NULL};
  char* envp[] = {"PATH=/usr/bin:/bin", NULL};
  if (!under_init) {
    execve(argv[0], argv, envp);
    die("execve /bin/true");
  }
  pid_t program = fork();
  if (program < 0) die("fork the program");
  if (program == 0) {
    execve(argv[0], argv, envp);
    die("execve /bin/true");
  }
  leave_cgroups();
  int status;
  while (waitpid(-1, &status, 0) != program) {
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  unsigned char byte = (unsigned char)code;
  if (done_fd >= 0 && write(done_fd, &byte, 1) != 1) die("report the program's end");
  return code;
}

// Level parallel: the next run's network namespace, made as sandcell's pool makes it: a helper
// born in a new one (sharing this process's memory, which waits) brings its lo up and binds it on
// the file this run's namespace came from.
static const char* netns_file;

static int make_next_netns(void* unused) {
  (void)unused;
  bring_up_lo();
  if (mount("/proc/self/ns/net", netns_file, NULL, MS_BIND, NULL) < 0)
    die("bind the next namespace");
  return 0;
}

static void replace_netns(void) {
  static char stack[64 * 1024] __attribute__((aligned(16)));
  if (umount2(netns_file, MNT_DETACH) < 0) die("unmount this run's namespace");
  pid_t helper =
      clone(make_next_netns, stack + sizeof stack, CLONE_VM | CLONE_VFORK | CLONE_NEWNET, NULL);
  int status;
  if (helper < 0 || waitpid(helper, &status, __WALL) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    die("make the next run's network namespace");
}

// Level complete: the rlimits issue 2 names (core 0, nofile, memlock 0), every fd above the ones
// the init still needs closed (sandcell closes all of its own but those), and the working
// directory checked to be inside the new root (CVE-2024-21626).
static void limit_and_close(int go) {
  const struct rlimit core = {0, 0}, nofile = {1024, 1024}, memlock = {0, 0};
  if (setrlimit(RLIMIT_CORE, &core) < 0 || setrlimit(RLIMIT_NOFILE, &nofile) < 0 ||
      setrlimit(RLIMIT_MEMLOCK, &memlock) < 0)
    die("rlimits");
  int highest = go > done_fd ? go : done_fd;
  for (int i = 0; i < 5; ++i) {
    if (leave_fds[i] > highest) highest = leave_fds[i];
    if (parent_fds[i] > highest) highest = parent_fds[i];
  }
  if (syscall(SYS_close_range, highest + 1, ~0U, 0) < 0) die("close_range");
  char cwd[64];
  if (chdir("/") < 0 || getcwd(cwd, sizeof cwd) == NULL || strcmp(cwd, "/") != 0)
    die("verify the cwd");
}

// Level parallel: sandcell's CPU hand-off (runtime/src/cpu_handoff.hpp). A new task goes to an
// idle CPU, and waking that halted vCPU holds the child back; so the parent clones pinned to its
// own CPU and then moves to the others, and the child takes the whole mask back first thing.
static cpu_set_t all_cpus;
static int handed_off;

static void pin_here(void) {
  cpu_set_t here;
  int cpu = sched_getcpu();
  if (cpu < 0 || sched_getaffinity(0, sizeof all_cpus, &all_cpus) < 0 || CPU_COUNT(&all_cpus) < 2)
    return;
  CPU_ZERO(&here);
  CPU_SET(cpu, &here);
  handed_off = sched_setaffinity(0, sizeof here, &here) == 0;
}

static void move_away(void) {
  if (!handed_off) return;
  cpu_set_t others = all_cpus;
  CPU_CLR(sched_getcpu(), &others);
  sched_setaffinity(0, sizeof others, &others);
}

static int run_child(int level, const char* rootfs, const char* scratch, int netns, int go) {
  if (handed_off) sched_setaffinity(0, sizeof all_cpus, &all_cpus);
  if (netns >= 0 && setns(netns, CLONE_NEWNET) < 0) die("setns the network namespace made ahead");
  if (level >= CGROUPS && level < PARALLEL) join_cgroups();
  if (level >= ROOTFS) mount_rootfs(rootfs, scratch);
  if (level >= MOUNTS) mount_dev_sys();
  if (level >= ROOTFS) pivot();
  if (level >= MOUNTS) mask_paths();
  if (level >= MOUNTS && netns < 0) bring_up_lo();
  if (level >= COMPLETE) limit_and_close(go);
  char message[4096];  // "go": one byte, or the seccomp program
  ssize_t got = level >= PARALLEL ? read(go, message, sizeof message) : 0;
  if (got < 0 || (level >= PARALLEL && got == 0)) die("wait for go");
  if (level >= PARALLEL) join_made_cgroups();
  if (level >= POOLED && unshare(CLONE_NEWCGROUP) < 0) die("unshare the cgroup namespace");
  if (level >= FULL) drop_privileges();
  if (level >= COMPLETE) {
    struct sock_fprog program = {.len = (unsigned short)(got / sizeof(struct sock_filter)),
                                 .filter = (struct sock_filter*)message};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) < 0) die("load the seccomp filter");
  }
  return run_true(level >= FULL);
}

int main(int argc, char** argv) {
  static const char* const names[] = {"ns",   "rootfs", "mounts",   "cgroups",
                                      "full", "pooled", "parallel", "complete"};
  int level = -1;
  for (int i = 0; argc >= 3 && i < 8; ++i)
    if (strcmp(argv[1], names[i]) == 0) level = i;
  if (level < 0 || (level >= POOLED && argc < 5)) {
    fprintf(stderr,
            "usage: floor ns|rootfs|mounts|cgroups|full ROOTFS [SCRATCH]\n"
            "       floor pooled|parallel|complete ROOTFS SCRATCH NETNS\n");
    return 125;
  }
  const char* rootfs = argv[2];
  const char* scratch = argc > 3 ? argv[3] : "/run/sandcell/scratch";
  int netns = -1, go[2] = {-1, -1};
  if (level >= POOLED) {
    without_freezer = 1;
    swap_off = level >= COMPLETE;
    netns_file = argv[4];
    if ((netns = open(netns_file, O_RDONLY | O_CLOEXEC)) < 0) die(netns_file);
  }
  int done[2] = {-1, -1};
  if (level >= PARALLEL && (pipe2(go, O_CLOEXEC) < 0 || pipe2(done, O_CLOEXEC) < 0)) die("pipe");
  done_fd = done[1];
  if (level >= CGROUPS) name_cgroups(getpid());
  for (int i = 0; level >= PARALLEL && i < cgroup_count; ++i) {
    char tasks[sizeof cgroup_dirs[0] + 8];
    snprintf(tasks, sizeof tasks, "%.255s", cgroup_dirs[i]);
    *strrchr(tasks, '/') = '\0';
    mkdir(tasks, 0755);  // the "sandcell" parent, as make_cgroups() would
    parent_fds[i] = open(tasks, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent_fds[i] < 0) die(tasks);
    if (unified) continue;  // v2: no process in a parent with controllers: the init stays
    strcat(tasks, "/tasks");
    leave_fds[i] = open(tasks, O_WRONLY | O_CLOEXEC);
    if (leave_fds[i] < 0) die(tasks);
  }
  if (level >= CGROUPS && level < PARALLEL) make_cgroups();
  struct clone_args args = {.flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC,
                            .exit_signal = SIGCHLD};
  if (netns < 0) args.flags |= CLONE_NEWNET;
  if (level >= PARALLEL) pin_here();
  pid_t child = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (child < 0) die("clone3");
  if (child == 0) _exit(run_child(level, rootfs, scratch, netns, go[0]));
  if (level >= PARALLEL) {
    move_away();
    make_cgroups();
    char message[4096] = "g";  // one write of at most PIPE_BUF bytes: the child reads it whole
    size_t length = level >= COMPLETE ? compile_seccomp(message, sizeof message) : 1;
    if (write(go[1], message, length) != (ssize_t)length) die("send go");
    replace_netns();
  }
  int removed = 0;
  if (level >= PARALLEL && !unified) {  // the program is reaped and the init out of the cgroups
    close(done[1]);
    unsigned char code;
    if (read(done[0], &code, 1) == 1) {
      if (level >= COMPLETE) read_usage();
      remove_cgroups();
      removed = 1;
    }
  }
  int status;
  if (waitpid(child, &status, 0) < 0) die("waitpid");
  if (level >= CGROUPS && !removed) remove_cgroups();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
