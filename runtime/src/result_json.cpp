#include <nlohmann/json.hpp>

#include "sandcell/runtime/result.hpp"

namespace sandcell::runtime {

std::string to_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::ExitNonzero: return "exit_nonzero";
    case Status::Signaled: return "signaled";
    case Status::TimeoutWall: return "timeout_wall";
    case Status::TimeoutCpu: return "timeout_cpu";
    case Status::Oom: return "oom";
    case Status::PidsLimit: return "pids_limit";
    case Status::OutputLimit: return "output_limit";
    case Status::DiskLimit:
      return "disk_limit";
    case Status::RuntimeError: return "runtime_error";
  }
  return "runtime_error";
}

std::string to_string(Enforcement e) {
  switch (e) {
    case Enforcement::CgroupV2: return "cgroup-v2";
    case Enforcement::CgroupV1: return "cgroup-v1";
    case Enforcement::Rlimit: return "rlimit";
    case Enforcement::Supervisor: return "supervisor";
    case Enforcement::Ext4Loop:
      return "ext4-loop";
    case Enforcement::Tmpfs:
      return "tmpfs";
    case Enforcement::None: return "none";
  }
  return "none";
}

template <typename T>
static nlohmann::json optional_json(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

static nlohmann::json limits_json(const Limits& l) {
  nlohmann::json j = {{"memory_bytes", optional_json(l.memory_bytes)},
                      {"pids", optional_json(l.pids)},
                      {"cpus", optional_json(l.cpus)},
                      {"wall_s", optional_json(l.wall_s)},
                      {"cpu_s", optional_json(l.cpu_s)},
                      {"output_bytes", optional_json(l.output_bytes)},
                      {"disk_bytes", optional_json(l.disk_bytes)}};
  // Only when asked (Docker's --cpu-shares): a relative weight, not a bound every run has.
  if (l.cpu_shares) j["cpu_shares"] = *l.cpu_shares;
  return j;
}

static nlohmann::json userns_json(const std::optional<UsernsMapping>& m) {
  if (!m) return nullptr;
  return {{"uid_base", m->uid_base}, {"gid_base", m->gid_base}, {"size", m->size}};
}

static nlohmann::json isolation_json(const Isolation& i) {
  return {{"namespaces", i.namespaces}, {"cgroup", i.cgroup},         {"seccomp", i.seccomp},
          {"lsm", i.lsm},               {"capabilities", i.capabilities}, {"no_new_privs", i.no_new_privs},
          {"rootless", i.rootless},     {"network", i.network},
          {"network_transport", i.network_transport.empty() ? nlohmann::json(nullptr)
                                                            : nlohmann::json(i.network_transport)},
          {"userns", userns_json(i.userns)}};
}

static nlohmann::json events_json(const Events& e) {
  nlohmann::json denied = nlohmann::json::array();
  for (const auto& d : e.denied_syscalls) denied.push_back({{"name", d.name}, {"count", d.count}});
  nlohmann::json blocked = nlohmann::json::array();
  for (const auto& b : e.blocked_connections)
    blocked.push_back({{"host", b.host}, {"port", b.port}, {"reason", b.reason}});
  return {{"denied_syscalls", denied}, {"blocked_connections", blocked},
          {"allowed_connections", e.allowed_connections}, {"oom_kills", e.oom_kills},
          {"pids_limit_hits", e.pids_limit_hits}};
}

nlohmann::json to_json(const Result& r) {
  nlohmann::json enforced = nlohmann::json::object();
  for (const auto& [limit, how] : r.enforced) enforced[limit] = to_string(how);
  nlohmann::json j = {
      {"status", to_string(r.status)},
      {"exit_code", optional_json(r.exit_code)},
      {"signal", optional_json(r.signal)},
      {"wall_ms", r.wall_ms},
      {"cpu_ms", r.cpu_ms},
      {"peak_memory_bytes", r.peak_memory_bytes},
      {"stdout_bytes", r.stdout_bytes},
      {"stderr_bytes", r.stderr_bytes},
      {"stdout_truncated", r.stdout_truncated},
      {"stderr_truncated", r.stderr_truncated},
      {"limits", limits_json(r.limits)},
      {"enforced", enforced},
      {"isolation", isolation_json(r.isolation)},
      {"events", events_json(r.events)},
      {"usage", {{"disk_bytes", optional_json(r.disk_usage_bytes)}}},
  };
  if (!r.tmpfs_bytes.empty()) {
    j["limits"]["tmpfs_bytes"] = r.tmpfs_bytes;
    j["enforced"]["tmpfs_bytes"] = to_string(Enforcement::Tmpfs);
  }
  if (!r.volume_bytes.empty()) {
    j["limits"]["volume_bytes"] = r.volume_bytes;
    j["usage"]["volume_bytes"] = r.volume_usage_bytes;
  }
  if (!r.error.empty()) j["error"] = r.error;
  if (!r.warnings.empty()) j["warnings"] = r.warnings;
  if (r.pooled) {
    j["pooled"] = true;
    j["pool_wait_ms"] = optional_json(r.pool_wait_ms);
  }
  if (!r.shared_with_siblings.empty())
    j["zygote"] = {{"shares_with_siblings", r.shared_with_siblings}};
  // Invalid UTF-8 from the program is replaced, not fatal: the record must always serialise.
  if (r.stdout_text) j["stdout"] = *r.stdout_text;
  if (r.stderr_text) j["stderr"] = *r.stderr_text;
  return j;
}

int exit_code_for(const Result& r) {
  if (r.status == Status::RuntimeError) {
    if (r.exit_code) return *r.exit_code;  // 126/127 for exec failures
    return 125;
  }
  if (r.signal) return 128 + *r.signal;
  return r.exit_code.value_or(125);
}

}  // namespace sandcell::runtime
