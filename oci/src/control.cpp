// kill / pause / resume / ps / update / list / signal names: verbs on an existing container.
#include <signal.h>
#include <string.h>

#include <cctype>

#include "cgroup_resources.hpp"
#include "systemd_cgroup.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/runtime/container.hpp"

namespace sandcell::oci {
namespace {

ContainerState load_in(const StateStore& store, const std::string& id, std::initializer_list<Status> allowed,
                       const char* verb) {
  ContainerState s = store.load(id);
  Status status = current_status(s);
  for (Status ok : allowed)
    if (status == ok) return s;
  throw Error::invalid("cannot " + std::string(verb) + " container " + id + ": it is " + status_name(status));
}

}  // namespace

int parse_signal(const std::string& text) {
  if (!text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    auto number = parse_number<int>(text);
    if (number && *number > 0 && *number < NSIG) return *number;
  }
  std::string name = text;
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.starts_with("SIG")) name = name.substr(3);
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* abbrev = sigabbrev_np(sig);
    if (abbrev != nullptr && name == abbrev) return sig;
  }
  throw Error::invalid("unknown signal '" + text + "'");
}

void kill(const StateStore& store, const std::string& id, int signal, bool all) {
  ContainerState s = store.load(id);
  Status status = current_status(s);
  if (!all) {
    // runc's words for it: containerd's shim takes "container not running" as "already gone"
    // (and fails the call on any other text).
    if (status != Status::Created && status != Status::Running && status != Status::Paused)
      throw Error::invalid("cannot kill container " + id + ": container not running (it is " +
                           status_name(status) + ")");
    check(::kill(s.pid, signal), "kill " + std::to_string(s.pid));
    return;
  }
  // --all signals whatever is left in the container's cgroups, of a stopped container too, as
  // runc does: containerd's CRI plugin kills the rest of an exited container's processes this
  // way before it deletes the task, and fails the exit event (the container never leaves
  // "running" for the kubelet) when kill refuses.
  for (pid_t pid : runtime::container_pids(s.cgroup_paths)) ::kill(pid, signal);
  // A frozen task only acts on the signal once thawed; runc thaws for SIGKILL too.
  if (signal == SIGKILL && runtime::container_frozen(s.cgroup_paths)) runtime::freeze_container(s.cgroup_paths, false);
}

void pause(const StateStore& store, const std::string& id) {
  ContainerState s = load_in(store, id, {Status::Running}, "pause");
  runtime::freeze_container(s.cgroup_paths, true);
}

void resume(const StateStore& store, const std::string& id) {
  ContainerState s = load_in(store, id, {Status::Paused}, "resume");
  runtime::freeze_container(s.cgroup_paths, false);
}

std::vector<pid_t> processes(const StateStore& store, const std::string& id) {
  return runtime::container_pids(store.load(id).cgroup_paths);
}

void update(const StateStore& store, const std::string& id, const nlohmann::json& resources) {
  ContainerState s =
      load_in(store, id, {Status::Created, Status::Running, Status::Paused}, "update");
  ResourcePlan plan = plan_resources(resources, controller_versions(runtime::probe_cgroups()));
  // As runc's systemd driver: the unit's properties first (systemd would otherwise put its old
  // values back when it next realizes the unit), then the files.
  if (!s.systemd_unit.empty()) {
    auto bus = systemd::SystemdConnection::open(s.systemd_user);
    bus.set_properties(s.systemd_unit, systemd::resource_properties(plan, bus.version()));
  }
  apply_resources(plan, s.cgroup_paths);
}

std::vector<nlohmann::json> list(const StateStore& store) {
  std::vector<nlohmann::json> out;
  for (const std::string& id : store.ids()) {
    try {
      ContainerState s = store.load(id);
      nlohmann::json j = state_json(s, current_status(s));
      out.push_back(j);
    } catch (const Error&) {
      // A container deleted while we listed.
    }
  }
  return out;
}

}  // namespace sandcell::oci
