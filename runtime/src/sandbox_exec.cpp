// A further process in a running sandbox of run_sandbox() (the Docker API's exec). Its
// confinement is the plan run_sandbox() makes from the same Spec (ChildPlanBuilder), so it cannot
// drift from the program's: only who it is (args, env, cwd, user) comes from the caller.
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "child_messages.hpp"
#include "child_plan_builder.hpp"
#include "child_steps.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "spec_checks.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {
namespace {

struct Join {
  int nstype, fd;
};
constexpr size_t kMaxJoins = 8;

struct ExecPlan {
  const ChildPlan* plan = nullptr;  // frozen
  Join joins[kMaxJoins];
  size_t join_count = 0;
};

void join_sandbox_namespaces(const ExecPlan& exec) {
  for (size_t i = 0; i < exec.join_count; ++i) {
    if (setns(exec.joins[i].fd, exec.joins[i].nstype) < 0)
      child_fail(*exec.plan, "setns into the sandbox's namespace (type 0x%x)", exec.joins[i].nstype);
    close(exec.joins[i].fd);
  }
}

// The steps of run_child() (child_setup.cpp) from the cgroup on, in its order, after joining what
// the init made instead of making it: the same rlimits, bounding set, user, capabilities, LSM
// (AppArmor or Landlock), no_new_privs and seccomp.
// clang-format off
[[noreturn]] void run_sandbox_exec_child(const ExecPlan& exec) {
  const ChildPlan& plan = *exec.plan;
  close(plan.supervisor_sync_fd); // so a caller gone before "go" is a hang-up, not a hang
  set_not_dumpable(plan);         // CVE-2016-9962: no /proc/<pid>/fd for the sandbox; execve resets it
  reset_signals();
  leave_callers_session(plan);    // kill(0, ...) from the sandbox must not reach the caller's group
  install_stdio(plan);
  join_sandbox_namespaces(exec);  // user first, mount last; pid was joined by the parent
  const GoMessage go = wait_for_go(plan);  // with the seccomp program
  join_cgroup(plan, go);          // the run's cgroups (v1: the files sent)
  apply_rlimits(plan);
  close_fds_not_needed(plan);     // the caller's fds, before the credentials change
  close_inherited_fds_and_verify_cwd(plan);  // CVE-2024-21626
  const int apparmor_attr = open_apparmor_attr(plan);
  drop_bounding_set(plan);
  switch_user(plan);
  set_capabilities(plan);
  apply_apparmor(plan, apparmor_attr);
  set_no_new_privs(plan);
  apply_landlock(plan);           // hosts without AppArmor; needs no_new_privs
  install_seccomp(plan, go);      // last
  exec_program(plan);
}
// clang-format on

int dup_high(int fd) {
  return static_cast<int>(check(fcntl(fd, F_DUPFD_CLOEXEC, 64), "fcntl(F_DUPFD_CLOEXEC)"));
}

// The init's namespaces that are not already ours, user first (it decides what the other
// setns() calls may do), mount last (it changes our root).
void open_joins(pid_t init, ExecPlan& exec, std::vector<UniqueFd>& keep) {
  static const std::pair<const char*, int> kJoin[] = {
      {"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC},       {"uts", CLONE_NEWUTS},
      {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP}, {"mnt", CLONE_NEWNS}};
  const std::string dir = "/proc/" + std::to_string(init) + "/ns/";
  for (const auto& [name, flag] : kJoin) {
    char own[64] = {}, theirs[64] = {};
    if (readlink(("/proc/self/ns/" + std::string(name)).c_str(), own, sizeof own - 1) > 0 &&
        readlink((dir + name).c_str(), theirs, sizeof theirs - 1) > 0 && strcmp(own, theirs) == 0)
      continue;  // shared with us (a host namespace): setns into our own user namespace fails
    UniqueFd fd(open((dir + name).c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(errno, "open " + dir + name + " (is the sandbox running?)");
    keep.emplace_back(dup_high(fd.get()));
    exec.joins[exec.join_count++] = {flag, keep.back().get()};
  }
}

pid_t parent_of(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  size_t end = text.rfind(')');  // the name may hold spaces and parentheses
  int ppid = 0;
  char state = 0;
  if (end == std::string::npos || sscanf(text.c_str() + end + 1, " %c %d", &state, &ppid) != 2)
    return 0;
  return state == 'Z' ? 0 : ppid;
}

// A pid is only a name: the init may have ended and its pid gone to another process. Checked
// after the namespace files are open, so what they name is the init's.
void check_still_the_init(const SandboxTarget& target) {
  if (target.supervisor_pid > 0 && parent_of(target.init_pid) != target.supervisor_pid)
    throw Error(ESRCH, "the sandbox's init " + std::to_string(target.init_pid) + " is gone");
}

// The init takes its confinement after "go" (run_child: cgroup namespace, bounding set, ...,
// seccomp last), and RunOptions::on_started names it before "go", while its mount namespace may
// still show the host's tree (pivot_root comes late in its setup). A process joining it then
// would be confined by its own steps but see the host's files, and the host's cgroup namespace.
// So the init must show what its plan gives it: the sandbox's root, the dropped bounding set,
// no_new_privs and a seccomp filter (`filtered`: the spec has a program).
bool init_is_set_up(pid_t init, const ChildPlan& plan, bool filtered) {
  const std::string proc = "/proc/" + std::to_string(init);
  struct stat init_root {
  }, own_root{};
  if (stat((proc + "/root/").c_str(), &init_root) < 0 || stat("/", &own_root) < 0)
    throw Error(errno, "stat " + proc + "/root (is the sandbox running?)");
  if (init_root.st_dev == own_root.st_dev && init_root.st_ino == own_root.st_ino) return false;
  std::ifstream status(proc + "/status");
  unsigned long long bounding = ~0ull;
  int no_new_privs = 0, seccomp_mode = 0;
  for (std::string line; std::getline(status, line);) {
    if (line.starts_with("CapBnd:")) bounding = std::stoull(line.substr(7), nullptr, 16);
    if (line.starts_with("NoNewPrivs:")) no_new_privs = std::atoi(line.c_str() + 11);
    if (line.starts_with("Seccomp:")) seccomp_mode = std::atoi(line.c_str() + 8);
  }
  for (cap_value_t cap : plan.caps.drop_from_bounding)
    if (bounding & (1ull << cap)) return false;
  return (!plan.no_new_privileges || no_new_privs == 1) &&
         (!filtered || seccomp_mode == SECCOMP_MODE_FILTER);
}

void wait_until_set_up(const SandboxTarget& target, const ChildPlan& plan, bool filtered) {
  for (int waited_ms = 0; !init_is_set_up(target.init_pid, plan, filtered); waited_ms += 5) {
    check_still_the_init(target);
    if (waited_ms >= 10000)
      throw Error(EAGAIN, "the sandbox's init " + std::to_string(target.init_pid) +
                              " did not finish its setup");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// setns(CLONE_NEWPID) applies to the caller's next children only: joined around the clone.
pid_t clone_into_pid_namespace(int pid_ns, const ExecPlan& exec) {
  UniqueFd own(open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC));
  if (!own) throw Error(errno, "open /proc/self/ns/pid");
  check(setns(pid_ns, CLONE_NEWPID), "join the sandbox's pid namespace for the exec'd process");
  clone_args args{};
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_sandbox_exec_child(exec);
  int saved = errno;
  setns(own.get(), CLONE_NEWPID);
  if (pid < 0) throw Error(saved, "clone3 into the sandbox");
  return static_cast<pid_t>(pid);
}

// What the child reports: nothing but EOF (its execve closed the socket) when the program runs.
void await_exec(int sync_fd) {
  while (std::optional<ReceivedMessage> received = receive_child_message(sync_fd)) {
    if (received->message.kind == -1) continue;
    const ChildMessage& m = received->message;
    std::string step(m.step, strnlen(m.step, sizeof m.step));
    if (m.kind == ChildMessage::ExecFailed)
      throw Error(m.err, "exec " + step + (m.err == ENOENT ? " (not found in the sandbox)" : ""));
    throw Error(m.err, step);
  }
}

}  // namespace

pid_t exec_in_sandbox(const Spec& spec, const SandboxProcess& process,
                      const SandboxTarget& target) {
  if (process.args.empty() || process.args[0].empty())
    throw Error::invalid("exec: no program given");
  check_sandbox_path(process.cwd, "exec working directory");
  ChildPlanBuilder builder = ChildPlanBuilder::for_sandbox_exec(spec, process);
  const std::optional<SeccompProgram> seccomp = spec.seccomp.program();  // sent with "go"
  ExecPlan exec{.plan = nullptr, .joins = {}, .join_count = 0};
  wait_until_set_up(target, builder.plan(), seccomp.has_value());
  std::vector<UniqueFd> keep;
  open_joins(target.init_pid, exec, keep);
  const std::string pid_ns_path = "/proc/" + std::to_string(target.init_pid) + "/ns/pid";
  UniqueFd pid_ns(open(pid_ns_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!pid_ns) throw Error(errno, "open " + pid_ns_path + " (is the sandbox running?)");
  check_still_the_init(target);
  int fds[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds), "socketpair");
  UniqueFd parent(fds[0]), child(dup_high(fds[1]));
  close(fds[1]);
  builder.sync_socket(child.get(), parent.get());
  builder.stdio(process.stdin_fd, process.stdout_fd, process.stderr_fd);
  if (process.terminal) builder.terminal();
  exec.plan = &builder.freeze();
  pid_t pid = clone_into_pid_namespace(pid_ns.get(), exec);
  child.reset();
  keep.clear();
  try {
    // v1: the `tasks` files go to the process, which moves itself; v2 (no `tasks`) takes the pid.
    std::vector<UniqueFd> cgroup_tasks;
    for (const std::string& dir : target.cgroup_paths) {
      UniqueFd tasks(open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));
      if (tasks) {
        cgroup_tasks.push_back(std::move(tasks));
        continue;
      }
      UniqueFd procs(open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
      std::string text = std::to_string(pid);
      if (!procs ||
          write(procs.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
        throw Error(errno, "move the exec'd process into " + dir);
    }
    send_go(parent.get(), cgroup_tasks, seccomp ? &*seccomp : nullptr);
    await_exec(parent.get());
  } catch (...) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    throw;
  }
  return pid;
}

UniqueFd open_sandbox_root(const Spec& spec, const SandboxTarget& target) {
  const bool filtered = spec.seccomp.program().has_value();
  wait_until_set_up(target, ChildPlanBuilder::for_sandbox(spec, "/").plan(), filtered);
  const std::string path = "/proc/" + std::to_string(target.init_pid) + "/root";
  UniqueFd root(open(path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) throw Error(errno, "open " + path + " (is the sandbox running?)");
  check_still_the_init(target);
  return root;
}

}  // namespace sandcell::runtime
