#pragma once
// Everything the child needs between clone and execve, prepared by the parent. The child may
// run in a copy of a multi-threaded process (servers), so it must not allocate or take locks:
// it only reads this plan and makes syscalls. Made only by ChildPlanBuilder
// (child_plan_builder.hpp), and frozen before clone.
#include <sched.h>
#include <sys/capability.h>
#include <sys/resource.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "sandcell/apparmor/landlock.hpp"
#include "sandcell/runtime/spec.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

struct PlannedMount {
  enum class Kind { Bind, Tmpfs };
  Kind kind;
  std::string source;       // host path (bind) or "tmpfs"
  std::string destination;  // absolute path inside the sandbox root
  std::string data;         // mount(2) data (tmpfs options)
  bool read_only = false;
  bool no_exec = false;  // tmpfs: noexec
  bool source_is_dir = true;
  int tree_fd = -1;    // --userns=auto: a detached clone of the source (detach_bind_sources)
  bool idmap = false;  // --userns=auto: the supervisor idmaps tree_fd (BindMount::idmap)
  bool late = false;   // --userns=auto: the tree comes after the clone (BindMount::late)
};

// The most BindMount::late mounts a run may have (their trees travel in one message).
constexpr size_t kMaxLateBinds = 8;

// The most layers an idmapped rootfs may have: they travel to the child in one SCM_RIGHTS
// message (the kernel's limit is 253 fds), and Docker's own limit is 127.
constexpr size_t kMaxIdmappedLayers = 128;

// v1: the `tasks` files of the sandbox's cgroup, one per hierarchy, come with "go"
// (sandbox.cpp, send_go); the child writes "0" into each and so moves itself.
constexpr size_t kMaxCgroupTasksFds = 8;
// The tag byte of "go": the fds that come with it are `tasks` files to join, or (kGoAndLeaveTag)
// as many to join and then as many of their parents, to leave by once the program runs, or
// (kGoLeaveAndLimitTag) those and then the run's `pids.max`, which counts the init until it
// leaves and which the init lowers by that one before it does.
constexpr char kGoTag = 'g';
constexpr char kGoAndLeaveTag = 'l';
constexpr char kGoLeaveAndLimitTag = 'p';

struct CapFree {
  void operator()(void* state) const { cap_free(state); }
};
using CapState = std::unique_ptr<std::remove_pointer_t<cap_t>, CapFree>;

struct CapabilityPlan {
  std::vector<cap_value_t> drop_from_bounding;  // every capability not kept
  std::vector<cap_value_t> keep;                // raised in ambient for non-root users
  CapState final_state;                         // effective = permitted = keep (inheritable too if ambient)
};

// `--net allow:`: the program's HTTP(S)_PROXY/http(s)_proxy point at the proxy on the host end
// of the sandbox's veth. That address exists only once the veth does, and the veth can only be
// made after clone (its sandbox end goes into the child's netns, named by the child's pid); the
// port only once the proxy listens on that address. The child must not allocate nor parse
// messages, so its envp entries for these variables point into this MAP_SHARED page, mapped
// before clone and therefore the same memory in parent and child: the parent fills it in after
// the proxy listens and before it writes "go", and the child reads it only after "go" (the
// socket write/read orders the two). execve copies the strings, and the page is gone from the
// program's address space.
class ProxyEnvPage {
 public:
  static constexpr size_t kSlots = 4;  // HTTP_PROXY HTTPS_PROXY http_proxy https_proxy
  static constexpr size_t kSlotBytes = 128;
  ProxyEnvPage();  // each slot holds "NAME=" until fill()
  ~ProxyEnvPage();
  ProxyEnvPage(const ProxyEnvPage&) = delete;
  ProxyEnvPage& operator=(const ProxyEnvPage&) = delete;

  char* slot(size_t index) const { return page_ + index * kSlotBytes; }
  // "http://ADDRESS:PORT" into every slot. Throws Error::invalid if it does not fit.
  void fill(const std::string& proxy_url) const;

 private:
  char* page_ = nullptr;
};

// OCI containers (Spec::container): what the container checklist (child_container.cpp) needs.
struct PlannedContainerMount {
  std::string source, destination, fstype, data;
  unsigned long flags = 0, propagation = 0;
  bool bind = false;
  bool source_is_dir = true;
};

struct PlannedDevice {
  std::string path;       // inside the container
  std::string host_path;  // "/dev/<name>" of the same node on the host, bound when mknod fails
  mode_t mode = 0;        // S_IFCHR/S_IFBLK/S_IFIFO | permissions
  dev_t dev = 0;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct PlannedHook {
  std::vector<std::string> args, env;  // storage
  std::vector<char*> argv, envp;       // null-terminated, into args/env
  std::string path, state_json;
  int timeout_s = 0;  // 0: none
};

struct ContainerPlan {
  struct Join {
    int nstype;  // CLONE_NEW*
    int fd;      // opened by the parent; setns() in the child
  };
  // The init's: all but the user and pid namespaces (below). An exec'd process's: the init's
  // namespaces, time then user first (setns into a namespace the host owns needs the host's
  // capabilities, which joining the user namespace gives up).
  std::vector<Join> joins;
  // A user namespace joined by path: the spawner process (container.cpp) joins it before the
  // init is cloned, so the namespaces the clone makes belong to it (runc's order). -1: none.
  int user_join_fd = -1;
  // A pid namespace joined by path: setns(CLONE_NEWPID) only places children, so the parent (or
  // the spawner) joins it before the init is cloned. -1: none.
  int pid_join_fd = -1;
  bool new_user_ns = false, new_net_ns = false, new_cgroup_ns = false, new_uts_ns = false,
       joined_uts_ns = false;
  unsigned long rootfs_propagation = 0;
  bool readonly_root = false, no_pivot = false;
  std::vector<PlannedContainerMount> mounts;
  std::vector<PlannedDevice> devices;
  std::vector<std::string> sysctl_paths, sysctl_values;  // "/proc/sys/net/ipv4/ip_forward"
  std::string domainname;
  long personality = -1;
  int umask = -1;
  std::string oom_score_adj;              // empty: unchanged
  std::vector<std::string> rlimit_names;  // "RLIMIT_NOFILE", parallel to ChildPlan::rlimits
  std::vector<cap_value_t> ambient;
  bool terminal = false;
  unsigned short rows = 0, columns = 0;
  int console_fd = -1;   // connected to --console-socket; the pty master goes there
  int start_fd = -1;     // listening socket `start` connects to
  int preserve_fds = 0;  // 3 .. 3+N-1 stay open across execve
  std::vector<PlannedHook> start_hooks;
  std::vector<PlannedHook> create_hooks;  // hooks.createContainer: before pivot_root
  // The init stops before pivot_root, its mounts made, reports Prepared and waits for a byte on
  // the sync socket (the caller's prestart/createRuntime hooks run meanwhile). Off: no stop.
  bool pause_before_pivot = false;
};

struct ChildPlan {
  // Rootfs: a tmpfs on scratch_dir holds the overlay's upper and work dirs and its mount point.
  std::string scratch_dir, scratch_options;
  std::string upper_dir, work_dir, root_dir;
  bool persistent_upper = false;  // upper_dir/work_dir are host directories the caller keeps
  // Rootless: mount points sandcell adds (/etc/resolv.conf), made in the tmpfs upper before the
  // overlay is mounted. A --rootfs directory may belong to host ids the user namespace does not
  // map, and the namespace's root may not create anything in a directory of an unmapped owner.
  struct UpperEntry {
    std::string path;  // absolute, under upper_dir
    bool directory = false;
  };
  std::vector<UpperEntry> upper_entries;
  std::string overlay_options;
  // --userns=auto: the layers the supervisor idmaps and sends, and where the child attaches them
  // (relative to the scratch dir, as upper_dir, work_dir and root_dir are then).
  bool user_namespace = false;
  std::vector<std::string> lower_layers, lower_mount_points;
  // --userns=auto on a kernel whose tmpfs has no user xattrs (before 6.6): the supervisor mounts
  // the overlay in the host's user namespace and sends it, one mount, instead of the layers; the
  // child attaches it at root_dir (userns_mounts.hpp, host_userns_overlay).
  bool overlay_from_supervisor = false;
  std::vector<PlannedMount> mounts;
  size_t late_binds = 0;  // of `mounts`: the child receives their trees before it mounts them
  std::vector<std::string> masked_paths, readonly_paths;
  std::string shm_options = "mode=1777,size=65536k";  // tmpfs data of /dev/shm (Spec::shm_bytes)
  bool readonly_root = false;  // Spec::rootfs_read_only: "/" remounted read-only, last mount step
  std::string hostname;
  bool host_network = false;
  // `--net none`: the child makes its network namespace itself, first thing, instead of clone3.
  // It is the costliest namespace to make (~0.6 ms here: every pernet subsystem initialises);
  // made by clone3 it holds up the supervisor too, made by the child it overlaps the
  // supervisor's cgroup setup. Not with a network the supervisor builds into the namespace by
  // the child's pid (veth, slirp, the socket transport): that must name the new one from the
  // clone on.
  bool unshare_network = false;
  // With unshare_network: a namespace made ahead by an earlier run (netns_pool.hpp) that the
  // child enters instead of making one; -1: none. Closed by the child.
  int pooled_netns_fd = -1;
  // Rootless: the sandbox gets a user namespace of its own, nested in sandcell's, with the same
  // ids; the parent writes its maps and the child waits for them before anything else.
  bool own_user_ns = false;
  bool setgroups_denied = false;  // single-id rootless: the kernel refuses setgroups(2)

  std::vector<Rlimit> rlimits;
  std::string cwd;
  // Docker's WORKDIR: a missing working directory is made, as root, before the user changes.
  // Not for a process joining a running sandbox (exec): by then the sandbox's own program may
  // have planted symlinks on the way, and runc's exec does not make it either.
  bool make_missing_cwd = true;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  CapabilityPlan caps;
  bool no_new_privileges = true;
  std::string apparmor_profile;     // empty: none (the host has no AppArmor)
  apparmor::LandlockPlan landlock;  // abi 0: not applied
  // Spec::seccomp_layers, installed after the program "go" brings: known before the clone (the
  // caller compiled them), so they ride in the plan.
  std::vector<std::vector<sock_filter>> seccomp_layers;
  std::vector<std::string> seccomp_layer_names;  // for the child's error message

  std::vector<std::string> args, env;
  std::vector<char*> argv, envp;            // point into args/env (and proxy_env), null-terminated
  std::unique_ptr<ProxyEnvPage> proxy_env;  // allow mode only
  // Socket transport: the child listens on 127.0.0.1:<port> in its own netns and hands the
  // listener to the supervisor's proxy (0: no listener).
  uint16_t proxy_listener_port = 0;
  // A pseudo-terminal for the program (RunOptions::on_terminal, SandboxProcess::terminal): its
  // stdin, stdout, stderr and controlling terminal (setsid + TIOCSCTTY just before execve). For
  // a sandbox, the child opens it in the sandbox's own devpts and sends the master to the
  // supervisor before "go"; an exec'd process gets its slave from the caller as its stdio.
  bool terminal = false;
  // A pooled run whose cgroup can be frozen (RunOptions::hand_over): the init takes the
  // program's word that it is done (kProgramDoneSignal) and reports it (ChildMessage::
  // ProgramDone), so the supervisor can freeze the sandbox and answer before the program's exit.
  bool program_done_signal = false;
  // RunOptions::outside_program: the init starts no program; once confined and out of the run's
  // cgroups it says so (ChildMessage::AwaitingProgram), learns the program's pid (in its pid
  // namespace, for program_done_signal) and waits, reaping what the program leaves.
  bool outside_program = false;
  std::string path_env;  // the PATH the program is searched in

  // File descriptors: the child's stdio, and its end of the sync socket. The supervisor's end is
  // inherited too (clone copies the fd table); the child closes it first, or it would hold the
  // socket open itself and never see the supervisor die.
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  int sync_fd = -1, supervisor_sync_fd = -1;

  // The supervisor cloned while pinned to its CPU (cpu_handoff.hpp): the child's first step puts
  // back this mask, sandcell's own, which the program then inherits.
  bool restore_cpus = false;
  cpu_set_t cpus{};

  std::unique_ptr<ContainerPlan> container;  // OCI containers only
};

// What follows the tag of "go" when the parent sends the process's seccomp program (Spec::seccomp;
// a sandbox's is made after the clone, while the child mounts): this header, then `count`
// sock_filter instructions. The child has no plan of it: every child gets its program this way.
struct SeccompHeader {
  uint32_t flags = 0;  // SECCOMP_FILTER_FLAG_*
  uint32_t count = 0;
  char name[64] = {};  // for the child's error message, truncated
};

// A message from the child on the sync socket. When all goes well the child sends only its
// proxy listener (socket transport) and its seccomp listener (if the filter reports denials),
// and the socket then closes at execve (it is close-on-exec): EOF means the program runs.
struct ChildMessage {
  // Ready: an OCI container finished its setup and waits for `start`.
  // Prepared: an OCI container's init made its mounts and waits, before pivot_root.
  // ProgramExited: the sandbox's init reaped the program; wait_status is its status.
  // ProgramExited with tree_ended: the init has also killed and reaped everything else in the
  // sandbox, so nothing of the run is left but the init itself, already on its way out;
  // children_usage is what all of it used (getrusage(RUSAGE_CHILDREN)).
  enum Kind : int {
    SetupFailed = 0,
    ExecFailed = 1,
    SeccompListener = 2,
    Ready = 3,
    ProgramExited = 4,
    ProxyListener = 5,
    Terminal = 6,        // the pty master (ChildPlan::terminal)
    Prepared = 7,        // an OCI init with pause_before_pivot: mounts made, waits to go on
    ProgramDone = 8,     // ChildPlan::program_done_signal: the program said it is done, wait_status
    AwaitingProgram = 9  // ChildPlan::outside_program: the init is confined and out of the cgroups
  };
  int kind = SetupFailed;
  int err = 0;          // errno of the failure
  int wait_status = 0;  // ProgramExited, ProgramDone
  int left_cgroups = 0;  // ProgramExited: the init moved itself out of the run's cgroups
  int tree_ended = 0;    // ProgramExited: no process of the sandbox is left but the init
  rusage children_usage{};  // ProgramExited with tree_ended
  char step[480] = {};  // the failed step, or the program that could not be executed
};

// Runs the checklist in child_setup.cpp and execs the program; never returns.
[[noreturn]] void run_child(const ChildPlan& plan);

// The OCI container's checklist (child_container.cpp): setup, "ready", wait for start, exec.
[[noreturn]] void run_container_child(const ChildPlan& plan);
// An exec'd process of a running container (child_exec.cpp): joins, confinement, exec.
[[noreturn]] void run_exec_child(const ChildPlan& plan);

// The AppArmor profile the sandbox enters ("" for none), loading it first where sandcell may.
std::string plan_apparmor(const Spec& spec);

}  // namespace sandcell::runtime
