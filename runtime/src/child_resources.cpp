// Child-side resource steps: the CPU mask, the cgroup (v1 join, cgroup namespace), rlimits.
// No allocation (see child_plan.hpp).
#include <fcntl.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include "child_steps.hpp"

namespace sandcell::runtime {

void restore_cpu_mask(const ChildPlan& plan) {
  if (plan.restore_cpus && sched_setaffinity(0, sizeof plan.cpus, &plan.cpus) < 0)
    child_fail(plan, "restore sandcell's CPU affinity");
}

void enter_cgroup_namespace(const ChildPlan& plan) {
  if (unshare(CLONE_NEWCGROUP) < 0) child_fail(plan, "unshare(CLONE_NEWCGROUP)");
}

// v1: "0" in a `tasks` file moves the writing thread; we are the only thread, so the whole
// process moves, and the kernel skips the grace period a write of another pid waits for.
void join_cgroup(const ChildPlan& plan, const GoMessage& go) {
  for (size_t i = 0; i < go.cgroup_tasks_count; ++i) {
    if (write(go.cgroup_tasks_fds[i], "0", 1) != 1) child_fail(plan, "join the sandbox's cgroup");
    close(go.cgroup_tasks_fds[i]);
  }
}

void apply_rlimits(const ChildPlan& plan) {
  for (size_t i = 0; i < plan.rlimits.size(); ++i) {
    const Rlimit& limit = plan.rlimits[i];
    rlimit wanted{.rlim_cur = limit.soft, .rlim_max = limit.hard};
    if (plan.container) {
      // OCI: exactly what config.json asks. Raising a hard limit needs CAP_SYS_RESOURCE in the
      // host's user namespace; say which limit it was (podman's defaults trip over this).
      if (setrlimit(limit.resource, &wanted) < 0)
        child_fail(
            plan,
            "process.rlimits: setrlimit %s soft=%llu hard=%llu (above the current hard limit "
            "without CAP_SYS_RESOURCE?)",
            plan.container->rlimit_names[i].c_str(), static_cast<unsigned long long>(limit.soft),
            static_cast<unsigned long long>(limit.hard));
      continue;
    }
    // Never ask for more than the current hard limit: without CAP_SYS_RESOURCE in the host's
    // user namespace raising it fails, and lowering is all a sandbox needs.
    rlimit current{};
    if (getrlimit(limit.resource, &current) < 0) child_fail(plan, "getrlimit %d", limit.resource);
    if (wanted.rlim_max > current.rlim_max) wanted.rlim_max = current.rlim_max;
    if (wanted.rlim_cur > wanted.rlim_max) wanted.rlim_cur = wanted.rlim_max;
    if (setrlimit(limit.resource, &wanted) < 0) child_fail(plan, "setrlimit %d", limit.resource);
  }
}

}  // namespace sandcell::runtime
