// Turns an OCI container Spec into the ChildPlan its init (and an exec'd process) runs from.
// Everything that allocates or can be checked happens here, in the parent.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>

#include "child_plan.hpp"
#include "child_plan_builder.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "spec_checks.hpp"

namespace sandcell::runtime {
namespace {

int namespace_flag(const std::string& type) {
  static const std::pair<const char*, int> kTypes[] = {
      {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS},
      {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},     {"user", CLONE_NEWUSER},
      {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME}};
  for (const auto& [name, flag] : kTypes)
    if (type == name) return flag;
  throw Error::invalid("linux.namespaces: unknown namespace type '" + type + "'");
}

// Internal fds must not land on 3 .. 3+N-1, which --preserve-fds hands to the program.
int high_fd(int fd, int preserve_fds) {
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3 + preserve_fds + 16);
  if (moved < 0) throw Error(errno, "fcntl(F_DUPFD_CLOEXEC)");
  close(fd);
  return moved;
}

void plan_namespaces(const Container& c, ContainerPlan& plan, int preserve_fds) {
  std::vector<ContainerPlan::Join> joins;
  for (const Namespace& ns : c.namespaces) {
    int flag = namespace_flag(ns.type);
    if (ns.path.empty()) {
      plan.new_user_ns |= flag == CLONE_NEWUSER;
      plan.new_net_ns |= flag == CLONE_NEWNET;
      plan.new_cgroup_ns |= flag == CLONE_NEWCGROUP;
      plan.new_uts_ns |= flag == CLONE_NEWUTS;
      continue;
    }
    plan.joined_uts_ns |= flag == CLONE_NEWUTS;
    int fd = open(ns.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(errno, "linux.namespaces: open " + ns.type + " namespace " + ns.path);
    joins.push_back({flag, high_fd(fd, preserve_fds)});
  }
  // The user namespace first: joining it decides what the other setns() calls may do.
  std::stable_partition(joins.begin(), joins.end(),
                        [](const ContainerPlan::Join& j) { return j.nstype == CLONE_NEWUSER; });
  plan.joins = std::move(joins);
}

PlannedContainerMount plan_mount(const ContainerMount& m) {
  check_sandbox_path(m.destination, "mounts destination");
  PlannedContainerMount planned{.source = m.source, .destination = m.destination, .fstype = m.type,
                                .data = m.data, .flags = m.flags, .propagation = m.propagation,
                                .bind = (m.flags & MS_BIND) != 0, .source_is_dir = true};
  if (planned.bind) {
    struct stat st {};
    if (stat(m.source.c_str(), &st) < 0)
      throw Error(errno, "mounts: bind source " + m.source + " for " + m.destination);
    planned.source_is_dir = S_ISDIR(st.st_mode);
  } else if (m.type == "cgroup" && probe_cgroups().mode != CgroupHost::Mode::V2) {
    // A v1 or hybrid host has no single cgroup tree to show: the container gets an empty
    // read-only directory rather than a view of the host's hierarchies.
    planned.fstype = "tmpfs";
    planned.source = "tmpfs";
    planned.data = "mode=755,size=4k";
    planned.flags |= MS_RDONLY;
  } else if (m.type == "cgroup") {
    planned.fstype = "cgroup2";
  }
  return planned;
}

PlannedDevice plan_device(const Device& d) {
  check_sandbox_path(d.path, "linux.devices path");
  mode_t kind = d.type == 'b' ? S_IFBLK : d.type == 'p' ? S_IFIFO : S_IFCHR;
  PlannedDevice planned{.path = d.path, .host_path = {}, .mode = kind | (d.file_mode & 07777),
                        .dev = makedev(d.major, d.minor), .uid = d.uid, .gid = d.gid};
  // The same node on the host is bind-mounted where mknod is not allowed (user namespaces).
  struct stat st {};
  if (stat(d.path.c_str(), &st) == 0 && (st.st_mode & S_IFMT) == kind && st.st_rdev == planned.dev)
    planned.host_path = d.path;
  return planned;
}

void plan_sysctl(const Container& c, ContainerPlan& plan) {
  for (const auto& [key, value] : c.sysctl) {
    if (key.empty() || key.find("..") != std::string::npos || key.find('/') != std::string::npos)
      throw Error::invalid("linux.sysctl: invalid key '" + key + "'");
    std::string path = "/proc/sys/" + key;
    std::replace(path.begin() + 10, path.end(), '.', '/');
    plan.sysctl_paths.push_back(path);
    plan.sysctl_values.push_back(value);
  }
}

void plan_start_hooks(const Container& c, ContainerPlan& plan) {
  plan.start_hooks.resize(c.start_hooks.size());  // sized first: argv points into the strings
  for (size_t i = 0; i < c.start_hooks.size(); ++i) {
    const StartHook& hook = c.start_hooks[i];
    PlannedHook& planned = plan.start_hooks[i];
    planned.path = hook.path;
    planned.state_json = hook.state_json;
    planned.args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
    planned.env = hook.env;
    for (std::string& arg : planned.args) planned.argv.push_back(arg.data());
    planned.argv.push_back(nullptr);
    for (std::string& entry : planned.env) planned.envp.push_back(entry.data());
    planned.envp.push_back(nullptr);
  }
}

// The parts of a ChildPlan a container's init and an exec'd process share: process, user,
// capabilities, rlimits (named), seccomp, AppArmor. `container` must be set.
ChildPlan process_plan(const Spec& spec) {
  if (spec.args.empty() || spec.args[0].empty()) throw Error::invalid("process.args: no program given");
  check_sandbox_path(spec.cwd, "process.cwd");
  const Container& c = *spec.container;
  ChildPlan plan;
  plan.container = std::make_unique<ContainerPlan>();
  plan.rlimits = spec.rlimits;
  for (const Rlimit& r : spec.rlimits) plan.container->rlimit_names.push_back(rlimit_name(r.resource));
  plan.cwd = spec.cwd;
  plan.uid = spec.uid;
  plan.gid = spec.gid;
  plan.groups = spec.additional_gids;
  plan.caps = plan_capability_sets(c.capabilities);
  plan.no_new_privileges = spec.no_new_privileges;
  if (!c.apparmor_profile.empty() && lsm_host().apparmor) plan.apparmor_profile = c.apparmor_profile;
  plan.args = spec.args;
  plan.env = spec.env;
  plan.container->terminal = c.terminal;
  plan.container->rows = c.console_rows;
  plan.container->columns = c.console_columns;
  plan.container->umask = c.umask ? static_cast<int>(*c.umask) : -1;
  plan.container->personality = c.personality ? static_cast<long>(*c.personality) : -1;
  return plan;
}

}  // namespace

ChildPlanBuilder ChildPlanBuilder::for_exec(const Spec& spec) {
  return ChildPlanBuilder(process_plan(spec));
}

// The whole plan of a container's init (namespaces, rootfs, mounts, devices, sysctl, ...).
// Opens the namespace files to join; fds are moved above 3 + preserve_fds.
ChildPlanBuilder ChildPlanBuilder::for_container(const Spec& spec, int preserve_fds) {
  const Container& c = *spec.container;
  struct stat st {};
  if (c.rootfs.empty() || c.rootfs[0] != '/' || stat(c.rootfs.c_str(), &st) < 0 || !S_ISDIR(st.st_mode))
    throw Error::invalid("root.path: " + c.rootfs + " is not a directory");
  ChildPlan plan = process_plan(spec);
  ContainerPlan& cp = *plan.container;
  plan.root_dir = c.rootfs;
  plan.masked_paths = spec.masked_paths;
  plan.readonly_paths = spec.readonly_paths;
  plan.hostname = spec.hostname;
  plan_namespaces(c, cp, preserve_fds);
  plan.host_network = !cp.new_net_ns;
  // runc's rule: a uts namespace of the container's own, new or joined by path (then the
  // hostname is set in the joined one, as runc does).
  if (!plan.hostname.empty() && !cp.new_uts_ns && !cp.joined_uts_ns)
    throw Error::invalid(
        "hostname: setting it needs a uts namespace (linux.namespaces, new or by path)");
  cp.rootfs_propagation = c.rootfs_propagation;
  cp.readonly_root = c.rootfs_readonly;
  cp.no_pivot = c.no_pivot;
  for (const ContainerMount& m : c.mounts) cp.mounts.push_back(plan_mount(m));
  for (const Device& d : c.devices) cp.devices.push_back(plan_device(d));
  plan_sysctl(c, cp);
  cp.domainname = c.domainname;
  cp.preserve_fds = preserve_fds;
  plan_start_hooks(c, cp);
  return ChildPlanBuilder(std::move(plan));
}

}  // namespace sandcell::runtime
