#pragma once
// runtime::Spec — the one model of "what to run and how" (a C++ view of the OCI runtime-spec
// config.json). Every entry point (CLI flags, images, config.json, skills, agents) produces one;
// runtime::run_sandbox() is the only code that turns it into kernel state.
#include <linux/filter.h>
#include <sys/types.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/seccomp/program.hpp"

namespace sandcell::runtime {

// Resource limits as requested. An unset limit is not applied.
struct Limits {
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> pids;
  std::optional<double> cpus;          // CPU bandwidth, in cores (cgroup cpu quota)
  std::optional<double> wall_s;        // wall-clock deadline
  std::optional<double> cpu_s;         // CPU time across the whole tree
  std::optional<uint64_t> output_bytes;  // per stream (stdout, stderr)
  // What the sandbox may write to disk-backed storage (`--disk`; README "Disk limits"). `run`
  // sizes its tmpfs upper with it; `code` and the servers give each workspace a filesystem image
  // of this size (sandcell/base/workspace_disk.hpp).
  std::optional<uint64_t> disk_bytes;
  // Relative CPU weight under contention (Docker's --cpu-shares, 2..262144): v1 cpu.shares,
  // v2 cpu.weight converted as runc does (cpu_shares_to_weight, cgroup.hpp). Not a bound.
  std::optional<uint64_t> cpu_shares = std::nullopt;
};

// The strict defaults of `sandcell run`; documented in README.md.
Limits default_limits();

struct BindMount {
  std::string source;       // host path
  std::string destination;  // absolute path inside the sandbox
  bool read_only = false;
  // With UserNamespace::Auto: the bind is idmapped with the sandbox's user namespace, as the
  // image layers are, so its ids are the host's same-numbered ids (the sandbox's root reads and
  // writes host uid 0's files there), whatever range the run got. Without it the sandbox's ids
  // are the host's anyway, and this changes nothing.
  bool idmap = false;
  // The source is still being made when the run starts (a workspace disk mounting): a directory
  // that exists once RunOptions::before_binds has returned. With UserNamespace::Auto the
  // supervisor calls it after the clone, while the child sets up its root, and the child waits
  // for this mount's source right before its declared mounts; otherwise it is called first.
  bool late = false;
};

// Always nosuid,nodev. Its pages are charged to the memory cgroup of whoever writes them: the
// sandbox's memory limit bounds what its tmpfs mounts hold, whatever their size.
struct TmpfsMount {
  std::string destination;
  uint64_t size_bytes = 64ull << 20;
  mode_t mode = 01777;
  bool read_only = false;
  bool no_exec = false;
};

struct Rlimit {
  int resource;  // RLIMIT_*
  uint64_t soft;
  uint64_t hard;
};

// The resource named "RLIMIT_NOFILE" (the OCI spec's and getrlimit(2)'s names), nullopt for
// anything else; and back ("RLIMIT_?" for a number it does not know).
std::optional<int> rlimit_resource(std::string_view name);
const char* rlimit_name(int resource);

// The compiled seccomp program the child installs, how the supervisor answers its notifications,
// and where the Spec's program comes from (a program, or a function run_sandbox() calls while the
// child sets up its mounts): the seccomp/ library's types (it compiles them), named here as the
// Spec uses them.
using SeccompNotifyPlan = seccomp::NotifyPlan;
using SeccompProgram = seccomp::Program;
using SeccompSource = seccomp::Source;

// None: an own network namespace with only `lo`. Host: the host's network namespace (image
// builds, as `docker build --network host`); never for untrusted code. Allow: a veth whose only
// reachable address is sandcell's allowlist proxy. Full: NAT, minus private and metadata ranges.
// (docs/architecture.md, "Network policy".)
enum class NetworkMode { None, Host, Allow, Full };

// How an allow or full sandbox is connected (`--net-transport`; docs/architecture.md, "Network
// policy"):
//   Socket: allow mode without any link: the proxy's listening socket is made inside the
//           sandbox's netns (127.0.0.1:3128) and served by the supervisor; nothing routable
//           exists inside. Works rootless.
//   Veth:   a veth pair into the sandbox and the nft table `inet sandcell` (root only).
//   Slirp:  full mode through slirp4netns (user-mode TCP/IP), with the blocked ranges dropped by
//           nft rules inside the sandbox's own netns. Works rootless.
//   Auto:   allow → Socket; full → Veth as root, Slirp rootless.
enum class NetworkTransport { Auto, Socket, Veth, Slirp };
// Host: the sandbox's uid 0 is the host's uid 0 (without capabilities). Auto (`--userns=auto`,
// root only): the sandbox gets its own user namespace whose ids 0..65535 map to a range of
// unprivileged host ids no other live sandbox holds (runtime/src/userns_pool.hpp); the image layers are
// idmapped so their files keep their owners inside.
enum class UserNamespace { Host, Auto };

// What `--net allow:...`, `--net-allow-file`, `--net-hosts` and `--net-allow-cidr` asked for;
// checked and parsed by the runtime before the sandbox starts.
struct NetworkPolicy {
  std::vector<std::string> allow;          // host names and "*.suffix" wildcards (allow mode)
  std::string allow_file;                  // one entry per line (allow mode)
  std::string hosts_file;                  // hosts-file format: the proxy resolves only from it
  std::vector<std::string> allow_cidrs;    // blocked ranges opened anyway ("10.1.2.0/24")
  NetworkTransport transport = NetworkTransport::Auto;
  std::string resolv_conf;                 // full mode: the resolvers' source (default /etc/resolv.conf)
};

// --- The parts of an OCI runtime-spec config.json that `sandcell run` has no flag for. A Spec
// with `container` set runs as an OCI container (sandcell-oci): the bundle's root directory
// instead of the overlay, exactly the config's mounts and namespaces, and no supervisor.

// One entry of linux.namespaces: type is the OCI name ("pid", "network", "mount", "ipc", "uts",
// "user", "cgroup", "time"); a path joins that namespace instead of creating one.
struct Namespace {
  std::string type;
  std::string path;
};

struct IdMapping {
  uint32_t container_id = 0, host_id = 0, size = 0;
  bool operator==(const IdMapping&) const = default;
};

// linux.timeOffsets: one clock's offset in the container's new time namespace, written to
// timens_offsets before the init enters it.
struct TimeOffset {
  std::string clock;  // "monotonic" or "boottime"
  int64_t secs = 0;
  uint32_t nanosecs = 0;  // < 1e9
};

// One entry of config.json "mounts", its options already turned into mount(2) terms.
struct ContainerMount {
  std::string destination, type, source;
  unsigned long flags = 0;        // MS_RDONLY, MS_NOSUID, ... (MS_BIND|MS_REC for rbind)
  unsigned long propagation = 0;  // MS_PRIVATE / MS_SHARED / MS_SLAVE / MS_UNBINDABLE (| MS_REC)
  std::string data;               // the options mount(2) does not know as flags ("mode=755")
};

// linux.devices: a node the container gets in its /dev.
struct Device {
  std::string path;
  char type = 'c';  // c, b, p (u is c)
  uint32_t major = 0, minor = 0;
  uint32_t file_mode = 0666;
  uid_t uid = 0;
  gid_t gid = 0;
};

struct CapabilitySets {
  std::vector<std::string> bounding, effective, permitted, inheritable, ambient;
};

// A hook the container's init runs itself, inside the container's namespaces: startContainer
// after `start`, before the program; createContainer during create, before pivot_root (its path
// resolved in the runtime's mount tree, which the init still sees then). The state JSON arrives
// on the hook's stdin; after timeout_s seconds (0: none) the hook is killed and has failed.
struct StartHook {
  std::string path;
  std::vector<std::string> args, env;
  std::string state_json;
  int timeout_s = 0;
};

struct Container {
  std::string id;
  std::vector<StartHook> start_hooks;
  std::vector<StartHook> create_hooks;  // hooks.createContainer
  std::string rootfs;             // absolute path of the root directory
  bool rootfs_readonly = false;
  unsigned long rootfs_propagation = 0;  // 0: MS_REC|MS_PRIVATE, as runc
  bool no_pivot = false;          // MS_MOVE + chroot instead of pivot_root (rootfs on ramfs)
  std::vector<ContainerMount> mounts;
  std::vector<Namespace> namespaces;
  std::vector<IdMapping> uid_mappings, gid_mappings;
  std::vector<TimeOffset> time_offsets;
  std::map<std::string, std::string> sysctl;
  std::vector<Device> devices;
  CapabilitySets capabilities;
  std::string domainname;
  std::string apparmor_profile;   // process.apparmorProfile; empty: none
  std::optional<unsigned long> personality;
  std::optional<uint32_t> umask;
  std::optional<int> oom_score_adj;
  bool terminal = false;
  uint16_t console_rows = 0, console_columns = 0;
  std::string cgroups_path;  // linux.cgroupsPath; sandcell-oci resolves and makes it
                             // (oci/src/cgroups_path.cpp)
};

struct Spec {
  // Process
  std::vector<std::string> args;
  std::vector<std::string> env;  // "K=V"
  std::string cwd = "/";
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> additional_gids;
  std::vector<std::string> capabilities;  // names kept ("CAP_NET_BIND_SERVICE"); all others dropped
  bool no_new_privileges = true;
  std::vector<Rlimit> rlimits;
  SeccompSource seccomp;  // default: unconfined
  // Filters installed after `seccomp`, each its own filter in the kernel's stack (a caller's
  // profile layered on sandcell's: Docker's --security-opt seccomp=). The kernel runs every
  // filter of the stack and the strictest answer wins, so a layer can deny more, never allow
  // more. Compiled before the run with plain actions (no notify: a stack has one listener).
  std::vector<SeccompProgram> seccomp_layers;

  // Root filesystem: read-only lower directories (top first) under a throw-away tmpfs upper.
  std::vector<std::string> rootfs_layers;
  uint64_t rootfs_upper_bytes = 1ull << 30;
  // Image builds keep what a step wrote: a host directory as the overlay's upper layer (and an
  // empty work directory on the same filesystem). Empty: a tmpfs upper that is thrown away.
  std::string rootfs_upper_dir, rootfs_work_dir;
  // The root mount made read-only once everything is mounted on it (Docker's --read-only):
  // writes there fail with EROFS whatever the LSM allows; mounts on it (tmpfs, volumes,
  // /dev/shm) keep their own flags.
  bool rootfs_read_only = false;
  // The size of the tmpfs at /dev/shm (Docker's --shm-size; its default is 64 MiB too).
  uint64_t shm_bytes = 64ull << 20;

  std::string hostname = "sandcell";
  std::vector<BindMount> bind_mounts;
  std::vector<TmpfsMount> tmpfs_mounts;
  std::vector<std::string> masked_paths;    // defaults: Docker's list
  std::vector<std::string> readonly_paths;  // defaults: Docker's list

  // Linux security module layer: AppArmor where the host has it, else Landlock, which makes
  // the root read/execute only with writes allowed below these paths (plus the working
  // directory, read-write bind mounts and tmpfs mounts).
  bool lsm = true;
  std::vector<std::string> writable_paths;

  NetworkMode network = NetworkMode::None;
  NetworkPolicy network_policy;
  Limits limits;
  UserNamespace user_namespace = UserNamespace::Host;

  std::optional<Container> container;  // set by sandcell-oci only
};

// A Spec with sandcell's strict defaults: Docker's masked and read-only paths, core 0,
// nofile 1024, memlock 0, default limits, loopback-only network, no capabilities.
Spec default_spec();

// "K=V overrides" for an environment (image Env over the defaults, --env over the image's): each
// entry of `overrides` replaces the entries of `env` of the same name, a later one an earlier one,
// and the result lists them last in the order of their last occurrence. The name is what precedes
// the first '=' (an entry without '=' is all name and replaces only itself). Linear: an image may
// list 100k entries.
void merge_env(std::vector<std::string>& env, const std::vector<std::string>& overrides);

// "512m" → 536870912. Accepts a plain number of bytes and k/m/g/t suffixes (binary, either
// case, optional trailing "b"). Throws Error::invalid naming `what` on anything else.
uint64_t parse_size(const std::string& text, const std::string& what);

// "1.5" → 1.5; must be a positive finite number. Throws Error::invalid naming `what`.
double parse_positive_number(const std::string& text, const std::string& what);

// `--net none | allow:HOST[,HOST...] | full` → spec.network and spec.network_policy.allow (the
// allow file, hosts file and CIDRs are set by the caller). Throws Error::invalid; `has_allow_file`
// lets `allow:` come without hosts when a file lists them.
void set_network_arg(const std::string& net, bool has_allow_file, Spec& spec);

// `--net-transport auto | socket | veth | slirp`. Throws Error::invalid.
NetworkTransport parse_network_transport(const std::string& text);

}  // namespace sandcell::runtime
