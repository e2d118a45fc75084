#pragma once
// The container state directory under --root: <root>/<id>/state.json plus the start socket.
// The runtime-spec status is derived, not stored: whether the init still lives (same pid and
// start time, not a zombie), whether `start` released it, whether its freezer is frozen.
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandcell::oci {

enum class Status { Creating, Created, Running, Paused, Stopped };
std::string status_name(Status status);

struct ContainerState {
  std::string id, bundle, created;  // created: RFC 3339, UTC
  pid_t pid = 0;
  unsigned long long pid_start = 0;  // /proc/<pid>/stat field 22, guards against pid reuse
  bool started = false;
  std::vector<std::string> cgroup_paths;  // the container's directory in each hierarchy
  std::vector<std::string>
      cgroup_created;  // what create made of them, deepest first: delete removes these
  std::map<std::string, std::string> annotations;
  // --systemd-cgroup: the transient unit systemd made for the container (delete stops it; its
  // cgroup is systemd's to remove) and whether the user manager made it (rootless).
  std::string systemd_unit;
  bool systemd_user = false;
};

class StateStore {
 public:
  explicit StateStore(std::string root);  // created (0700) if missing
  const std::string& root() const { return root_; }
  std::string dir(const std::string& id) const;
  std::string start_socket(const std::string& id) const { return dir(id) + "/start.sock"; }

  // Makes <root>/<id>; throws if the id is invalid or the container exists.
  void reserve(const std::string& id) const;
  void save(const ContainerState& state) const;  // atomically (rename)
  ContainerState load(const std::string& id) const;  // throws "container <id> does not exist"
  std::vector<std::string> ids() const;
  void remove(const std::string& id) const;

 private:
  std::string root_;
};

// "created" | "running" | "paused" | "stopped", as the process is now.
Status current_status(const ContainerState& state);
// The runtime-spec state object (`sandcell-oci state`).
nlohmann::json state_json(const ContainerState& state, Status status);
// 0 when the process is gone or a zombie.
unsigned long long process_start_time(pid_t pid);
// Now as RFC 3339 with nanoseconds, as runc prints "created".
std::string rfc3339_now();

}  // namespace sandcell::oci
