#pragma once
// Docker containers on disk (docs/docker-api.md, "A container on disk"): one directory each,
// no state in the API server's memory, so a restarted server sees every container.
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandcell::dockerapi {

// state.json: what the container's life has reached, written by the server (created) and by
// the supervisor (running, exited).
struct ContainerState {
  std::string status = "created";  // created | running | exited
  pid_t pid = 0;                   // the supervisor
  unsigned long long pid_start = 0;
  std::string started_at, finished_at;
  int exit_code = 0;
  bool oom_killed = false;
  std::string error;
  // The sandbox's init and the run's cgroups (RunOptions::on_started): what exec joins.
  pid_t init_pid = 0;
  std::vector<std::string> cgroup_paths;
};

class ContainerDir {
 public:
  explicit ContainerDir(std::string dir) : dir_(std::move(dir)) {}
  const std::string& path() const { return dir_; }
  std::string id() const;
  std::string file(const char* name) const { return dir_ + "/" + name; }
  // The store it lives in: containers are <store root>/docker/containers/<id>.
  std::string store_root() const;

  nlohmann::json create_request() const;  // create.json
  ContainerState state() const;           // state.json; a dead supervisor reads as exited
  void save_state(const ContainerState& state) const;
  // The exit file, written in place once (see the design): waiters hold it open.
  void write_exit(int status_code) const;
  // The exit file has the run's status code (or is gone with the container); false while the
  // run goes on, and in the gap between recording the end in state.json and writing it.
  bool exit_written() const;

 private:
  std::string dir_;
};

class ContainerStore {
 public:
  explicit ContainerStore(std::string root);  // <store root>/docker/containers, made 0700
  const std::string& root() const { return root_; }

  // A new container directory for a validated create request (which carries Name); throws
  // ApiError 409 when the name is taken.
  ContainerDir create(nlohmann::json request) const;
  // By full id, unique id prefix, or name (with or without the leading '/'); ApiError 404.
  ContainerDir find(const std::string& id_or_name) const;
  std::optional<ContainerDir> find_if_exists(const std::string& id_or_name) const;
  // The container with exactly this name (create and rename: an id prefix is no conflict).
  std::optional<ContainerDir> named(const std::string& name) const;
  std::vector<ContainerDir> list() const;
  void remove(const ContainerDir& container) const;
  // Under the lock create takes: ApiError 409 when another container has the name.
  void rename(const ContainerDir& container, const std::string& new_name) const;

 private:
  std::string root_;
};

nlohmann::json read_json(const std::string& path);
std::string random_id();  // 64 hex digits, as Docker's ids
void write_json_atomically(const std::string& path, const nlohmann::json& value);  // temp + rename
// Running with its cgroups frozen (`docker pause`).
bool is_paused(const ContainerState& state);
nlohmann::json state_to_json(const ContainerState& state);
std::string now_rfc3339();
unsigned long long start_time_of(pid_t pid);  // 0 when gone or a zombie

}  // namespace sandcell::dockerapi
