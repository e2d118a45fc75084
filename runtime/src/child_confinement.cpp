// Child-side confinement steps: the LSM (AppArmor's exec profile, or Landlock) and seccomp,
// last. No allocation (see child_plan.hpp).
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "child_steps.hpp"
#include "proc_handle.hpp"
#include "sandcell/apparmor/profile.hpp"

namespace sandcell::runtime {

int open_apparmor_attr(const ChildPlan& plan) {
  if (plan.apparmor_profile.empty()) return -1;
  int proc = open_private_procfs();
  if (proc < 0) child_fail(plan, "open a procfs of our own for AppArmor's attr/exec");
  int thread_self = open_proc_thread_self(proc);
  if (thread_self < 0) child_fail(plan, "open thread-self in our procfs");
  close(proc);
  return thread_self;
}

void apply_apparmor(const ChildPlan& plan, int thread_self) {
  if (plan.apparmor_profile.empty()) return;
  if (apparmor::change_onexec(plan.apparmor_profile.c_str(), thread_self) < 0)
    child_fail(plan, "apply AppArmor profile %s", plan.apparmor_profile.c_str());
  close(thread_self);
}

void apply_landlock(const ChildPlan& plan) {
  const char* step = nullptr;
  if (apparmor::restrict_with_landlock(plan.landlock, &step) < 0) child_fail(plan, "%s", step);
}

namespace {

// Spec::seccomp_layers, each a filter of its own on top of the stack (plain actions: they never
// ask for a listener).
void install_seccomp_layers(const ChildPlan& plan) {
  for (size_t i = 0; i < plan.seccomp_layers.size(); ++i) {
    sock_fprog program{.len = static_cast<unsigned short>(plan.seccomp_layers[i].size()),
                       .filter = const_cast<sock_filter*>(plan.seccomp_layers[i].data())};
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) < 0)
      child_fail(plan, "install seccomp filter %s", plan.seccomp_layer_names[i].c_str());
  }
}

}  // namespace

void install_seccomp(const ChildPlan& plan, const GoMessage& go) {
  if (go.seccomp == nullptr) return install_seccomp_layers(plan);
  sock_fprog program{.len = static_cast<unsigned short>(go.seccomp->count),
                     .filter = const_cast<sock_filter*>(go.seccomp_filter)};
  const unsigned int flags = go.seccomp->flags;
  const char* name = go.seccomp->name;
  long listener = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &program);
  if (listener < 0) child_fail(plan, "install seccomp filter %s", name);
  if (!(flags & SECCOMP_FILTER_FLAG_NEW_LISTENER)) return install_seccomp_layers(plan);
  // The supervisor answers the filter's notifications; the program must never hold the
  // listener itself (it could approve its own denied calls), so it is closed right after.
  send_fd_to_parent(plan, ChildMessage::SeccompListener, static_cast<int>(listener),
                    "the seccomp listener");
  close(static_cast<int>(listener));
  // After the hand-over: a layer that denies sendmsg or close must not keep the listener here.
  install_seccomp_layers(plan);
}

}  // namespace sandcell::runtime
