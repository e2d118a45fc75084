// A floor for bench/floor.sh: the kernel work a sandbox like sandcell's cannot avoid, in plain C
// with no runtime of its own, one step at a time. It is not a sandbox to use (no seccomp, no
// Landlock, no supervision, no output handling, no result record, no cleanup after a crash).
//
//   floor LEVEL ROOTFS [SCRATCH]
//   LEVEL  ns       clone3 into new pid, mount, uts, ipc and net namespaces, exec /bin/true
//          rootfs   + a tmpfs scratch, an overlay of ROOTFS over it, /proc, pivot_root
//          mounts   + /dev (tmpfs, six nodes, devpts, shm), read-only sysfs, Docker's masked and
//                   read-only paths, hostname, lo up
//          cgroups  + five v1 cgroups (freezer memory pids cpu cpuacct) made, limited, joined
//                   and removed (v2: one cgroup with memory.max, pids.max, cpu.max)
//          full     + every capability dropped, no_new_privs, and /bin/true run by an init (pid 1
//                   forks it and reaps it), as sandcell does
//   SCRATCH  an empty directory for the scratch tmpfs (default /run/sandcell/scratch)
// Exit status: /bin/true's (0), or 125 with a message when a step fails.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/sched.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

enum { NS, ROOTFS, MOUNTS, CGROUPS, FULL };

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
  snprintf(path, sizeof path, "%s/%s", dir, name);
  write_file(path, value);
}

// ---- cgroups: v2 when the unified tree has memory, pids and cpu, else v1 -------------------------
static const char* const kV1[] = {"freezer", "memory", "pids", "cpu", "cpuacct"};
static char cgroup_dirs[5][256];
static int cgroup_count;

static void make_cgroups(void) {
  char controllers[256] = "";
  int fd = open("/sys/fs/cgroup/cgroup.controllers", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, controllers, sizeof controllers - 1);
    controllers[n > 0 ? n : 0] = '\0';
    close(fd);
  }
  char path[192];
  if (strstr(controllers, "memory") && strstr(controllers, "pids") && strstr(controllers, "cpu")) {
    mkdir("/sys/fs/cgroup/sandcell", 0755);
    write_file("/sys/fs/cgroup/sandcell/cgroup.subtree_control", "+memory +pids +cpu");
    snprintf(cgroup_dirs[0], sizeof cgroup_dirs[0], "/sys/fs/cgroup/sandcell/floor-%d", getpid());
    if (mkdir(cgroup_dirs[0], 0755) < 0) die(cgroup_dirs[0]);
    cgroup_count = 1;
    write_in(cgroup_dirs[0], "memory.max", "536870912");
    write_in(cgroup_dirs[0], "pids.max", "129");
    write_in(cgroup_dirs[0], "cpu.max", "100000 100000");
    return;
  }
  for (int i = 0; i < 5; ++i) {
    snprintf(path, sizeof path, "/sys/fs/cgroup/%s/sandcell", kV1[i]);
    mkdir(path, 0755);
    snprintf(cgroup_dirs[i], sizeof cgroup_dirs[i], "%s/floor-%d", path, getpid());
    if (mkdir(cgroup_dirs[i], 0755) < 0) die(cgroup_dirs[i]);
    cgroup_count = i + 1;
  }
  write_in(cgroup_dirs[1], "memory.limit_in_bytes", "536870912");
  write_in(cgroup_dirs[2], "pids.max", "129");
  write_in(cgroup_dirs[3], "cpu.cfs_quota_us", "100000");
}

static void join_cgroups(void) {  // in the child: v1 "tasks" (or v2 "cgroup.procs") gets "0"
  for (int i = 0; i < cgroup_count; ++i)
    write_in(cgroup_dirs[i], cgroup_count == 1 ? "cgroup.procs" : "tasks", "0");
}

static void remove_cgroups(void) {
  for (int i = cgroup_count - 1; i >= 0; --i)
    if (rmdir(cgroup_dirs[i]) < 0) die(cgroup_dirs[i]);
}

// ---- the child's mounts ---------------------------------------------------------------------------
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
  static const struct { const char* name; unsigned major, minor; } nodes[] = {
      {"dev/null", 1, 3}, {"dev/zero", 1, 5}, {"dev/full", 1, 7},
      {"dev/random", 1, 8}, {"dev/urandom", 1, 9}, {"dev/tty", 5, 0}};
  mode_t old = umask(0);
  for (size_t i = 0; i < sizeof nodes / sizeof nodes[0]; ++i)
    if (mknod(nodes[i].name, S_IFCHR | 0666, makedev(nodes[i].major, nodes[i].minor)) < 0)
      die(nodes[i].name);
  umask(old);
  if (symlink("pts/ptmx", "dev/ptmx") < 0 || symlink("/proc/self/fd", "dev/fd") < 0) die("symlinks");
  if (mkdir("dev/pts", 0755) < 0 || mkdir("dev/shm", 01777) < 0) die("mkdir pts/shm");
  if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620") < 0)
    die("mount devpts");
  if (mount("shm", "dev/shm", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=1777,size=65536k") < 0)
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
      "/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
      "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list",
      "/proc/timer_stats", "/sys/firmware", "/sys/devices/virtual/powercap"};
  static const char* const readonly[] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                                         "/proc/sysrq-trigger"};
  struct stat st;
  for (size_t i = 0; i < sizeof masked / sizeof masked[0]; ++i) {
    if (stat(masked[i], &st) < 0) continue;
    int r = S_ISDIR(st.st_mode)
                ? mount("tmpfs", masked[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0")
                : mount("/dev/null", masked[i], NULL, MS_BIND, NULL);
    if (r < 0) die(masked[i]);
  }
  for (size_t i = 0; i < sizeof readonly / sizeof readonly[0]; ++i) {
    if (stat(readonly[i], &st) < 0) continue;
    if (mount(readonly[i], readonly[i], NULL, MS_BIND | MS_REC, NULL) < 0 ||
        mount(NULL, readonly[i], NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
      die(readonly[i]);
  }
  if (sethostname("sandcell", 8) < 0) die("sethostname");
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  struct ifreq lo = {0};
  strcpy(lo.ifr_name, "lo");
  lo.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  if (s < 0 || ioctl(s, SIOCSIFFLAGS, &lo) < 0) die("bring up lo");
  close(s);
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
  int status;
  while (waitpid(-1, &status, 0) != program) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: floor ns|rootfs|mounts|cgroups|full ROOTFS [SCRATCH]\n");
    return 125;
  }
  static const char* const names[] = {"ns", "rootfs", "mounts", "cgroups", "full"};
  int level = -1;
  for (int i = 0; i < 5; ++i)
    if (strcmp(argv[1], names[i]) == 0) level = i;
  if (level < 0) {
    fprintf(stderr, "floor: unknown level %s\n", argv[1]);
    return 125;
  }
  const char* rootfs = argv[2];
  const char* scratch = argc > 3 ? argv[3] : "/run/sandcell/scratch";
  if (level >= CGROUPS) make_cgroups();
  struct clone_args args = {
      .flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET,
      .exit_signal = SIGCHLD};
  pid_t child = (pid_t)syscall(SYS_clone3, &args, sizeof args);
  if (child < 0) die("clone3");
  if (child == 0) {
    if (level >= CGROUPS) join_cgroups();
    if (level >= ROOTFS) mount_rootfs(rootfs, scratch);
    if (level >= MOUNTS) mount_dev_sys();
    if (level >= ROOTFS) pivot();
    if (level >= MOUNTS) mask_paths();
    if (level >= FULL) drop_privileges();
    _exit(run_true(level >= FULL));
  }
  int status;
  if (waitpid(child, &status, 0) < 0) die("waitpid");
  if (level >= CGROUPS) remove_cgroups();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
}
