// The parent's side of OCI containers: create (clone + wait until ready), start, exec.
#include "sandcell/runtime/container.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>

#include "child_messages.hpp"
#include "child_plan.hpp"
#include "child_plan_builder.hpp"
#include "child_steps.hpp"
#include "proc_handle.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "spec_checks.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {
namespace {

struct SyncPair {
  UniqueFd parent, child;
};

SyncPair make_sync_pair(int preserve_fds) {
  int fds[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), "socketpair");
  SyncPair pair{UniqueFd(fds[0]), UniqueFd(fds[1])};
  // Above the fds --preserve-fds hands to the program.
  int high = fcntl(pair.child.get(), F_DUPFD_CLOEXEC, 3 + preserve_fds + 16);
  check(high, "fcntl(F_DUPFD_CLOEXEC)");
  pair.child.reset(high);
  return pair;
}

int dup_high(int fd, int preserve_fds) {
  return fd < 0 ? -1 : static_cast<int>(check(fcntl(fd, F_DUPFD_CLOEXEC, 3 + preserve_fds + 16), "fcntl(F_DUPFD_CLOEXEC)"));
}

void write_file(const std::string& path, const std::string& text) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd || write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    throw Error(errno, "write " + path);
}

std::string id_map_text(const std::vector<IdMapping>& mappings) {
  std::string text;
  for (const IdMapping& m : mappings)
    text += std::to_string(m.container_id) + " " + std::to_string(m.host_id) + " " + std::to_string(m.size) + "\n";
  return text;
}

// /proc writes go beneath a checked procfs, never through a symlink or a mount (proc_handle.hpp).
// Only for a new user namespace: a joined one has its maps (checked against the config's).
void write_id_maps(const Container& c, const ContainerPlan& plan, pid_t pid) {
  if (!plan.new_user_ns) return;
  std::string proc = std::to_string(pid);
  if (!c.uid_mappings.empty()) write_host_proc_file(proc + "/uid_map", id_map_text(c.uid_mappings));
  if (!c.gid_mappings.empty()) write_host_proc_file(proc + "/gid_map", id_map_text(c.gid_mappings));
}

void set_oom_score_adj(const Container& c, pid_t pid) {
  if (!c.oom_score_adj) return;
  try {
    write_host_proc_file(std::to_string(pid) + "/oom_score_adj", std::to_string(*c.oom_score_adj));
  } catch (const Error& e) {
    throw Error(e.code().value(), "process.oomScoreAdj " + std::to_string(*c.oom_score_adj) +
                                      " (lowering it needs CAP_SYS_RESOURCE)");
  }
}

// With linux.timeOffsets the time namespace is made by the spawner (unshare, offsets, then the
// clone enters it), not by the init's clone3, which would enter it before the offsets are set.
uint64_t clone_flags(const ContainerPlan& plan, const Container& c) {
  static const std::pair<const char*, uint64_t> kTypes[] = {
      {"pid", CLONE_NEWPID}, {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS}, {"ipc", CLONE_NEWIPC},
      {"uts", CLONE_NEWUTS}, {"user", CLONE_NEWUSER}, {"time", CLONE_NEWTIME}};
  uint64_t flags = 0;
  for (const Namespace& ns : c.namespaces)
    for (const auto& [name, flag] : kTypes)
      if (ns.type == name && ns.path.empty()) flags |= flag;
  if (!c.time_offsets.empty()) flags &= ~static_cast<uint64_t>(CLONE_NEWTIME);
  (void)plan;  // the cgroup namespace is entered by the child, after it joined the cgroup
  // runc's rule: the root is set up in a mount namespace of the container's own, new or joined
  // by path (then the mounts and pivot_root happen in that namespace, and root.path must be
  // reachable from it). Without one they would change the caller's.
  bool mount_ns = std::any_of(c.namespaces.begin(), c.namespaces.end(),
                              [](const Namespace& ns) { return ns.type == "mount"; });
  if (!mount_ns)
    throw Error::invalid(
        "linux.namespaces: sandcell-oci needs a mount namespace (type \"mount\", new or by path)");
  return flags;
}

// A pid namespace given by path is joined by the parent: it only applies to children. Returns
// our own, to go back to.
UniqueFd join_pid_namespace_for_children(int target, const std::string& what) {
  if (target < 0) return {};
  UniqueFd own(open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
  if (!own) throw Error(errno, "open /proc/self/ns/pid");
  check(setns(target, CLONE_NEWPID), "linux.namespaces: join pid namespace " + what);
  return own;
}

pid_t clone_with(uint64_t flags, void (*body)(const ChildPlan&), const ChildPlan& plan) {
  clone_args args{};
  args.flags = flags;
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) body(plan);
  check(pid, "clone3 into the container's namespaces");
  return static_cast<pid_t>(pid);
}

[[noreturn]] void container_body(const ChildPlan& plan) { run_container_child(plan); }
[[noreturn]] void exec_body(const ChildPlan& plan) { run_exec_child(plan); }

std::string describe(const ChildMessage& m) {
  std::string step(m.step, strnlen(m.step, sizeof m.step));
  if (m.kind == ChildMessage::ExecFailed)
    return "exec " + step + (m.err == ENOENT ? " (not found in the container)" : "");
  return step;  // Error appends the errno text
}

// Waits for Ready (create) or for EOF (start, exec: the program runs, its exec closed the
// socket). Throws with the child's report. On Prepared (an init with pause_before_pivot) runs
// `prepared`, then lets the init go on.
void await_child(int sync_fd, pid_t pid, bool until_ready,
                 const std::function<void(pid_t)>& prepared = {}) {
  pollfd ready{.fd = sync_fd, .events = POLLIN, .revents = 0};
  while (true) {
    if (poll(&ready, 1, -1) < 0 && errno != EINTR) throw Error(errno, "poll the container's init");
    std::optional<ReceivedMessage> received = receive_child_message(sync_fd);
    if (!received) {
      if (!until_ready) return;
      int status = 0;
      waitpid(pid, &status, 0);
      throw Error(EPIPE, "the container's init exited during setup (status " + std::to_string(status) + ")");
    }
    if (received->message.kind == -1) continue;
    if (until_ready && received->message.kind == ChildMessage::Ready) return;
    if (until_ready && prepared && received->message.kind == ChildMessage::Prepared) {
      prepared(pid);
      check(write(sync_fd, "p", 1), "tell the container's init to go on to pivot_root");
      continue;
    }
    int err = received->message.err;
    throw Error(err, describe(received->message));
  }
}

void kill_and_reap(pid_t pid) {
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// runc's order where a user namespace is joined by path: join it first, then create the new
// namespaces, so they belong to it. clone3 makes them in the caller's user namespace, and the
// caller cannot join (setns(CLONE_NEWUSER) gives up its host capabilities). So a short-lived
// spawner, cloned before any pid namespace is joined (its clone3 then returns the init's pid as
// we see it), joins the pid namespace for its children and the user namespace, makes a time
// namespace with linux.timeOffsets (unshare; the parent writes the offsets, which the kernel
// only takes before the first process enters), and clones the init with CLONE_PARENT: the init
// is our child, as with the direct clone. Only system calls here; failures go to the init's sync
// socket via child_fail.
struct Spawner {
  int pid_ns = -1, user_ns = -1;
  bool new_time_ns = false;
  uint64_t flags = 0;  // the init's clone3
  int channel = -1;    // "t" after the unshare; "g" back once the offsets are written; the pid
};

[[noreturn]] void run_spawner(const Spawner& s, const ChildPlan& plan) {
  if (s.pid_ns >= 0 && setns(s.pid_ns, CLONE_NEWPID) < 0) child_fail(plan, "linux.namespaces: join the pid namespace");
  if (s.user_ns >= 0 && setns(s.user_ns, CLONE_NEWUSER) < 0)
    child_fail(plan, "linux.namespaces: join the user namespace");
  if (s.new_time_ns) {
    if (unshare(CLONE_NEWTIME) < 0) child_fail(plan, "linux.namespaces: unshare the time namespace");
    char step = 't';
    if (write(s.channel, &step, 1) != 1 || read(s.channel, &step, 1) != 1 || step != 'g') _exit(125);
  }
  clone_args args{};
  args.flags = s.flags | CLONE_PARENT;  // exit_signal must be 0: the init's is ours (SIGCHLD)
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_container_child(plan);
  if (pid < 0) child_fail(plan, "clone3 into the container's namespaces");
  pid_t init = static_cast<pid_t>(pid);
  if (write(s.channel, &init, sizeof init) != sizeof init) _exit(125);
  _exit(0);
}

void write_time_offsets(const Container& c, pid_t spawner) {
  for (const TimeOffset& o : c.time_offsets) {
    std::string line = o.clock + " " + std::to_string(o.secs) + " " + std::to_string(o.nanosecs) + "\n";
    try {
      write_host_proc_file(std::to_string(spawner) + "/timens_offsets", line);
    } catch (const Error& e) {
      int err = e.code().value();
      throw Error(err, "linux.timeOffsets." + o.clock + ": the kernel refused " + std::to_string(o.secs) + " s " +
                           std::to_string(o.nanosecs) + " ns" +
                           (err == ERANGE ? " (the clock may not go below 0 or beyond about 146 years)" : ""));
    }
  }
}

void close_join_fds(const ContainerPlan& plan) {
  for (const ContainerPlan::Join& join : plan.joins) close(join.fd);
  for (int fd : {plan.user_join_fd, plan.pid_join_fd})
    if (fd >= 0) close(fd);
}

void reap(pid_t pid) {
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

// Clones the spawner, writes the time offsets, returns the init's pid. `sync_child` is closed
// once the spawner holds it, so a spawner that fails leaves its report and then EOF.
pid_t spawn_init(Spawner s, const Container& c, const ChildPlan& plan, int sync_parent, UniqueFd& sync_child) {
  int pair[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), "socketpair");
  UniqueFd ours(pair[0]), theirs(pair[1]);
  s.channel = theirs.get();
  clone_args args{};
  args.exit_signal = SIGCHLD;
  long spawned = syscall(SYS_clone3, &args, sizeof args);
  if (spawned == 0) run_spawner(s, plan);
  check(spawned, "clone3 the spawner");
  pid_t spawner = static_cast<pid_t>(spawned);
  theirs.reset();
  sync_child.reset();
  auto failed = [&]() -> pid_t {
    try {
      await_child(sync_parent, spawner, true);  // throws the spawner's report, or "exited"
    } catch (...) {
      reap(spawner);  // done already when it reported nothing (ECHILD then)
      throw;
    }
    throw Error(EPIPE, "the container's spawner stopped");
  };
  char step = 0;
  if (s.new_time_ns) {
    if (read(ours.get(), &step, 1) != 1 || step != 't') return failed();
    try {
      write_time_offsets(c, spawner);
    } catch (...) {
      kill(spawner, SIGKILL);
      reap(spawner);
      throw;
    }
    check(write(ours.get(), "g", 1), "tell the spawner to clone the init");
  }
  pid_t init = 0;
  if (read(ours.get(), &init, sizeof init) != sizeof init) return failed();
  reap(spawner);
  return init;
}

// A v1 hierarchy's `tasks` file goes to the process, which moves itself (no RCU grace period
// per hierarchy); a v2 cgroup (no `tasks` file) takes the pid from us before it runs.
std::vector<UniqueFd> attach_to_cgroups(const std::vector<std::string>& dirs, pid_t pid) {
  std::vector<UniqueFd> tasks_files;
  for (const std::string& dir : dirs) {
    UniqueFd tasks(open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
    if (tasks)
      tasks_files.push_back(std::move(tasks));
    else
      write_file(dir + "/cgroup.procs", std::to_string(pid));
  }
  return tasks_files;
}

}  // namespace

CreatedContainer create_container(const Spec& spec, int start_listener, const ContainerIo& io,
                                  const std::vector<std::string>& cgroup_dirs,
                                  const std::function<void(pid_t)>& placed,
                                  const std::function<void(pid_t)>& prepared) {
  if (!spec.container) throw Error::invalid("create_container needs Spec::container");
  const Container& c = *spec.container;
  ChildPlanBuilder builder = ChildPlanBuilder::for_container(spec, io.preserve_fds);
  SyncPair sync = make_sync_pair(io.preserve_fds);
  UniqueFd start_fd(dup_high(start_listener, io.preserve_fds));
  UniqueFd console(dup_high(io.console_socket, io.preserve_fds));
  builder.stdio(io.stdin_fd, io.stdout_fd, io.stderr_fd);
  builder.sync_socket(sync.child.get());
  builder.container_channels(start_fd.get(), console.get());
  if (prepared) builder.pause_before_pivot();
  const ChildPlan& plan = builder.freeze();
  const ContainerPlan& cp = *plan.container;
  uint64_t flags = clone_flags(cp, c);
  const std::optional<SeccompProgram> seccomp = spec.seccomp.program();  // sent with "go"

  pid_t pid = 0;
  try {
    if (cp.user_join_fd >= 0 || !c.time_offsets.empty()) {
      Spawner spawner{.pid_ns = cp.pid_join_fd, .user_ns = cp.user_join_fd,
                      .new_time_ns = !c.time_offsets.empty(), .flags = flags};
      pid = spawn_init(spawner, c, plan, sync.parent.get(), sync.child);
    } else {
      auto pid_ns = std::find_if(c.namespaces.begin(), c.namespaces.end(),
                                 [](const Namespace& ns) { return ns.type == "pid"; });
      UniqueFd own_pid_ns =
          join_pid_namespace_for_children(cp.pid_join_fd, pid_ns == c.namespaces.end() ? "" : pid_ns->path);
      pid = clone_with(flags, container_body, plan);
      if (own_pid_ns) setns(own_pid_ns.get(), CLONE_NEWPID);
      sync.child.reset();
    }
  } catch (...) {
    close_join_fds(cp);
    throw;
  }
  close_join_fds(cp);
  try {
    write_id_maps(c, cp, pid);
    set_oom_score_adj(c, pid);
    if (placed) placed(pid);
    send_go(sync.parent.get(), attach_to_cgroups(cgroup_dirs, pid), seccomp ? &*seccomp : nullptr);
    await_child(sync.parent.get(), pid, true, prepared);
  } catch (...) {
    kill_and_reap(pid);
    throw;  // the caller made the cgroups and removes them
  }
  return {.pid = pid, .cgroup_paths = cgroup_dirs};
}

void start_container(int start_connection) {
  check(write(start_connection, "s", 1), "tell the container's init to start");
  await_child(start_connection, 0, false);
}

pid_t exec_in_container(const Spec& spec, const ExecTarget& target, const ContainerIo& io) {
  ChildPlanBuilder builder = ChildPlanBuilder::for_exec(spec);
  // The time namespace before the user one: the host may own it (linux.timeOffsets with a new
  // user namespace), and joining the user namespace gives up the host's capabilities.
  static const std::pair<const char*, int> kJoin[] = {{"time", CLONE_NEWTIME}, {"user", CLONE_NEWUSER},
      {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS}, {"net", CLONE_NEWNET}, {"cgroup", CLONE_NEWCGROUP},
      {"mnt", CLONE_NEWNS}};
  std::string ns_dir = "/proc/" + std::to_string(target.init_pid) + "/ns/";
  std::vector<UniqueFd> keep;
  for (const auto& [name, flag] : kJoin) {
    if (flag == CLONE_NEWTIME && access("/proc/self/ns/time", F_OK) != 0) continue;  // before Linux 5.6
    std::string path = ns_dir + name;
    char own[64] = {}, theirs[64] = {};
    // Only namespaces the container does not share with us: setns into our own user
    // namespace fails with EINVAL.
    if (readlink(("/proc/self/ns/" + std::string(name)).c_str(), own, sizeof own - 1) > 0 &&
        readlink(path.c_str(), theirs, sizeof theirs - 1) > 0 && strcmp(own, theirs) == 0)
      continue;
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(errno, "open " + path + " (is the container running?)");
    keep.emplace_back(dup_high(fd.get(), io.preserve_fds));
    builder.join_namespace(flag, keep.back().get());
  }
  SyncPair sync = make_sync_pair(io.preserve_fds);
  UniqueFd console(dup_high(io.console_socket, io.preserve_fds));
  builder.stdio(io.stdin_fd, io.stdout_fd, io.stderr_fd);
  builder.sync_socket(sync.child.get());
  builder.container_channels(-1, console.get());
  const ChildPlan& plan = builder.freeze();
  const std::optional<SeccompProgram> seccomp = spec.seccomp.program();  // sent with "go"
  UniqueFd target_pid_ns(open((ns_dir + "pid").c_str(), O_RDONLY | O_CLOEXEC));
  if (!target_pid_ns) throw Error(errno, "open " + ns_dir + "pid (is the container running?)");
  UniqueFd own_pid_ns = join_pid_namespace_for_children(target_pid_ns.get(), ns_dir + "pid");
  pid_t pid = clone_with(0, exec_body, plan);
  if (own_pid_ns) setns(own_pid_ns.get(), CLONE_NEWPID);
  sync.child.reset();
  try {
    send_go(sync.parent.get(), attach_to_cgroups(target.cgroup_paths, pid), seccomp ? &*seccomp : nullptr);
    await_child(sync.parent.get(), pid, false);
  } catch (...) {
    kill_and_reap(pid);
    throw;
  }
  return pid;
}

}  // namespace sandcell::runtime
