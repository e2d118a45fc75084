#pragma once
// The runc verbs over a StateStore. The CLI (cli/oci_main.cpp) parses flags and calls these.
// Errors are sandcell::Error; input errors name the container, flag or config field.
#include <sys/types.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "sandcell/oci/state.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::oci {

struct CreateOptions {
  std::string bundle = ".";
  std::string pid_file, console_socket;
  int preserve_fds = 0;
  bool no_pivot = false;
  // The systemd cgroup driver (--systemd-cgroup): linux.cgroupsPath is "slice:prefix:name" and
  // systemd makes the container's cgroup as a transient scope (oci/src/systemd_cgroup.hpp).
  bool systemd_cgroup = false;
};

// create: the init waits for start; nothing is printed. Returns the init's pid.
pid_t create(const StateStore& store, const std::string& id, const CreateOptions& options);
void start(const StateStore& store, const std::string& id);
// create + start; unless `detach`, waits for the init (our child) and deletes the container.
// Returns the init's exit code (128+N for signal N), or 0 when detached.
int run(const StateStore& store, const std::string& id, const CreateOptions& options, bool detach);
nlohmann::json state(const StateStore& store, const std::string& id);
void kill(const StateStore& store, const std::string& id, int signal, bool all);
void remove(const StateStore& store, const std::string& id, bool force);  // `delete`
void pause(const StateStore& store, const std::string& id);
void resume(const StateStore& store, const std::string& id);
std::vector<pid_t> processes(const StateStore& store, const std::string& id);
// `resources`: an OCI linux.resources object; each field is applied or refused by name.
void update(const StateStore& store, const std::string& id, const nlohmann::json& resources);
std::vector<nlohmann::json> list(const StateStore& store);
// `events --stats`: {"type":"stats","id":ID,"data":{cpu, memory, pids, blkio, hugetlb, ...}} as
// runc prints it.
nlohmann::json stats_event(const StateStore& store, const std::string& id);
// `events`: a stats event every `interval` and an {"type":"oom","id":ID} event whenever the OOM
// killer kills in the container (checked every 100 ms), one JSON line each, until it stops.
void watch_events(const StateStore& store, const std::string& id,
                  std::chrono::milliseconds interval, std::ostream& out);

struct ExecOptions {
  std::string process_file;  // --process: an OCI process JSON; else args below
  std::vector<std::string> args, env;
  std::string cwd, user;     // user: "uid[:gid]"
  bool tty = false, detach = false;
  std::string pid_file, console_socket;
  int preserve_fds = 0;
};
// Returns the process' exit code, or 0 when detached (once it runs).
int exec(const StateStore& store, const std::string& id, const ExecOptions& options);

// "KILL", "SIGKILL", "9" → 9. Throws an input error otherwise.
int parse_signal(const std::string& text);

// The `features` JSON, as runc prints it.
nlohmann::json features();

}  // namespace sandcell::oci
