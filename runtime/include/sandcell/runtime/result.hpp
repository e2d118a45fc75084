#pragma once
// The result record: what happened in one sandbox run (docs/architecture.md, "Result record").
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell {
class WorkspaceDisk;
}

namespace sandcell::runtime {

enum class Status {
  Ok,
  ExitNonzero,
  Signaled,
  TimeoutWall,
  TimeoutCpu,
  Oom,
  PidsLimit,
  OutputLimit,
  // The program failed (exit_nonzero or signaled) and its disk-bounded filesystem was full at the
  // end: fewer than 1 MiB of blocks or no inodes left (README "Disk limits").
  DiskLimit,
  RuntimeError,
};
std::string to_string(Status s);

// Which mechanism enforced a limit.
// Ext4Loop and Tmpfs bound disk_bytes: a filesystem of that size (a loop-mounted ext4 image, or
// the tmpfs upper's size=).
enum class Enforcement { CgroupV2, CgroupV1, Rlimit, Supervisor, Ext4Loop, Tmpfs, None };
std::string to_string(Enforcement e);

struct DeniedSyscall {
  std::string name;
  uint64_t count = 0;
};

struct BlockedConnection {
  std::string host;
  uint16_t port = 0;
  std::string reason;
};

// `--userns=auto`: the host ids the sandbox's ids 0..size-1 map to.
struct UsernsMapping {
  uint32_t uid_base = 0, gid_base = 0, size = 0;
};

struct Isolation {
  std::vector<std::string> namespaces;
  std::string cgroup;  // "v2", "v1", "none"
  std::string seccomp;
  std::string lsm = "none";
  std::vector<std::string> capabilities;
  bool no_new_privs = true;
  bool rootless = false;
  std::string network = "none";
  std::string network_transport;  // "socket" | "veth" | "slirp4netns"; "" (null) without a network
  std::optional<UsernsMapping> userns;  // unset: no user namespace of its own
};

struct Events {
  std::vector<DeniedSyscall> denied_syscalls;
  std::vector<BlockedConnection> blocked_connections;
  uint64_t allowed_connections = 0;  // requests the allowlist proxy let through
  uint64_t oom_kills = 0;
  uint64_t pids_limit_hits = 0;
};

struct Result {
  Status status = Status::RuntimeError;
  std::optional<int> exit_code;
  std::optional<int> signal;
  uint64_t wall_ms = 0;
  uint64_t cpu_ms = 0;
  uint64_t peak_memory_bytes = 0;
  uint64_t stdout_bytes = 0;  // bytes the program wrote, including any beyond the cap
  uint64_t stderr_bytes = 0;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  Limits limits;
  std::map<std::string, Enforcement> enforced;  // "memory_bytes" → CgroupV1 ...
  Isolation isolation;
  Events events;
  std::string error;  // runtime_error: what failed; also execve failures
  std::vector<std::string> warnings;  // a limit weaker than asked (clamped rlimits)
  // A pooled run (RunOptions::hand_over) that was handed a request; pool_wait_ms is the
  // caller's (how long the prepared sandbox waited). Both in the record only when pooled.
  bool pooled = false;
  std::optional<uint64_t> pool_wait_ms;
  // A pooled program forked from a zygote (sandcell/agent/zygote.hpp): what it has in common with
  // every other program forked from the same zygote, being a copy of one process ("address_layout",
  // "str_hash_seed"). In the record as report.zygote.shares_with_siblings only when set.
  std::vector<std::string> shared_with_siblings;
  std::optional<uint64_t>
      disk_usage_bytes;  // "usage.disk_bytes": used on the bounded filesystem at the end
  // "limits.tmpfs_bytes" (only when there are any): each tmpfs mount's size by its destination
  // (`run --tmpfs DST:SIZE`, the Docker API's Tmpfs): past it a write gets ENOSPC.
  std::map<std::string, uint64_t> tmpfs_bytes;
  // "limits.volume_bytes" and "usage.volume_bytes" (a Docker API container's bounded volumes,
  // only when there are any): each volume's size and what it holds at the end, by name.
  std::map<std::string, uint64_t> volume_bytes;
  std::map<std::string, uint64_t> volume_usage_bytes;

  // Filled by callers that capture output instead of passing it through (`--json`).
  std::optional<std::string> stdout_text;
  std::optional<std::string> stderr_text;
};

nlohmann::json to_json(const Result& r);

// The disk bound in the record (README "Disk limits"), once the program is gone and while `disk`
// is mounted: limits.disk_bytes, enforced.disk_bytes (ext4-loop), usage.disk_bytes, and status
// disk_limit for a program that failed (exit_nonzero or signaled) with its filesystem full. No
// disk: enforced none and a warning that the bound is not enforced on `where`, and why.
void record_disk(Result& r, const WorkspaceDisk* disk, uint64_t bound, const std::string& where,
                 const std::string& unbounded);

// A Docker API container's volume in the record (docs/docker-api.md, "Volumes"), once the
// program is gone and while `disk` is mounted: limits.volume_bytes[name], usage.volume_bytes[name],
// enforced.volume_bytes ext4-loop, and status disk_limit for a program that failed (exit_nonzero
// or signaled) with a volume it could write full. No disk: enforced.volume_bytes none and a
// warning naming the volume and why.
void record_volume(Result& r, const std::string& name, const WorkspaceDisk* disk, bool writable,
                   const std::string& unbounded);

// The exit code `sandcell run` uses for a result: the program's own code, 128+N for signal N,
// 125 when sandcell failed, 126 not executable, 127 not found.
int exit_code_for(const Result& r);

}  // namespace sandcell::runtime
