#pragma once
// OCI containers without a supervisor (sandcell-oci). `create` clones the container's init,
// runs its setup checklist up to "wait for start" and returns: the caller exits, and the init
// is reparented to whoever reaps it (conmon, containerd-shim, both subreapers). `start`
// releases it. Cgroups are the caller's: sandcell-oci makes and removes them
// (oci/src/cgroups_path.cpp).
#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::runtime {

struct ContainerIo {
  int stdin_fd = 0, stdout_fd = 1, stderr_fd = 2;
  int console_socket = -1;  // connected unix socket: the pty master is sent there (terminal)
  int preserve_fds = 0;     // fds 3 .. 3+N-1 of the caller stay open in the container
};

struct CreatedContainer {
  pid_t pid = 0;
  std::vector<std::string> cgroup_paths;
};

// Clones the init into the spec's namespaces and into `cgroup_dirs` (one directory per
// hierarchy, made and limited by the caller: sandcell-oci follows linux.cgroupsPath) and waits
// until it is set up and blocked in accept() on `start_listener` (a listening unix socket).
// Throws Error naming the failed step; on failure the init is gone (the caller removes the
// cgroups it made). `placed`, when given, runs with the init's pid before it is attached to
// `cgroup_dirs` and told to go on: the systemd cgroup driver has systemd move it into a new
// scope there (and passes no directories), so the init runs nothing before it is inside.
// `prepared`, when given, runs with the init's pid while the init waits after its mounts and
// devices are made, before pivot_root (the runtime-spec's moment for the prestart and
// createRuntime hooks); a throw from it fails create. Without it the init does not stop there.
// The spec's createContainer hooks (Container::create_hooks) run in the init right after.
CreatedContainer create_container(const Spec& spec, int start_listener, const ContainerIo& io,
                                  const std::vector<std::string>& cgroup_dirs,
                                  const std::function<void(pid_t)>& placed = {},
                                  const std::function<void(pid_t)>& prepared = {});

// Over a connection to the container's start socket (SOCK_SEQPACKET): lets the init exec its
// program. Returns once the program runs; throws Error with the init's report if exec failed.
void start_container(int start_connection);

struct ExecTarget {
  pid_t init_pid = 0;
  std::vector<std::string> cgroup_paths;
};

// Runs spec's process (args, env, cwd, user, capabilities, rlimits, seccomp, apparmor, terminal)
// inside the running container: joins the init's namespaces and cgroups. Returns the new
// process' pid once it exec'd (a child of the caller); throws Error if it could not.
pid_t exec_in_container(const Spec& spec, const ExecTarget& target, const ContainerIo& io);

// Cgroup operations on a container recorded by its cgroup directories.
std::vector<pid_t> container_pids(const std::vector<std::string>& cgroup_paths);
void freeze_container(const std::vector<std::string>& cgroup_paths, bool frozen);
bool container_frozen(const std::vector<std::string>& cgroup_paths);

// What a container's cgroups account, read from their files (`docker stats`): v1 (memory,
// cpuacct, pids hierarchies, each its own directory) or v2 (one directory). A figure whose
// controller has no directory among the paths is nullopt; a limit of "max" (or v1's page-rounded
// huge value) is nullopt too.
struct ContainerCgroupStats {
  std::optional<uint64_t> memory_usage, memory_limit;
  std::map<std::string, uint64_t> memory_stat;  // memory.stat's keys and values
  std::optional<uint64_t> cpu_total_ns;
  uint64_t cpu_user_ns = 0, cpu_system_ns = 0;
  std::vector<uint64_t> cpu_percpu_ns;  // v1 only (cpuacct.usage_percpu)
  std::optional<uint64_t> pids_current, pids_limit;
};
ContainerCgroupStats container_cgroup_stats(const std::vector<std::string>& cgroup_paths);

}  // namespace sandcell::runtime
