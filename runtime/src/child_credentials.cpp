// Child-side steps of who the program is and what it may do: the bounding set, uid/gid and
// groups, capabilities, no_new_privs. No allocation (see child_plan.hpp).
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "child_steps.hpp"

namespace sandcell::runtime {

int child_setgroups(size_t count, const gid_t* groups) {
  return static_cast<int>(syscall(SYS_setgroups, count, groups));
}

int child_setresgid(gid_t gid) {
  return static_cast<int>(syscall(SYS_setresgid, gid, gid, gid));
}

int child_setresuid(uid_t uid) {
  return static_cast<int>(syscall(SYS_setresuid, uid, uid, uid));
}

void drop_bounding_set(const ChildPlan& plan) {
  for (cap_value_t cap : plan.caps.drop_from_bounding)
    if (cap_drop_bound(cap) < 0 && errno != EINVAL)
      child_fail(plan, "drop capability %d from the bounding set", cap);
}

void switch_user(const ChildPlan& plan) {
  // KEEPCAPS: a requested capability must survive the switch away from uid 0.
  if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_KEEPCAPS)");
  // Single-id rootless: setgroups is denied for good (user_namespaces(7)); there are no groups
  // to set (ChildPlanBuilder::for_sandbox refused any), and the inherited ones cannot be dropped.
  if (!plan.setgroups_denied && child_setgroups(plan.groups.size(), plan.groups.data()) < 0)
    child_fail(plan, "setgroups");
  if (child_setresgid(plan.gid) < 0) child_fail(plan, "setresgid %u", plan.gid);
  if (child_setresuid(plan.uid) < 0) child_fail(plan, "setresuid %u", plan.uid);
  if (prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_KEEPCAPS, 0)");
}

void set_capabilities(const ChildPlan& plan) {
  if (cap_set_proc(plan.caps.final_state.get()) < 0) child_fail(plan, "set capabilities");
  // One prctl. libcap's cap_reset_ambient() first asks PR_CAP_AMBIENT_IS_SET of every
  // capability until one is set: 42 system calls on the way of every run when none is.
  // EINVAL: a kernel without ambient capabilities (< 4.3), so none to clear.
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
    child_fail(plan, "clear ambient capabilities");
  // Root keeps its bounding set across execve; any other uid only keeps ambient capabilities.
  if (plan.uid == 0 && !plan.container) return;
  for (cap_value_t cap : plan.caps.keep)
    // OCI, as runc: an ambient capability that is not also inheritable and permitted cannot be
    // raised; that is the config's inconsistency, not a reason to refuse the container.
    if (cap_set_ambient(cap, CAP_SET) < 0 && !(plan.container && errno == EPERM))
      child_fail(plan, "raise ambient capability %d", cap);
}

void set_no_new_privs(const ChildPlan& plan) {
  if (!plan.no_new_privileges) return;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) child_fail(plan, "prctl(PR_SET_NO_NEW_PRIVS)");
}

}  // namespace sandcell::runtime
