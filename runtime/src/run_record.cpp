// The result record's parts (run_record.hpp).
#include "run_record.hpp"

#include <sys/wait.h>

#include <cstring>

#include "child_plan.hpp"
#include "sandcell/base/rootless.hpp"
#include "spec_checks.hpp"

namespace sandcell::runtime {
namespace {

std::string mode_name(CgroupHost::Mode mode) {
  switch (mode) {
    case CgroupHost::Mode::V2:
      return "v2";
    case CgroupHost::Mode::V1:
      return "v1";
    case CgroupHost::Mode::None:
      return "none";
  }
  return "none";
}

std::string lsm_name(const Spec& spec) {
  if (!spec.lsm) return "none";
  std::string landlock = lsm_host().landlock_abi > 0 ? "landlock:abi" + std::to_string(lsm_host().landlock_abi) : "";
  std::string apparmor = plan_apparmor(spec);
  if (!apparmor.empty()) return landlock.empty() ? "apparmor:" + apparmor : "apparmor:" + apparmor + "+" + landlock;
  return landlock.empty() ? "none" : landlock;
}

std::vector<std::string> namespaces_of(const Spec& spec) {
  std::vector<std::string> names = {"pid", "mount", "network", "uts", "ipc", "cgroup"};
  if (spec.network == NetworkMode::Host) std::erase(names, "network");
  if (rootless() || spec.user_namespace == UserNamespace::Auto) names.push_back("user");
  return names;
}

Status status_of(const SupervisionOutcome& o, const CgroupUsage& usage) {
  if (o.output_limit) return Status::OutputLimit;
  bool killed = o.wall_timeout || o.cpu_timeout;
  if (!killed && WIFEXITED(o.wait_status) && WEXITSTATUS(o.wait_status) == 0) return Status::Ok;
  if (usage.oom_kills > 0) return Status::Oom;
  if (usage.pids_limit_hits > 0) return Status::PidsLimit;
  if (o.cpu_timeout) return Status::TimeoutCpu;
  if (o.wall_timeout) return Status::TimeoutWall;
  if (WIFSIGNALED(o.wait_status)) return Status::Signaled;
  return Status::ExitNonzero;
}

}  // namespace

Isolation isolation_of(const Spec& spec, const NetworkPlan& network, CgroupHost::Mode mode) {
  return {.namespaces = namespaces_of(spec),
          .cgroup = mode_name(mode),
          .seccomp = "unconfined",  // until the program is made (make_seccomp_program)
          .lsm = lsm_name(spec),
          .capabilities = spec.capabilities,
          .no_new_privs = spec.no_new_privileges,
          .rootless = rootless(),
          .network = network_name(spec.network),
          .network_transport = transport_name(network.transport),
          .userns = std::nullopt};  // set once a range is claimed
}

std::map<std::string, Enforcement> enforce_limits(Cgroup& cgroup, const Limits& limits) {
  Limits kernel = limits;
  // sandcell's init is in the cgroup when it starts the program: one more for it, which a v1
  // init takes back when it leaves (Cgroup::open_pids_limit). --pids N is N for the program.
  if (kernel.pids) *kernel.pids += 1;
  auto enforced = cgroup.apply(kernel);
  if (limits.wall_s) enforced["wall_s"] = Enforcement::Supervisor;
  if (limits.output_bytes) enforced["output_bytes"] = Enforcement::Supervisor;
  if (limits.cpu_s)
    enforced["cpu_s"] =
        cgroup.mode() == CgroupHost::Mode::None ? Enforcement::None : Enforcement::Supervisor;
  for (const char* name : {"memory_bytes", "pids", "cpus"})
    enforced.try_emplace(name, Enforcement::None);
  if (limits.cpu_shares) enforced.try_emplace("cpu_shares", Enforcement::None);
  return enforced;
}

// `run`'s writes outside its bind mounts land in the tmpfs upper, whose size= (child_plan.cpp) is
// the disk bound. An upper directory given by the caller (a build's RUN step: the builder's own
// tmpfs, build_run_step.cpp) is bounded, if at all, by the caller: `none` when a bound was asked.
void record_disk_bound(const Spec& spec, Result& result) {
  if (spec.container) return;
  if (!spec.rootfs_upper_dir.empty()) {
    if (spec.limits.disk_bytes) result.enforced["disk_bytes"] = Enforcement::None;
    return;
  }
  result.limits.disk_bytes = spec.rootfs_upper_bytes;
  result.enforced["disk_bytes"] = Enforcement::Tmpfs;
}

void describe_failure(Result& result, const ChildMessage& failure) {
  result.status = Status::RuntimeError;
  std::string step(failure.step, strnlen(failure.step, sizeof failure.step));
  if (failure.kind != ChildMessage::ExecFailed) {
    result.error = step + ": " + strerror(failure.err);
    return;
  }
  result.exit_code = failure.err == ENOENT ? 127 : 126;
  result.error = failure.err == ENOENT ? step + ": command not found in the sandbox"
                                       : step + ": cannot execute: " + strerror(failure.err);
}

void fill_outcome(Result& result, const SupervisionOutcome& o, const CgroupUsage& usage,
                  const Limits& limits) {
  result.status = status_of(o, usage);
  if (WIFEXITED(o.wait_status)) result.exit_code = WEXITSTATUS(o.wait_status);
  if (WIFSIGNALED(o.wait_status)) result.signal = WTERMSIG(o.wait_status);
  uint64_t rusage_cpu_ms =
      static_cast<uint64_t>(o.usage.ru_utime.tv_sec + o.usage.ru_stime.tv_sec) * 1000 +
      static_cast<uint64_t>(o.usage.ru_utime.tv_usec + o.usage.ru_stime.tv_usec) / 1000;
  result.cpu_ms = usage.cpu_ns > 0 ? usage.cpu_ns / 1'000'000 : rusage_cpu_ms;
  result.peak_memory_bytes = usage.peak_memory_bytes > 0
                                 ? usage.peak_memory_bytes
                                 : static_cast<uint64_t>(o.usage.ru_maxrss) * 1024;
  result.events.oom_kills = usage.oom_kills;
  result.events.pids_limit_hits = usage.pids_limit_hits;
  if (o.interrupted_by) {
    result.status = Status::RuntimeError;
    result.error = std::string("sandcell was interrupted by ") + sigabbrev_np(o.interrupted_by) +
                   "; the sandbox was killed";
  }
  (void)limits;
}

// RLIMIT_CPU (rootless_limits.cpp) ends the program with SIGXCPU at the soft limit, which nothing
// else sends, or, when the program catches or ignores that, with SIGKILL at the hard one a second
// later; the supervisor sends no SIGKILL without saying why, so a SIGKILL after about the limit's
// CPU time is taken as the limit. getrusage counts the exact run time, the limit is checked
// against tick samples that may be a quarter off either way under load, hence the margin (the
// hard limit is a second past the soft one, so a SIGKILL there is well above it).
bool cpu_rlimit_hit(const Result& result) {
  auto how = result.enforced.find("cpu_s");
  if (how == result.enforced.end() || how->second != Enforcement::Rlimit || !result.limits.cpu_s)
    return false;
  if (result.status != Status::Signaled) return false;
  if (result.signal == SIGXCPU) return true;
  return result.signal == SIGKILL &&
         static_cast<double>(result.cpu_ms) >= *result.limits.cpu_s * 1000 * 0.8;
}

}  // namespace sandcell::runtime
