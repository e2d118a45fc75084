// run_sandbox(): the parent's side of one run, start to finish.
#include "sandcell/runtime/sandbox.hpp"

#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include "child_messages.hpp"
#include "child_plan.hpp"
#include "child_plan_builder.hpp"
#include "confine_plan.hpp"
#include "cpu_handoff.hpp"
#include "nested_clone.hpp"
#include "netns_pool.hpp"
#include "network_setup.hpp"
#include "proc_handle.hpp"
#include "rootless_limits.hpp"
#include "run_record.hpp"
#include "run_state.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/base/timeline.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "spec_checks.hpp"
#include "supervisor.hpp"
#include "userns_mounts.hpp"
#include "userns_pool.hpp"

namespace sandcell::runtime {
namespace {

constexpr uint64_t kNamespaces =
    CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET;

const CgroupHost& cgroup_host() {
  static std::once_flag once;
  static CgroupHost host;
  std::call_once(once, [] {
    std::optional<CgroupHost> standard = probe_standard_cgroups();
    CgroupHost probed = standard ? std::move(*standard) : probe_cgroups();
    host = rootless() ? probe_rootless_cgroups(probed) : probed;
  });
  return host;
}

// SIGINT/SIGTERM/SIGHUP to sandcell become events of the supervisor loop, so an interrupted
// run still kills its sandbox and cleans up. Restores the old mask on scope exit.
class InterruptSignals {
 public:
  InterruptSignals() {
    sigemptyset(&set_);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, sig);
    check(sigprocmask(SIG_BLOCK, &set_, &old_), "sigprocmask");
    fd_.reset(signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_) throw Error(errno, "signalfd");
  }
  ~InterruptSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  int fd() const { return fd_.get(); }

 private:
  sigset_t set_{}, old_{};
  UniqueFd fd_;
};

struct Pipe {
  UniqueFd read_end, write_end;
};

Pipe make_output_pipe(const char* name) {
  int fds[2];
  check(pipe2(fds, O_CLOEXEC), std::string("pipe for ") + name);
  Pipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
  check(fcntl(pipe.read_end.get(), F_SETFL, O_NONBLOCK), "set O_NONBLOCK");
  return pipe;
}

// A user namespace the kernel refuses this process (a chroot, an outer container's seccomp
// filter, a sysctl) is named as such, with its cause and fix, not as a failed clone3.
void throw_if_user_namespace_refused(int err) {
  std::optional<UsernsRefusal> refusal = user_namespace_refusal();
  if (!refusal) {
    errno = err;
    return;
  }
  std::string message = refusal->message();
  if (!rootless()) message += "; or run without a user namespace of the sandbox's own (userns host)";
  throw Error::invalid(message);
}

pid_t clone_child(const ChildPlan& plan, const Cgroup* cgroup, const Nesting* nest,
                  UniqueFd& pidfd) {
  int pidfd_raw = -1;
  clone_args args{};
  args.flags = kNamespaces | CLONE_PIDFD;
  if (plan.host_network || plan.unshare_network) args.flags &= ~static_cast<uint64_t>(CLONE_NEWNET);
  // --userns=auto: one clone makes the user namespace and the others, so it owns them and the
  // child, its root, may mount, set the hostname and bring up lo in them.
  if (plan.user_namespace || plan.own_user_ns) args.flags |= CLONE_NEWUSER;  // and rootless
  // Under a zygote's namespaces; v2's cgroup is joined after the clone (release_child), as the
  // zygote's root may not write to it.
  if (nest != nullptr)
    return clone_nested(plan, args.flags & ~static_cast<uint64_t>(CLONE_PIDFD), *nest, pidfd);
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd_raw);
  args.exit_signal = SIGCHLD;
  if (cgroup != nullptr && cgroup->clone_into_fd() >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup->clone_into_fd());
  }
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) run_child(plan);
  if (pid < 0 && (args.flags & CLONE_NEWUSER) && (errno == EPERM || errno == ENOSPC || errno == EUSERS))
    throw_if_user_namespace_refused(errno);
  check(pid, "clone3 into new pid, mount, uts, ipc and network namespaces");
  pidfd.reset(pidfd_raw);
  return static_cast<pid_t>(pid);
}

// The sandbox's own user namespace keeps every id of sandcell's (an identity map): files look
// the same inside, and RLIMIT_NPROC counts this sandbox's processes only. sandcell is root of its
// namespace, so it may write any map of the ids that namespace has.
void map_sandbox_ids(pid_t pid, int sync_fd) {
  for (const char* map : {"uid_map", "gid_map"}) {
    std::ifstream own(std::string("/proc/self/") + map);
    std::string text((std::istreambuf_iterator<char>(own)), std::istreambuf_iterator<char>());
    write_host_proc_file(std::to_string(pid) + "/" + map, identity_map_of(text));
  }
  if (send(sync_fd, "u", 1, MSG_NOSIGNAL) < 0 && errno != EPIPE)
    throw Error(errno, "tell the child its ids are mapped");
}

// The sandbox's init when supervise() returned before its exit (SupervisionOutcome::
// init_still_exiting): nothing of the run is left but it, and its exit is tearing the run's
// namespaces down. run_sandbox() reaps it last, so that the teardown runs alongside the
// supervisor's own end of the run (usage, cgroups, state, the record) instead of before it.
class ExitingInit {
 public:
  ExitingInit() = default;
  ~ExitingInit() { reap(); }
  ExitingInit(const ExitingInit&) = delete;
  ExitingInit& operator=(const ExitingInit&) = delete;

  void hand_over(pid_t pid) { pid_ = pid; }
  void reap() {
    if (pid_ <= 0) return;
    while (waitpid(pid_, nullptr, __WALL) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

 private:
  pid_t pid_ = -1;
};

struct Launch {
  const Spec& spec;
  const RunOptions& options;
  ChildPlanBuilder& plan;             // frozen at the clone
  std::vector<UniqueFd>& bind_trees;  // --userns=auto: the parent's copies, until the id maps
  RunState& state;
  // Made before the clone (v2: CLONE_INTO_CGROUP; none), or by make_cgroup() while the child
  // sets up its mounts (v1, which the child joins by itself after "go").
  std::unique_ptr<Cgroup>& cgroup;
  const std::function<void()>& make_cgroup;
  const NetworkPlan& network;
  const std::string& run_id;
  std::span<const UsernsMapping> userns;  // --userns=auto: the run's range, then extra slots
  NetnsClaim* netns;            // --net none as root without a user namespace (netns_pool.hpp)
  std::optional<SandboxNetwork>& sandbox_network;
  // Spec::seccomp's program, made while the child mounts, and what making it threw (for
  // run_sandbox()).
  std::optional<SeccompProgram>& seccomp;
  std::exception_ptr& seccomp_failure;
  ExitingInit& exiting_init;
  std::optional<SeccompProgram> init_seccomp = {};  // seccomp_for_init()
};

// Spec::seccomp's program, made while the child mounts (a function's: a cached profile is read
// and checked meanwhile, off the start's critical path); it reaches the child with "go". Returns
// its notify plan (nullptr: none). What the function throws (an unreadable or bad profile)
// run_sandbox() throws once the child is killed and the run cleaned up, as an invalid spec.
const SeccompNotifyPlan* make_seccomp_program(Launch& l, Result& result) {
  try {
    l.seccomp = l.spec.seccomp.program();
  } catch (...) {
    l.seccomp_failure = std::current_exception();
    throw Error(ECANCELED, "compile the seccomp profile");  // unwinds the launch
  }
  result.isolation.seccomp = l.seccomp ? l.seccomp->name : "unconfined";
  // Layers stack on it: "default+docker-seccomp".
  for (size_t i = 0; i < l.spec.seccomp_layers.size(); ++i)
    result.isolation.seccomp =
        (l.seccomp || i > 0 ? result.isolation.seccomp + "+" : "") + l.spec.seccomp_layers[i].name;
  return l.seccomp && l.seccomp->notify ? &*l.seccomp->notify : nullptr;
}

// veth and slirp: the sandbox's network is made on a thread of its own while the supervisor's
// main thread writes the id maps and attaches the child to its cgroups (a v1 attach waits for an
// RCU grace period, several ms). The two need nothing from each other but the child's pid, and
// the child waits for "go", which comes after finish(). The socket transport needs the child's
// listener, made at the end of its own setup, so it stays on the main thread.
class NetworkBuilder {
 public:
  NetworkBuilder(std::optional<SandboxNetwork>& network, const NetworkPlan& plan,
                 SandboxNetwork::Sandbox sandbox)
      : thread_([this, &network, &plan, sandbox = std::move(sandbox)]() mutable {
          try {
            network.emplace(plan, std::move(sandbox));
          } catch (...) {
            failure_ = std::current_exception();
          }
        }) {}
  ~NetworkBuilder() { join(); }
  NetworkBuilder(const NetworkBuilder&) = delete;
  NetworkBuilder& operator=(const NetworkBuilder&) = delete;

  // Waits for the network; throws what making it threw.
  void finish() {
    join();
    if (failure_) std::rethrow_exception(std::exchange(failure_, nullptr));
  }

 private:
  void join() {
    if (thread_.joinable()) thread_.join();
  }

  std::exception_ptr failure_;
  std::thread thread_;  // last: starts once failure_ exists
};

bool network_needs_the_childs_listener(const NetworkPlan& network) {
  return network.transport == NetworkTransport::Socket;
}

// The init has left the run's cgroups (Cgroup::open_parent_attach_files): what is in them now is
// what the program left running. If that is nothing, they are removed at once, while the init
// is still tearing its namespaces down, and the usage read just before is the run's.
std::optional<CgroupUsage> usage_if_removed_early(Cgroup& cgroup) {
  CgroupUsage usage = cgroup.usage();
  if (!cgroup.remove_if_empty()) return std::nullopt;
  return usage;
}

bool has_network_to_make(const NetworkPlan& network) {
  return network.mode == NetworkMode::Allow || network.mode == NetworkMode::Full;
}

// A setup step of the supervisor failed because the child had already failed and exited (its
// namespaces are gone): the child's own message is the cause worth reporting.
void rethrow_child_failure(int sync_fd) {
  std::optional<ChildMessage> failure;
  try {
    while (std::optional<ReceivedMessage> received = receive_child_message(sync_fd)) {
      if (received->message.kind < 0) break;  // nothing more queued
      if (received->message.kind == ChildMessage::SetupFailed) failure = received->message;
      if (failure) break;
    }
  } catch (const Error&) {
    return;  // the socket failed too: the supervisor's own error stands
  }
  if (failure)
    throw Error(failure->err,
                std::string(failure->step, strnlen(failure->step, sizeof failure->step)));
}

// The child's ends of its stdio and of the sync socket, and the parent's.
struct ChildChannels {
  Pipe out, err;
  UniqueFd sync_parent, sync_child;
};

ChildChannels make_child_channels(Launch& l) {
  ChildChannels c{make_output_pipe("stdout"), make_output_pipe("stderr"), {}, {}};
  int sync_fds[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sync_fds), "socketpair");
  c.sync_parent.reset(sync_fds[0]);
  c.sync_child.reset(sync_fds[1]);
  l.plan.stdio(l.options.stdin_fd, c.out.write_end.get(), c.err.write_end.get());
  l.plan.sync_socket(c.sync_child.get(), c.sync_parent.get());
  return c;
}

// The clone, from a CPU of its own (cpu_handoff.hpp), which `handoff` keeps until the run ends.
// Not with a network to make: its threads (and the proxy's) would inherit the narrowed mask.
// The parent then lets go of the child's ends.
pid_t clone_on_cpu_handoff(Launch& l, ChildChannels& c, std::optional<CpuHandOff>& handoff, UniqueFd& pidfd) {
  if (!has_network_to_make(l.network)) handoff.emplace();
  if (handoff && handoff->original()) l.plan.restore_cpus(*handoff->original());
  pid_t pid = clone_child(l.plan.freeze(), l.cgroup.get(), l.options.nest_under, pidfd);
  if (handoff) handoff->leave();
  c.sync_child.reset();
  if (l.options.outside_program) return pid;  // the program's stdio: kept for its start
  c.out.write_end.reset();
  c.err.write_end.reset();
  return pid;
}

// The seccomp program the init loads. A program from outside loads its own copy and sends its
// own listener (the supervisor's denial log is the program's): the init's asks for none.
const SeccompProgram* seccomp_for_init(Launch& l) {
  if (!l.seccomp) return nullptr;
  if (!l.options.outside_program || !(l.seccomp->flags & SECCOMP_FILTER_FLAG_NEW_LISTENER))
    return &*l.seccomp;
  l.init_seccomp = *l.seccomp;
  l.init_seccomp->flags &= ~static_cast<uint32_t>(SECCOMP_FILTER_FLAG_NEW_LISTENER);
  return &*l.init_seccomp;
}

// From the clone to "go": what the child waits for, in the order it needs it. Returns the
// seccomp program's notify plan (nullptr: none).
const SeccompNotifyPlan* release_child(Launch& l, pid_t pid, int sync_fd, int interrupts_fd, Result& result) {
  const ChildPlan& plan = l.plan.plan();
  std::optional<SandboxNetwork>& network = l.sandbox_network;
  SandboxNetwork::Sandbox sandbox{.run_id = l.run_id,
                                  .run_dir = has_network_to_make(l.network) ? l.state.dir() : "",
                                  .pid = pid,
                                  .proxy_env = plan.proxy_env.get(),
                                  .proxy_listener = {}};
  std::optional<NetworkBuilder> builder;
  if (has_network_to_make(l.network) && !network_needs_the_childs_listener(l.network))
    builder.emplace(network, l.network, std::move(sandbox));
  // The id maps first: the child waits for them before its mounts, and only "go" waits for
  // the cgroup. (After the cgroup, the child of a `sandcell code` sat idle ~0.2 ms here.)
  if (!l.userns.empty())
    map_user_namespace(pid, l.userns, plan, sync_fd,
                       l.options.nest_under != nullptr);  // the child waits for it
  l.bind_trees.clear();  // the child has its copies (idmapped ones: once it has the maps)
  if (plan.own_user_ns) map_sandbox_ids(pid, sync_fd);
  // The child waits for these right before its declared mounts, which it reached before the
  // cgroup and the seccomp program were made (a `sandcell code`'s child waited ~0.5 ms for its
  // workspace there, more on a slow VM): they come next, while it finishes its root.
  if (plan.late_binds > 0) send_late_binds(pid, plan, sync_fd, l.options.before_binds);
  if (!l.cgroup) l.make_cgroup();  // v1: while the child mounts; it joins after "go"
  const SeccompNotifyPlan* notify = make_seccomp_program(l, result);
  std::vector<UniqueFd> cgroup_tasks = l.cgroup->open_self_attach_files();
  std::vector<UniqueFd> parent_tasks;
  UniqueFd pids_limit;
  if (!cgroup_tasks.empty()) {
    parent_tasks = l.cgroup->open_parent_attach_files();
    pids_limit = l.cgroup->open_pids_limit();
  }
  l.state.record(pid, l.cgroup->paths());
  if (l.options.on_started) l.options.on_started(pid, l.cgroup->paths());
  if ((l.cgroup->clone_into_fd() < 0 || l.options.nest_under) && cgroup_tasks.empty())
    l.cgroup->add_process(pid);
  if (builder) builder->finish();
  if (has_network_to_make(l.network) && network_needs_the_childs_listener(l.network)) {
    sandbox.proxy_listener = wait_for_proxy_listener(sync_fd, interrupts_fd);
    // No listener: the child failed first, and supervise() reports its message.
    if (sandbox.proxy_listener) network.emplace(l.network, std::move(sandbox));
  }
  if (plan.terminal) {
    // No master: the child failed first, and supervise() reports its message.
    if (UniqueFd master = wait_for_terminal(sync_fd, interrupts_fd)) l.options.on_terminal(std::move(master));
  }
  timeline::mark("go");
  send_go(sync_fd, cgroup_tasks, seccomp_for_init(l), parent_tasks, pids_limit);
  // The next run's network namespace, made while this one's program starts (~0.7 ms of the
  // supervisor's otherwise idle time; the child entered the one it took long before "go").
  if (l.netns) l.netns->replace();
  return notify;
}

// A release step failed. Before "go" the child is alone (it forks nothing before), in the
// cgroup or not yet: killed and reaped; its own message, when it failed first, is the cause.
[[noreturn]] void kill_unreleased_child(const UniqueFd& pidfd, pid_t pid, int sync_fd) {
  syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
  waitpid(pid, nullptr, 0);
  rethrow_child_failure(sync_fd);
  throw;  // the release step's own error
}

// The record of a supervised run: status, usage (a pooled run's from its hand-over), events.
void record_run(Launch& l, Result& result, const SupervisionOutcome& outcome, const std::optional<CgroupUsage>& early_usage,
                const OutputPump& out_pump, const OutputPump& err_pump, std::chrono::steady_clock::time_point start) {
  std::optional<SandboxNetwork>& network = l.sandbox_network;
  if (network) network->record(result.events);
  // A pooled run's clock starts at the hand-over (RunOptions::hand_over).
  const auto clock_start = outcome.handed_over_at.value_or(start);
  result.wall_ms = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::steady_clock::now() - clock_start)
                                             .count());
  CgroupUsage usage = early_usage ? *early_usage : l.cgroup->usage();
  if (outcome.handed_over_at) {
    result.pooled = true;
    usage.cpu_ns -= std::min(usage.cpu_ns, outcome.cpu_ns_at_hand_over);
    result.limits.wall_s = outcome.terms.wall_s;
    result.limits.cpu_s = outcome.terms.cpu_s;
    result.limits.output_bytes = outcome.terms.output_bytes;
  }
  fill_outcome(result, outcome, usage, l.spec.limits);
  if (cpu_rlimit_hit(result)) result.status = Status::TimeoutCpu;
  result.events.denied_syscalls = outcome.denied_syscalls;
  if (!outcome.seccomp_kill.empty()) result.error = outcome.seccomp_kill;
  if (outcome.child_failure) describe_failure(result, *outcome.child_failure);
  result.stdout_bytes = out_pump.total_bytes();
  result.stderr_bytes = err_pump.total_bytes();
  result.stdout_truncated = out_pump.truncated();
  result.stderr_truncated = err_pump.truncated();
}

// A pid as the innermost pid namespace of its process sees it (the last of its pidfd's NSpid).
pid_t innermost_pid(int pidfd) {
  std::ifstream info("/proc/self/fdinfo/" + std::to_string(pidfd));
  for (std::string line; std::getline(info, line);) {
    if (!line.starts_with("NSpid:")) continue;
    const size_t last = line.find_last_of(" \t");
    return last == std::string::npos ? 0 : static_cast<pid_t>(std::atoi(line.c_str() + last + 1));
  }
  return 0;
}

// RunOptions::outside_program, when the init waits: the run's cgroup files, the confinement plan
// and the program's stdio to the caller's start(); the supervisor's copies go after it.
OutsideStarted start_outside_program(Launch& l, pid_t init, ChildChannels& channels) {
  const uint32_t joined = confine_namespaces(l.plan.plan());
  static const std::pair<const char*, int> kNamespaces[] = {
      {"user", CLONE_NEWUSER}, {"ipc", CLONE_NEWIPC},       {"uts", CLONE_NEWUTS},
      {"net", CLONE_NEWNET},   {"cgroup", CLONE_NEWCGROUP}, {"mnt", CLONE_NEWNS}};
  auto open_namespace = [init](const char* name) {
    const std::string path = "/proc/" + std::to_string(init) + "/ns/" + name;
    UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw Error(errno, "open " + path);
    return fd;
  };
  std::vector<UniqueFd> namespaces;
  std::array<int, 6> namespace_fds{-1, -1, -1, -1, -1, -1};
  for (size_t i = 0; i < std::size(kNamespaces); ++i) {
    if (!(joined & static_cast<uint32_t>(kNamespaces[i].second))) continue;
    namespaces.push_back(open_namespace(kNamespaces[i].first));
    namespace_fds[i] = namespaces.back().get();
  }
  const UniqueFd pid_namespace = open_namespace("pid");
  std::vector<UniqueFd> cgroup_files;
  for (const std::string& dir : l.cgroup->paths()) {
    UniqueFd file(open((dir + "/tasks").c_str(), O_WRONLY | O_CLOEXEC));  // v1
    if (!file) file.reset(open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC));
    if (!file) throw Error(errno, "open the cgroup files of " + dir + " for the program");
    cgroup_files.push_back(std::move(file));
  }
  std::vector<int> cgroup_fds;
  for (const UniqueFd& file : cgroup_files) cgroup_fds.push_back(file.get());
  const std::vector<unsigned char> plan =
      confine_plan_for(l.plan.plan(), l.seccomp ? &*l.seccomp : nullptr, current_umask());
  UniqueFd null_input;
  if (l.options.stdin_fd < 0) {
    null_input.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (!null_input) throw Error(errno, "open /dev/null for the program's stdin");
  }
  int report[2];
  check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, report), "socketpair");
  UniqueFd ours(report[0]), theirs(report[1]);
  const OutsideEntry entry{.pid_namespace_fd = pid_namespace.get(),
                           .namespace_fds = namespace_fds,
                           .cgroup_fds = cgroup_fds,
                           .plan = plan,
                           .stdin_fd = null_input ? null_input.get() : l.options.stdin_fd,
                           .stdout_fd = channels.out.write_end.get(),
                           .stderr_fd = channels.err.write_end.get(),
                           .report_fd = theirs.get()};
  UniqueFd program = l.options.outside_program->start(entry);
  channels.out.write_end.reset();  // the program's copies are the only ones: EOF at its end
  channels.err.write_end.reset();
  if (!program) throw Error(EINVAL, "the program from outside has no pidfd");
  const pid_t pid = innermost_pid(program.get());
  return OutsideStarted{
      .pidfd = std::move(program), .pid_in_sandbox = pid, .report = std::move(ours)};
}

// The parent's side of a run, in order (the child's is child_setup.cpp): its channels, the
// clone, the release up to "go", the supervision until the program is done, the record. True
// when the record was given to RunOptions::on_result here: a pooled program that said it was
// done (SupervisionOutcome::frozen) is answered for while its sandbox is frozen, then killed; its
// exit and the rest of the teardown come after the answer.
bool supervise_child(Launch& l, Result& result, const std::chrono::steady_clock::time_point start) {
  ChildChannels channels = make_child_channels(l);
  InterruptSignals interrupts;
  UniqueFd pidfd;
  std::optional<CpuHandOff> handoff;  // kept for the whole run, until supervise_child() returns
  timeline::mark("clone");
  const pid_t pid = clone_on_cpu_handoff(l, channels, handoff, pidfd);
  timeline::mark("cloned");
  OutputPump out_pump(std::move(channels.out.read_end), Stream::Stdout,
                      l.spec.limits.output_bytes.value_or(~0ull), l.options.output);
  OutputPump err_pump(std::move(channels.err.read_end), Stream::Stderr,
                      l.spec.limits.output_bytes.value_or(~0ull), l.options.output);
  const SeccompNotifyPlan* notify = nullptr;
  const int sync_fd = channels.sync_parent.get();
  try {
    notify = release_child(l, pid, sync_fd, interrupts.fd(), result);
  } catch (...) {
    kill_unreleased_child(pidfd, pid, sync_fd);
  }
  std::optional<CgroupUsage> early_usage;
  Supervised run{pid,
                 pidfd.get(),
                 out_pump,
                 err_pump,
                 *l.cgroup,
                 l.spec.limits,
                 interrupts.fd(),
                 sync_fd,
                 notify,
                 [&network = l.sandbox_network, &early_usage, &cgroup = *l.cgroup](bool init_left_cgroups) {
                   if (network) network->withdraw();
                   if (init_left_cgroups) early_usage = usage_if_removed_early(cgroup);
                 },
                 l.options.hand_over};
  if (l.options.outside_program) {
    run.start_outside = [&] { return start_outside_program(l, pid, channels); };
    run.outside_wait_status = [&l] { return l.options.outside_program->wait_status(); };
  }
  SupervisionOutcome outcome = supervise(run);
  timeline::mark("program_done");
  if (outcome.init_still_exiting) l.exiting_init.hand_over(pid);
  record_run(l, result, outcome, early_usage, out_pump, err_pump, start);
  timeline::mark("recorded");
  if (!outcome.frozen) return false;
  if (l.options.on_result) l.options.on_result(result);
  kill_sandbox(run);  // the init first: its pid namespace's end kills the rest once thawed
  l.exiting_init.hand_over(pid);
  return true;
}

}  // namespace

Result run_sandbox(const Spec& spec, const RunOptions& options) {
  if (geteuid() != 0)
    throw Error::invalid(rootless_unavailable().empty()
                             ? "sandcell runs sandboxes as root or in a user namespace it "
                               "makes at start (rootless mode)"
                             : rootless_unavailable());
  auto start = std::chrono::steady_clock::now();
  std::string state_root = options.state_root.empty() ? default_state_root() : options.state_root;
  std::string run_id = new_run_id();
  const bool late_binds = std::any_of(spec.bind_mounts.begin(), spec.bind_mounts.end(),
                                      [](const BindMount& b) { return b.late; });
  if (late_binds && !options.before_binds)
    throw Error::invalid("a late bind mount needs RunOptions::before_binds");
  // Without a user namespace the child binds by path, so the late sources come first.
  if (late_binds && spec.user_namespace != UserNamespace::Auto) options.before_binds();
  // Input errors here and in plan_network().
  ChildPlanBuilder builder = ChildPlanBuilder::for_sandbox(spec, scratch_mount_point(state_root));
  if (options.on_terminal) builder.terminal();
  const ChildPlan& plan = builder.plan();
  NetworkPlan network_plan = plan_network(spec);
  if (options.outside_program) {
    if (options.on_terminal || !plan.apparmor_profile.empty() ||
        network_plan.mode == NetworkMode::Allow)
      throw Error::invalid(
          "a program from outside takes no terminal, AppArmor profile or allow network yet");
    builder.outside_program();
  }

  Result result;
  result.limits = spec.limits;
  for (const TmpfsMount& t : spec.tmpfs_mounts) result.tmpfs_bytes[t.destination] = t.size_bytes;
  std::optional<SeccompProgram> seccomp;
  std::exception_ptr seccomp_failure;
  const CgroupHost& host = cgroup_host();
  result.isolation = isolation_of(spec, network_plan, host.mode);
  try {
    ExitingInit exiting_init;  // reaped after everything below is done
    // Declared before the run's state and cgroup, so it is destroyed after them: by then the
    // elements it expired at the program's exit are gone (nft_rules.hpp), and where they had to
    // be deleted, the grace period that closing its nft socket waits for ran meanwhile.
    std::optional<SandboxNetwork> network;
    RunState state(state_root, run_id);
    if (network_plan.mode == NetworkMode::Full)
      builder.resolv_conf(write_sandbox_resolv_conf(network_plan, state.dir()));
    if (std::optional<uint16_t> port = proxy_listener_port(network_plan))
      builder.proxy_listener(*port);
    std::optional<UsernsClaim> userns;
    std::vector<std::unique_ptr<UsernsClaim>> extra_slots;
    std::vector<UsernsMapping> slots;  // userns's range, then extra_slots'
    std::vector<UniqueFd> bind_trees;
    if (options.nest_under && !plan.user_namespace)
      throw Error::invalid(
          "a sandbox nested under a zygote needs a user namespace of its own (userns auto)");
    if (options.nest_under && plan.overlay_from_supervisor)
      throw Error::invalid("a sandbox nested under a zygote needs overlayfs in user namespaces");
    if (options.extra_userns_slots > 0 && !plan.user_namespace)
      throw Error::invalid(
          "extra id slots need a user namespace of the sandbox's own (userns auto)");
    if (options.extra_userns_slots > kMaxExtraUsernsSlots)
      throw Error::invalid("at most " + std::to_string(kMaxExtraUsernsSlots) + " extra id slots");
    if (plan.user_namespace) {
      if (options.nest_under && options.extra_userns_slots > 0)
        throw Error::invalid("a sandbox nested under a zygote has no id slots to give out");
      if (!options.nest_under) {
        userns.emplace(userns_pool(), state_root, run_id);
        slots.push_back(userns->mapping());
        for (uint32_t i = 0; i < options.extra_userns_slots; ++i) {
          extra_slots.push_back(std::make_unique<UsernsClaim>(userns_pool(), state_root, run_id));
          slots.push_back(extra_slots.back()->mapping());
        }
      } else {
        slots.push_back(options.nest_under->host);
      }
      result.isolation.userns = slots.front();
      if (options.on_userns) options.on_userns(slots);
      if (std::optional<std::string> warning = userns_overlay_warning(false))
        result.warnings.push_back(*warning);
      bind_trees = builder.detach_bind_sources();
    }
    if (plan.own_user_ns && !plan.persistent_upper)
      if (std::optional<std::string> warning = userns_overlay_warning(true))
        result.warnings.push_back(*warning);
    // --net none: the child makes its network namespace, or enters one made ahead.
    std::optional<NetnsClaim> netns;
    if (network_plan.mode == NetworkMode::None) {
      if (!plan.user_namespace && !plan.own_user_ns && netns_pool_enabled())
        netns.emplace(state_root, run_id);
      builder.unshare_network(netns ? netns->fd() : -1);
    }
    std::unique_ptr<Cgroup> cgroup;
    const std::function<void()> make_cgroup = [&] {
      // A pooled run's cgroup is frozen when its program says it is done (v1: a freezer too).
      cgroup = create_cgroup(host, run_id, {.freezer = options.freezer || options.hand_over});
      result.enforced = enforce_limits(*cgroup, spec.limits);
      record_disk_bound(spec, result);
    };
    // v1's hierarchies (memory, pids, cpu, cpuacct; no freezer unless the caller pauses: the pid
    // namespace ends the tree, see CgroupNeeds) are made while the child sets up its mounts; v2 must exist for
    // clone3 (CLONE_INTO_CGROUP) and "none" decides the rlimits.
    if (host.mode != CgroupHost::Mode::V1) make_cgroup();
    if (options.hand_over && host.mode != CgroupHost::Mode::None) builder.program_done_signal();
    if (host.mode == CgroupHost::Mode::None) {
      std::vector<Rlimit> fallbacks;
      add_rlimit_fallbacks(spec.limits, plan.own_user_ns, fallbacks, result.enforced,
                           result.warnings);
      builder.add_rlimits(fallbacks);
    }
    Launch launch{spec,
                  options,
                  builder,
                  bind_trees,
                  state,
                  cgroup,
                  make_cgroup,
                  network_plan,
                  run_id,
                  slots,
                  netns ? &*netns : nullptr,
                  network,
                  seccomp,
                  seccomp_failure,
                  exiting_init};
    const bool answered = supervise_child(launch, result, start);
    cgroup->remove();
    if (options.on_result && !seccomp_failure && !answered) options.on_result(result);
  } catch (const Error& e) {
    result.status = Status::RuntimeError;
    result.error = e.what();
  }
  timeline::mark("torn_down");
  // The run's state and cgroup are gone by now.
  if (seccomp_failure) std::rethrow_exception(seccomp_failure);
  return result;
}

}  // namespace sandcell::runtime
