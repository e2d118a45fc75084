// The steps of ChildPlanBuilder after the Spec (the Spec's own part is in child_plan.cpp for a
// sandbox and in container_plan.cpp for an OCI container and an exec'd process).
#include "child_plan_builder.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "sandcell/base/error.hpp"
#include "spec_checks.hpp"

namespace sandcell::runtime {

ChildPlan& ChildPlanBuilder::building() {
  if (frozen_) throw Error(EINVAL, "the child plan is frozen: no step after freeze()");
  return plan_;
}

void ChildPlanBuilder::stdio(int stdin_fd, int stdout_fd, int stderr_fd) {
  ChildPlan& plan = building();
  plan.stdin_fd = stdin_fd;
  plan.stdout_fd = stdout_fd;
  plan.stderr_fd = stderr_fd;
}

void ChildPlanBuilder::sync_socket(int child_end, int supervisor_end) {
  ChildPlan& plan = building();
  plan.sync_fd = child_end;
  plan.supervisor_sync_fd = supervisor_end;
}

void ChildPlanBuilder::resolv_conf(const std::string& source) {
  ChildPlan& plan = building();
  plan.mounts.push_back({.kind = PlannedMount::Kind::Bind,
                         .source = source,
                         .destination = "/etc/resolv.conf",
                         .data = {},
                         .read_only = true,
                         .source_is_dir = false});
  std::stable_sort(plan.mounts.begin(), plan.mounts.end(), mounted_before);
  if (plan.own_user_ns && !plan.persistent_upper) {
    plan.upper_entries.push_back({.path = plan.upper_dir + "/etc", .directory = true});
    plan.upper_entries.push_back({.path = plan.upper_dir + "/etc/resolv.conf", .directory = false});
  }
}

void ChildPlanBuilder::proxy_listener(uint16_t port) {
  ChildPlan& plan = building();
  if (!plan.proxy_env) throw Error(EINVAL, "allow mode without a proxy environment page");
  plan.proxy_listener_port = port;
  plan.proxy_env->fill("http://127.0.0.1:" + std::to_string(port));
}

void ChildPlanBuilder::terminal() { building().terminal = true; }

void ChildPlanBuilder::program_done_signal() {
  building().program_done_signal = true;
}

void ChildPlanBuilder::outside_program() {
  building().outside_program = true;
}

std::vector<UniqueFd> ChildPlanBuilder::detach_bind_sources() {
  std::vector<UniqueFd> trees;
  for (PlannedMount& m : building().mounts) {
    if (m.kind != PlannedMount::Kind::Bind || m.late) continue;  // late: send_late_binds()
    UniqueFd tree(static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, m.source.c_str(),
                                           OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE)));
    if (!tree)
      throw Error(errno, "open_tree " + m.source + " for the bind mount at " + m.destination);
    m.tree_fd = tree.get();
    trees.push_back(std::move(tree));
  }
  return trees;
}

void ChildPlanBuilder::unshare_network(int pooled_fd) {
  ChildPlan& plan = building();
  plan.unshare_network = true;
  plan.pooled_netns_fd = pooled_fd;
}

void ChildPlanBuilder::add_rlimits(const std::vector<Rlimit>& rlimits) {
  ChildPlan& plan = building();
  plan.rlimits.insert(plan.rlimits.end(), rlimits.begin(), rlimits.end());
}

void ChildPlanBuilder::restore_cpus(const cpu_set_t& original) {
  ChildPlan& plan = building();
  plan.restore_cpus = true;
  plan.cpus = original;
}

void ChildPlanBuilder::container_channels(int start_fd, int console_fd) {
  ContainerPlan& container = *building().container;
  container.start_fd = start_fd;
  container.console_fd = console_fd;
}

void ChildPlanBuilder::pause_before_pivot() {
  building().container->pause_before_pivot = true;
}

void ChildPlanBuilder::join_namespace(int nstype, int fd) {
  building().container->joins.push_back({nstype, fd});
}

const ChildPlan& ChildPlanBuilder::freeze() {
  fill_exec_arrays(building());
  frozen_ = true;
  return plan_;
}

}  // namespace sandcell::runtime
