// Runs in the new namespaces, between clone and execve. The order is the security argument:
// everything that needs privilege happens before the privileges go, seccomp comes last because
// every step before it needs syscalls it denies.
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "child_steps.hpp"
#include "sandcell/base/timeline.hpp"

namespace sandcell::runtime {

// One step per line, the reason in a column beside it.
// clang-format off
[[noreturn]] void run_child(const ChildPlan& plan) {
  timeline::mark("child");        // SANDCELL_TIMELINE only (sandcell/base/timeline.hpp)
  restore_cpu_mask(plan);         // the supervisor cloned pinned to its CPU (cpu_handoff.hpp)
  close(plan.supervisor_sync_fd);  // so a supervisor killed before "go" is a hang-up, not a hang
  const bool pooled_netns = enter_network_namespace(plan);  // --net none: made ahead, or made now
  reset_signals();
  leave_callers_session(plan);    // kill(0, ...) from the sandbox must not reach the caller's group
  install_stdio(plan);
  IdmappedLayers layers = wait_for_id_maps(plan);  // own user namespace: the supervisor wrote the maps
  make_mounts_private(plan);
  mount_scratch(plan);            // a tmpfs for the overlay's upper layer, and our cwd
  switch_to_namespace_root(plan); // --userns=auto: files are created as the mapped root from here
  attach_idmapped_layers(plan, layers);
  mount_rootfs(plan);             // overlay: read-only lowers + tmpfs upper
  timeline::mark("child_root");
  apply_declared_mounts(plan, wait_for_late_binds(plan));  // late: a workspace still mounting
  mount_proc_dev_sys(plan);
  pivot_into_rootfs(plan);
  mask_and_protect_paths(plan);   // Docker's masked and read-only lists
  set_hostname(plan);
  if (!pooled_netns) bring_up_loopback(plan);  // a pooled namespace's lo is up
  open_proxy_listener(plan);      // socket transport: the proxy's listener, made in our netns
  open_terminal(plan);            // a pty of our devpts; its master to the supervisor
  apply_rlimits(plan);
  close_inherited_fds_and_verify_cwd(plan);  // CVE-2024-21626
  make_root_read_only(plan);      // --read-only: after the last step that may create in the root
  // The steps above are sandcell's own code and run while the parent makes the cgroup (v1) and
  // the network; nothing the user gave runs before this point.
  timeline::mark("child_ready");
  GoMessage go = wait_for_go(plan);
  timeline::mark("child_go");
  join_cgroup(plan, go);          // v1: its tasks files came with "go"; single-threaded, so cheap
  enter_cgroup_namespace(plan);   // after joining the cgroup, so it is the namespace's root
  const int apparmor_attr = open_apparmor_attr(plan);  // while privileged: a fresh procfs needs it
  drop_bounding_set(plan);        // needs CAP_SETPCAP, so before the uid changes
  switch_user(plan);
  set_capabilities(plan);
  die_with_supervisor(plan);      // after switch_user: a credential change clears PDEATHSIG
  apply_apparmor(plan, apparmor_attr);  // AppArmor hosts: profile for execve; refused after no_new_privs
  set_no_new_privs(plan);
  apply_landlock(plan);           // hosts without AppArmor; needs no_new_privs
  set_not_dumpable(plan);         // for the init; the program's execve makes it dumpable again
  install_seccomp(plan, go);      // last
  timeline::mark("child_confined");
  run_program_under_init(plan, go);  // the program is pid 2; pid 1 leaves, reaps, reports
}
// clang-format on

void send_message(const ChildPlan& plan, const ChildMessage& message) {
  // Best effort: if the parent is gone there is nobody to tell.
  ssize_t ignored = write(plan.sync_fd, &message, sizeof message);
  (void)ignored;
}

void child_fail(const ChildPlan& plan, const char* format, ...) {
  ChildMessage message{.kind = ChildMessage::SetupFailed, .err = errno};
  va_list args;
  va_start(args, format);
  vsnprintf(message.step, sizeof message.step, format, args);
  va_end(args);
  send_message(plan, message);
  _exit(125);
}

void child_exec_failed(const ChildPlan& plan, int err, const char* program) {
  ChildMessage message{.kind = ChildMessage::ExecFailed, .err = err};
  snprintf(message.step, sizeof message.step, "%s", program);
  send_message(plan, message);
  _exit(err == ENOENT ? 127 : 126);
}

}  // namespace sandcell::runtime
