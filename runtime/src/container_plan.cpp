// Turns an OCI container Spec into the ChildPlan its init (and an exec'd process) runs from.
// Everything that allocates or can be checked happens here, in the parent.
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <sstream>

#include "child_plan.hpp"
#include "child_plan_builder.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "spec_checks.hpp"
#include "unique_fd.hpp"

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

const char* namespace_name(int flag) {
  switch (flag) {
    case CLONE_NEWPID: return "pid";
    case CLONE_NEWNET: return "network";
    case CLONE_NEWNS: return "mount";
    case CLONE_NEWIPC: return "ipc";
    case CLONE_NEWUTS: return "uts";
    case CLONE_NEWUSER: return "user";
    case CLONE_NEWCGROUP: return "cgroup";
    case CLONE_NEWTIME: return "time";
  }
  return "unknown";
}

// linux.namespaces[i].path, checked before anything is made: opened O_PATH first (a FIFO or
// device at the path is never really opened), required to be on nsfs, reopened and required to be
// the same file, and its type (NS_GET_NSTYPE) must be the entry's.
int open_namespace_file(const Namespace& ns, int flag, const std::string& field) {
  UniqueFd path_fd(open(ns.path.c_str(), O_PATH | O_CLOEXEC));
  if (!path_fd) throw Error(errno, field + ": open " + ns.path);
  struct statfs fs {};
  struct stat first {}, second {};
  if (fstatfs(path_fd.get(), &fs) < 0 || fs.f_type != NSFS_MAGIC || fstat(path_fd.get(), &first) < 0)
    throw Error::invalid(field + ": " + ns.path + " is not a namespace file (/proc/PID/ns/" + ns.type +
                         " or a bind mount of one)");
  UniqueFd fd(open(ns.path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (!fd) throw Error(errno, field + ": open " + ns.path);
  if (fstat(fd.get(), &second) < 0 || second.st_dev != first.st_dev || second.st_ino != first.st_ino)
    throw Error::invalid(field + ": " + ns.path + " changed while it was being opened");
  int type = ioctl(fd.get(), NS_GET_NSTYPE);
  if (type < 0) throw Error(errno, field + ": NS_GET_NSTYPE on " + ns.path);
  if (type != flag)
    throw Error::invalid(field + ": " + ns.path + " is a " + namespace_name(type) + " namespace, not " + ns.type);
  return fd.release();
}

bool is_own_user_namespace(int fd) {
  struct stat theirs {}, own {};
  return fstat(fd, &theirs) == 0 && stat("/proc/self/ns/user", &own) == 0 &&
         theirs.st_dev == own.st_dev && theirs.st_ino == own.st_ino;
}

// The uid_map and gid_map of the user namespace `fd`, as a process inside it reads them (the
// outside ids in its parent namespace): a short-lived child joins it and reads its own, as runc's
// userns helper does. Only system calls in the child.
std::pair<std::string, std::string> id_maps_of(int fd, const std::string& field) {
  if (is_own_user_namespace(fd)) {
    std::ifstream uid("/proc/self/uid_map"), gid("/proc/self/gid_map");
    std::stringstream u, g;
    u << uid.rdbuf();
    g << gid.rdbuf();
    return {u.str(), g.str()};
  }
  int out[2];
  check(pipe2(out, O_CLOEXEC), "pipe");
  UniqueFd reader(out[0]), writer(out[1]);
  clone_args args{};
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) {
    if (setns(fd, CLONE_NEWUSER) < 0) _exit(errno);
    for (const char* file : {"/proc/self/uid_map", "/proc/self/gid_map"}) {
      char buffer[8192];
      int map = open(file, O_RDONLY | O_CLOEXEC);
      ssize_t n = map < 0 ? -1 : read(map, buffer, sizeof buffer);
      if (n < 0) _exit(errno);
      if (write(writer.get(), buffer, static_cast<size_t>(n)) != n || write(writer.get(), "", 1) != 1) _exit(EPIPE);
      close(map);
    }
    _exit(0);
  }
  check(pid, "clone3 to read the id maps of " + field);
  writer.reset();
  std::string data;
  char buffer[4096];
  for (ssize_t n; (n = read(reader.get(), buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    data.append(buffer, static_cast<size_t>(n));
  }
  int status = 0;
  while (waitpid(static_cast<pid_t>(pid), &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(WIFEXITED(status) ? WEXITSTATUS(status) : EIO, field + ": join the user namespace to read its id maps");
  size_t split = data.find('\0');
  if (split == std::string::npos || data.back() != '\0') throw Error(EIO, field + ": read the id maps");
  return {data.substr(0, split), data.substr(split + 1, data.size() - split - 2)};
}

std::vector<IdMapping> parse_id_map(const std::string& text) {
  std::vector<IdMapping> out;
  std::istringstream lines(text);
  for (IdMapping m; lines >> m.container_id >> m.host_id >> m.size;) out.push_back(m);
  return out;
}

std::string describe_map(const std::vector<IdMapping>& mappings) {
  if (mappings.empty()) return "nothing";
  std::string text;
  for (const IdMapping& m : mappings)
    text += (text.empty() ? "" : ", ") + std::to_string(m.container_id) + " " + std::to_string(m.host_id) +
            " " + std::to_string(m.size);
  return text;
}

// runc (libcontainer/specconv setupUserNamespace): with a user namespace joined by path the
// config's mappings may be left out; given, both must equal the namespace's maps, entry by entry
// and in order, or the config is refused. The maps are read by joining it, so a namespace we may
// not join is refused here too, naming the entry, before anything is made.
void check_joined_user_namespace(const Container& c, int fd, const std::string& field) {
  auto [uid_text, gid_text] = id_maps_of(fd, field);
  if (c.uid_mappings.empty() && c.gid_mappings.empty()) return;
  std::vector<IdMapping> uid = parse_id_map(uid_text), gid = parse_id_map(gid_text);
  if (c.uid_mappings != uid)
    throw Error::invalid("linux.uidMappings: " + describe_map(c.uid_mappings) +
                         " does not match the uid_map of the user namespace joined by " + field + " (" +
                         describe_map(uid) + ")");
  if (c.gid_mappings != gid)
    throw Error::invalid("linux.gidMappings: " + describe_map(c.gid_mappings) +
                         " does not match the gid_map of the user namespace joined by " + field + " (" +
                         describe_map(gid) + ")");
}

void plan_namespaces(const Container& c, ContainerPlan& plan, int preserve_fds) {
  std::vector<ContainerPlan::Join> joins;
  for (size_t i = 0; i < c.namespaces.size(); ++i) {
    const Namespace& ns = c.namespaces[i];
    int flag = namespace_flag(ns.type);
    if (ns.path.empty()) {
      plan.new_user_ns |= flag == CLONE_NEWUSER;
      plan.new_net_ns |= flag == CLONE_NEWNET;
      plan.new_cgroup_ns |= flag == CLONE_NEWCGROUP;
      plan.new_uts_ns |= flag == CLONE_NEWUTS;
      continue;
    }
    std::string field = "linux.namespaces[" + std::to_string(i) + "].path";
    plan.joined_uts_ns |= flag == CLONE_NEWUTS;
    int fd = high_fd(open_namespace_file(ns, flag, field), preserve_fds);
    if (flag == CLONE_NEWUSER) {
      UniqueFd owned(fd);
      check_joined_user_namespace(c, fd, field);
      // setns() into the user namespace we are in fails (EINVAL): there is nothing to join.
      if (!is_own_user_namespace(fd)) plan.user_join_fd = owned.release();
      continue;
    }
    if (flag == CLONE_NEWPID) {
      plan.pid_join_fd = fd;
      continue;
    }
    joins.push_back({flag, fd});
  }
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

void plan_init_hooks(const std::vector<StartHook>& hooks, std::vector<PlannedHook>& out) {
  out.resize(hooks.size());  // sized first: argv points into the strings
  for (size_t i = 0; i < hooks.size(); ++i) {
    const StartHook& hook = hooks[i];
    PlannedHook& planned = out[i];
    planned.path = hook.path;
    planned.state_json = hook.state_json;
    planned.timeout_s = hook.timeout_s;
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
  plan_init_hooks(c.start_hooks, cp.start_hooks);
  plan_init_hooks(c.create_hooks, cp.create_hooks);
  return ChildPlanBuilder(std::move(plan));
}

}  // namespace sandcell::runtime
