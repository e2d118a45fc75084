// create / start / run / delete: the container's life from the runtime-spec's point of view
// (creating → created → running → stopped).
#include "sandcell/oci/lifecycle.hpp"

#include <fcntl.h>
#include <sys/capability.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>

#include "cgroup_resources.hpp"
#include "cgroups_path.hpp"
#include "config_parts.hpp"
#include "hooks.hpp"
#include "systemd_cgroup.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/oci/config.hpp"
#include "sandcell/runtime/container.hpp"
#include "unix_socket.hpp"

namespace sandcell::oci {
namespace {

using runtime::UniqueFd;

bool has_sys_resource() {
  cap_t caps = cap_get_proc();
  cap_flag_value_t value = CAP_CLEAR;
  if (caps != nullptr) cap_get_flag(caps, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &value);
  cap_free(caps);
  return value == CAP_SET;
}

// Raising a hard rlimit needs CAP_SYS_RESOURCE in the host's user namespace. Root in some
// containers and VMs lacks it (this is why podman's default nofile/nproc make runc fail here):
// say so before anything is created, naming the limit and the podman flag that avoids it.
void check_rlimits_raisable(const runtime::Spec& spec) {
  if (has_sys_resource()) return;
  for (const runtime::Rlimit& limit : spec.rlimits) {
    rlimit current{};
    if (getrlimit(limit.resource, &current) < 0 || limit.hard <= current.rlim_max) continue;
    std::string name = runtime::rlimit_name(limit.resource);
    std::string flag = name.substr(7);
    for (char& c : flag) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    throw Error::invalid("process.rlimits: " + name + " hard limit " + std::to_string(limit.hard) +
                         " is above this host's hard limit " + std::to_string(current.rlim_max) +
                         " and sandcell-oci lacks CAP_SYS_RESOURCE to raise it (podman: --ulimit " + flag +
                         "=" + std::to_string(current.rlim_max) + ":" + std::to_string(current.rlim_max) + ")");
  }
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << pid;
    if (!out.flush()) throw Error(errno, "write --pid-file " + path);
  }
  if (rename(tmp.c_str(), path.c_str()) < 0) throw Error(errno, "rename to --pid-file " + path);
}

std::string hook_state(const ContainerState& s, Status status) { return state_json(s, status).dump(); }

// The hooks start and delete run, as create read them: "any updates to config.json after
// [create] MUST NOT affect the container" (runtime-spec, lifecycle step 2).
void save_later_hooks(const StateStore& store, const std::string& id, const Hooks& hooks) {
  auto entries = [](const std::vector<Hook>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const Hook& hook : list) {
      nlohmann::json entry = {{"path", hook.path}, {"args", hook.args}, {"env", hook.env}};
      if (hook.timeout_s) entry["timeout"] = *hook.timeout_s;
      out.push_back(entry);
    }
    return out;
  };
  std::string path = store.dir(id) + "/hooks.json";
  std::ofstream out(path, std::ios::trunc);
  out << nlohmann::json{{"poststart", entries(hooks.poststart)}, {"poststop", entries(hooks.poststop)}}.dump();
  if (!out.flush()) throw Error(errno, "write " + path);
}

Hooks load_later_hooks(const StateStore& store, const ContainerState& s) {
  std::ifstream in(store.dir(s.id) + "/hooks.json");
  try {
    // A container created before the hooks were kept: its bundle's, as they were read then.
    return in ? parse_hooks(nlohmann::json::parse(in)) : load_config(s.bundle).hooks;
  } catch (const nlohmann::json::exception&) {
    return {};
  } catch (const Error&) {
    return {};  // the bundle may be gone after create (containerd keeps it; others need not)
  }
}

// The spec: a failing poststop hook is logged; the remaining hooks and the lifecycle go on.
void run_poststop_hooks(const Hooks& hooks, const ContainerState& s) {
  run_hooks_warning_on_failure(hooks.poststop, "hooks.poststop", hook_state(s, Status::Stopped));
}

// Everything create made, undone: the init, its cgroups, the state directory.
void abandon(const StateStore& store, const std::string& id, pid_t pid,
             const MadeCgroups& cgroups) {
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  try {
    remove_made_cgroups(cgroups.dirs, cgroups.created);
  } catch (const Error&) {
    // The original failure is the one to report.
  }
  std::error_code ignored;
  std::filesystem::remove_all(store.dir(id), ignored);
}

// The signals `run` in the foreground forwards to the container's init (as runc does).
sigset_t forwarded_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH})
    sigaddset(&set, sig);
  return set;
}

// `run` in the foreground stands in for the container: signals sent to it (blocked by run()
// since before the create, so none is lost or ends sandcell-oci in between) go to the init, until
// the init exits. Returns its exit code, 128+N for signal N.
int wait_forwarding_signals(pid_t pid) {
  const sigset_t forwarded = forwarded_signals();
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    siginfo_t info{};
    int sig = sigwaitinfo(&forwarded, &info);
    if (sig > 0 && sig != SIGCHLD) ::kill(pid, sig);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// startContainer and createContainer hooks run inside the container, from the init (the one
// before the program, the other before pivot_root). Their state is made now; its pid is the
// init's in its own pid namespace, as runc's init reports getpid() (1 when the config makes one;
// 0 when it joins another, where the number is not known before clone).
std::vector<runtime::StartHook> init_hooks(const std::vector<Hook>& hooks,
                                           const std::string& state) {
  std::vector<runtime::StartHook> out;
  for (const Hook& hook : hooks)
    out.push_back({.path = hook.path,
                   .args = hook.args,
                   .env = hook.env,
                   .state_json = state,
                   .timeout_s = hook.timeout_s.value_or(0)});
  return out;
}

void plan_init_hooks(Config& config, const ContainerState& s) {
  ContainerState inside = s;
  inside.pid = 0;
  for (const runtime::Namespace& ns : config.spec.container->namespaces)
    if (ns.type == "pid" && ns.path.empty()) inside.pid = 1;
  config.spec.container->start_hooks =
      init_hooks(config.hooks.start_container, hook_state(inside, Status::Created));
  config.spec.container->create_hooks =
      init_hooks(config.hooks.create_container, hook_state(inside, Status::Creating));
}

void write_cgroup_file(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) throw Error(errno, "write " + value + " to " + path);
}

// --systemd-cgroup: what create checks before anything exists (the unit's name, a reachable
// systemd, a pure v2 host), and the resources as systemd properties.
struct SystemdPlan {
  systemd::SystemdConnection bus;
  systemd::UnitPlace place;
  std::vector<systemd::Property> resources;
  bool user_manager;
};

// runc's choice of manager: the user's own for an unprivileged caller, and for root inside a
// user namespace (rootless podman runs its runtime so) that has a user session
// (XDG_RUNTIME_DIR); the system manager otherwise.
bool use_user_manager() {
  if (geteuid() != 0) return true;
  std::ifstream map("/proc/self/uid_map");
  uint64_t inside = 0, outside = 0, count = 0;
  bool initial_userns = (map >> inside >> outside >> count) && inside == 0 && outside == 0 &&
                        count == 4294967295u;
  return !initial_userns && getenv("XDG_RUNTIME_DIR") != nullptr;
}

SystemdPlan plan_systemd(const runtime::CgroupHost& host, const std::string& cgroups_path,
                         const std::string& id, const ResourcePlan& resources) {
  bool user_manager = use_user_manager();
  systemd::UnitPlace place = systemd::parse_cgroups_path(cgroups_path, id, user_manager);
  systemd::SystemdConnection bus = systemd::SystemdConnection::open(user_manager);
  if (host.v2_root.empty() || !host.v1_roots.empty())
    throw Error::invalid(
        "--systemd-cgroup: sandcell-oci's systemd driver needs a pure cgroup v2 host, and this "
        "one has cgroup v1 hierarchies; use the cgroupfs driver here");
  int version = bus.version();
  return {.bus = std::move(bus),
          .place = place,
          .resources = systemd::resource_properties(resources, version),
          .user_manager = user_manager};
}

// Has systemd start the container's unit with the init in it (the init waits for "go"), then
// writes every planned file into the unit's cgroup as runc's fs2.Set does: the files are the
// authority, and they carry what systemd has no property for. Returns the cgroup directory.
std::string start_systemd_unit(SystemdPlan& sd, const runtime::CgroupHost& host,
                               const std::string& id, pid_t pid, const ResourcePlan& resources) {
  std::vector<systemd::Property> properties = systemd::unit_properties(sd.place, id, pid);
  properties.insert(properties.end(), sd.resources.begin(), sd.resources.end());
  std::string dir = host.v2_root + sd.bus.start_unit(sd.place.unit, properties, systemd::kJobTimeout);
  // A slice holds no PIDs= in systemd: the init is moved in by hand, as runc's fs manager does.
  if (sd.place.is_slice()) write_cgroup_file(dir + "/cgroup.procs", std::to_string(pid));
  // systemd enables the controllers it knows for a delegated scope; hugetlb, rdma and misc
  // it does not know.
  enable_v2_controllers(std::filesystem::path(dir).parent_path(), resources.v2_controllers);
  apply_resources(resources, {dir});
  return dir;
}

void stop_systemd_unit(bool user_manager, const std::string& unit) {
  systemd::SystemdConnection::open(user_manager).stop_unit(unit, systemd::kJobTimeout);
}

}  // namespace

pid_t create(const StateStore& store, const std::string& id, const CreateOptions& options) {
  std::string bundle = std::filesystem::absolute(options.bundle).lexically_normal().string();
  if (bundle.size() > 1 && bundle.back() == '/') bundle.pop_back();
  Config config = load_config(bundle);
  runtime::Spec& spec = config.spec;
  spec.container->id = id;
  spec.container->no_pivot = options.no_pivot;
  check_rlimits_raisable(spec);
  if (spec.container->terminal && options.console_socket.empty())
    throw Error::invalid("process.terminal is true: --console-socket is required");
  // Planned before anything exists: a field this host cannot apply leaves nothing behind.
  runtime::CgroupHost host = runtime::probe_cgroups();
  ResourcePlan resources =
      plan_resources(config.resources, controller_versions(host), spec.container->devices);
  std::optional<SystemdPlan> sd;
  std::vector<CgroupDir> cgroup_dirs;
  if (options.systemd_cgroup)
    sd.emplace(plan_systemd(host, spec.container->cgroups_path, id, resources));
  else
    cgroup_dirs = resolve_cgroups_path(host, spec.container->cgroups_path, id);
  store.reserve(id);
  try {
    save_later_hooks(store, id, config.hooks);
  } catch (...) {
    store.remove(id);
    throw;
  }
  ContainerState s;
  s.id = id;
  s.bundle = bundle;
  s.created = rfc3339_now();
  s.annotations = config.annotations;
  plan_init_hooks(config, s);
  runtime::CreatedContainer made;
  MadeCgroups cgroups;
  try {
    cgroups = make_cgroups(cgroup_dirs, resources.v2_controllers);
    s.cgroup_paths = cgroups.dirs;
    s.cgroup_created = cgroups.created;
    if (!sd) apply_resources(resources, cgroups.dirs);  // systemd's: once the unit exists
    UniqueFd listener = listen_unix(store.start_socket(id));
    UniqueFd console = options.console_socket.empty() ? UniqueFd() : connect_unix(options.console_socket, SOCK_STREAM);
    runtime::ContainerIo io{.console_socket = console.get(), .preserve_fds = options.preserve_fds};
    std::function<void(pid_t)> placed;
    if (sd)
      placed = [&](pid_t pid) {
        s.systemd_unit = sd->place.unit;  // from here on, a failure stops it
        s.systemd_user = sd->user_manager;
        s.cgroup_paths = {start_systemd_unit(*sd, host, id, pid, resources)};
      };
    auto record = [&](pid_t pid) {
      s.pid = pid;
      s.pid_start = process_start_time(pid);
      store.save(s);
    };
    // The runtime-spec's moment: the init has made its mounts and waits before pivot_root. Run
    // here, in the runtime's namespaces; the createContainer hooks follow in the init. Only a
    // config with such hooks makes the init stop there.
    std::function<void(pid_t)> prepared;
    if (!config.hooks.prestart.empty() || !config.hooks.create_runtime.empty())
      prepared = [&](pid_t pid) {
        record(pid);
        run_hooks(config.hooks.prestart, "hooks.prestart", hook_state(s, Status::Creating));
        run_hooks(config.hooks.create_runtime, "hooks.createRuntime",
                  hook_state(s, Status::Creating));
      };
    made = runtime::create_container(spec, listener.get(), io, cgroups.dirs, placed, prepared);
    record(made.pid);
    write_pid_file(options.pid_file, made.pid);
  } catch (...) {
    abandon(store, id, made.pid, cgroups);
    if (!s.systemd_unit.empty()) {
      try {
        sd->bus.stop_unit(s.systemd_unit, systemd::kJobTimeout);
      } catch (const Error&) {
        // The original failure is the one to report.
      }
    }
    // Lifecycle steps 3-5: a failed create is destroyed (step 12), then the poststop hooks run
    // (step 13), as runc's destroy does.
    run_poststop_hooks(config.hooks, s);
    throw;
  }
  return made.pid;
}

void start(const StateStore& store, const std::string& id) {
  ContainerState s = store.load(id);
  Status status = current_status(s);
  if (status != Status::Created)
    throw Error::invalid("container " + id + " is " + status_name(status) + ", not created: it cannot be started");
  Hooks hooks = load_later_hooks(store, s);
  UniqueFd connection = connect_unix(store.start_socket(id), SOCK_SEQPACKET);
  runtime::start_container(connection.get());
  s.started = true;
  store.save(s);
  unlink(store.start_socket(id).c_str());
  try {
    run_hooks(hooks.poststart, "hooks.poststart", hook_state(s, Status::Running));
  } catch (const Error& e) {
    // The runtime-spec (lifecycle step 9; older texts said a warning): a failing poststart hook
    // is an error and stops the container, which delete then destroys; runc does the same.
    ::kill(s.pid, SIGKILL);
    throw Error::invalid(std::string(e.what()) + "; container " + id + " was stopped");
  }
}

int run(const StateStore& store, const std::string& id, const CreateOptions& options, bool detach) {
  // In the foreground, a signal that comes while the container is made and started waits for
  // wait_forwarding_signals() (SIGTERM once the program runs used to end sandcell-oci itself,
  // leaving the container running). The init and the hooks start with an empty mask.
  sigset_t old;
  if (!detach) {
    const sigset_t forwarded = forwarded_signals();
    sigprocmask(SIG_BLOCK, &forwarded, &old);
  }
  pid_t pid = -1;
  try {
    pid = create(store, id, options);
    try {
      start(store, id);
    } catch (...) {
      remove(store, id, true);
      throw;
    }
  } catch (...) {
    if (!detach) sigprocmask(SIG_SETMASK, &old, nullptr);
    throw;
  }
  if (detach) return 0;
  int code = wait_forwarding_signals(pid);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  remove(store, id, true);
  return code;
}

nlohmann::json state(const StateStore& store, const std::string& id) {
  ContainerState s = store.load(id);
  return state_json(s, current_status(s));
}

void remove(const StateStore& store, const std::string& id, bool force) {
  if (!std::filesystem::exists(store.dir(id) + "/state.json")) {
    // As runc: a create that died before writing its state leaves at most a directory, and
    // --force (what shims call on cleanup) is satisfied when nothing is left.
    std::error_code ignored;
    std::filesystem::remove_all(store.dir(id), ignored);
    if (force) return;
  }
  ContainerState s = store.load(id);
  Status status = current_status(s);
  if ((status == Status::Running || status == Status::Paused) && !force)
    throw Error::invalid("container " + id + " is " + status_name(status) +
                         ": stop it first (sandcell-oci kill) or use delete --force");
  if (status == Status::Paused) runtime::freeze_container(s.cgroup_paths, false);
  if (status != Status::Stopped) ::kill(s.pid, SIGKILL);
  if (!s.systemd_unit.empty()) {
    // The whole delegated subtree at once (cgroup.procs lists only the scope's own processes);
    // then systemd stops the unit and removes its cgroup, which is systemd's, not ours.
    // The scope may be gone meanwhile: systemd removes an emptied scope's cgroup (the init was
    // killed just above), and then nothing is left to kill (CI's VM once failed delete --force
    // here on a cgroup.kill that existed when checked and was gone when written).
    for (const std::string& dir : s.cgroup_paths) {
      UniqueFd kill_file(open((dir + "/cgroup.kill").c_str(), O_WRONLY | O_CLOEXEC));
      if (!kill_file) {
        if (errno == ENOENT) continue;
        throw Error(errno, "open " + dir + "/cgroup.kill");
      }
      if (write(kill_file.get(), "1", 1) != 1 && errno != ENOENT && errno != ENODEV)
        throw Error(errno, "write 1 to " + dir + "/cgroup.kill");
    }
    remove_made_cgroups(s.cgroup_paths, {});
    stop_systemd_unit(s.systemd_user, s.systemd_unit);
  } else {
    remove_made_cgroups(s.cgroup_paths, s.cgroup_created);
  }
  Hooks hooks = load_later_hooks(store, s);
  store.remove(id);
  run_poststop_hooks(hooks, s);
}

}  // namespace sandcell::oci
