#pragma once
// A running container's processes: the supervisor's child is sandcell's init (pid 1 of the
// sandbox's pid namespace), the program is the init's child; found through
// /proc/<pid>/task/*/children.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "container_store.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::dockerapi {

std::vector<pid_t> sandbox_pids(const ContainerState& state);
// Sends `signal` to the program (SIGKILL: to the init, which ends the whole sandbox); false when
// the container is not running.
bool signal_container(const ContainerDir& container, int signal);
// `docker stop`: `signal` (empty: StopSignal or SIGTERM) to the program, SIGKILL after
// `timeout_s` (nullopt: StopTimeout or 10). false when the container was not running.
bool stop_container(const ContainerDir& container, std::optional<int> timeout_s, const std::string& signal);
// Held across start and restart (flock on <dir>/start.lock): two at once would each see the
// container stopped and spawn a supervisor.
runtime::UniqueFd lock_for_start(const ContainerDir& container);
// An exited container made ready to start again (start, restart): state `created`, the exit
// file emptied for the next run's waiters; its writable layer, log and name stay.
void reset_for_start(const ContainerDir& container);

// Spawns `exe --root STORE docker-container-supervisor DIR` and waits until the state left
// `created`. Throws ApiError with the supervisor's error when the sandbox could not start. It
// waits on a pipe whose write end the supervisor holds (its fd number in kStartedFdVariable):
// the supervisor writes a byte once state.json left `created`, and a supervisor that dies
// before closes it by dying: no polling, and no 30 s wait for one that was killed.
constexpr const char* kStartedFdVariable = "SANDCELL_DOCKER_STARTED_FD";
void start_supervisor(const std::string& exe, const std::string& store_root, const ContainerDir& container);

// A running container's sandbox as runtime::exec_in_sandbox and open_sandbox_root take it: its
// Spec rebuilt from create.json as the supervisor builds it (with the seccomp program an exec'd
// process gets) and where it runs. ApiError 409 when it is not running.
struct RunningSandbox {
  runtime::Spec spec;
  runtime::SandboxTarget target;
};
RunningSandbox running_sandbox(const std::string& store_root, const ContainerDir& container);

}  // namespace sandcell::dockerapi
