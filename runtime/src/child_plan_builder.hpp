#pragma once
// The one way a ChildPlan is made (docs/architecture.md, "The child plan"): first from the Spec,
// which finds every mistake in the input before anything is created; then, step by named step,
// what the parent prepared for this child (fds, the run's files, a namespace made ahead); then
// freeze(), before clone: from there the plan is read-only, in the parent and in the child.
// run_sandbox(), create_container() and exec_in_container() all build their plans here.
#include <sched.h>

#include <cstdint>
#include <string>
#include <vector>

#include "child_plan.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/runtime/spec.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

class ChildPlanBuilder {
 public:
  // A sandbox of run_sandbox(); `scratch_dir`: where the child mounts its scratch tmpfs. Throws
  // Error::invalid naming the Spec field at fault.
  static ChildPlanBuilder for_sandbox(const Spec& spec, const std::string& scratch_dir);
  // An OCI container's init (Spec::container set); fds at or above 3 + preserve_fds.
  static ChildPlanBuilder for_container(const Spec& spec, int preserve_fds);
  // A process exec'd into a running container (Spec::container set).
  static ChildPlanBuilder for_exec(const Spec& spec);
  // A process exec'd into a running sandbox of run_sandbox(spec) (the Docker API's exec): the
  // sandbox's own confinement, with the process's program, environment, directory and ids.
  static ChildPlanBuilder for_sandbox_exec(const Spec& spec, const SandboxProcess& process);

  // Not movable: argv and envp point into the plan it holds.
  ChildPlanBuilder(const ChildPlanBuilder&) = delete;
  ChildPlanBuilder& operator=(const ChildPlanBuilder&) = delete;

  // What is planned so far, to read (which namespaces, the proxy page...).
  const ChildPlan& plan() const { return plan_; }

  // The program's stdio and the child's end of the sync socket; `supervisor_end`, the parent's
  // end, which the child inherits and closes first (-1: none to close).
  void stdio(int stdin_fd, int stdout_fd, int stderr_fd);
  void sync_socket(int child_end, int supervisor_end = -1);
  // Full mode: the resolv.conf the parent wrote, bound read-only at /etc/resolv.conf.
  void resolv_conf(const std::string& source);
  // Socket transport: the child listens on 127.0.0.1:`port` of its own netns for the proxy, and
  // the program's proxy variables point there (known before clone).
  void proxy_listener(uint16_t port);
  // The program runs on a pseudo-terminal (ChildPlan::terminal).
  void terminal();
  // ChildPlan::program_done_signal.
  void program_done_signal();
  // ChildPlan::outside_program.
  void outside_program();
  // --userns=auto: a detached clone (open_tree) of every bind mount's source, which clone hands
  // to the child; the caller owns them and closes its copies once the child has its own.
  std::vector<UniqueFd> detach_bind_sources();
  // --net none: the child makes its network namespace itself, or enters `pooled_fd` (>= 0), one
  // made ahead by an earlier run (netns_pool.hpp).
  void unshare_network(int pooled_fd = -1);
  // With no cgroup: the rlimits that stand in for its limits (rootless_limits.hpp).
  void add_rlimits(const std::vector<Rlimit>& rlimits);
  // The supervisor clones pinned to one CPU (cpu_handoff.hpp): the child puts back `original`.
  void restore_cpus(const cpu_set_t& original);
  // OCI containers: the listener `start` connects to and the --console-socket connection (-1:
  // none); exec: a namespace of the container to join (setns) before anything else.
  void container_channels(int start_fd, int console_fd);
  // OCI containers: the init stops before pivot_root (ContainerPlan::pause_before_pivot).
  void pause_before_pivot();
  void join_namespace(int nstype, int fd);

  // The exec arrays (argv, envp into the plan's strings); no step after this. The plan lives in
  // the builder, which must outlive the clone.
  const ChildPlan& freeze();

 private:
  explicit ChildPlanBuilder(ChildPlan plan) : plan_(std::move(plan)) {}
  ChildPlan& building();

  ChildPlan plan_;
  bool frozen_ = false;
};

}  // namespace sandcell::runtime
