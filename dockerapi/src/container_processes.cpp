// Starting the supervisor, and signals to a container's program.
#include "container_processes.hpp"

#include <signal.h>
#include <spawn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <thread>

#include "api_error.hpp"
#include "container_io.hpp"
#include "create_request.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/runtime/container.hpp"
#include "sandcell/rootfs_builder/store.hpp"

extern char** environ;

namespace sandcell::dockerapi {

namespace {

std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(parent) + "/task", ec)) {
    std::ifstream children(task.path() / "children");
    for (pid_t pid; children >> pid;) pids.push_back(pid);
  }
  return pids;
}

}  // namespace

std::vector<pid_t> sandbox_pids(const ContainerState& state) {
  if (state.status != "running" || state.pid <= 0) return {};
  return children_of(state.pid);
}


bool signal_container(const ContainerDir& container, int signal) {
  ContainerState state = container.state();
  if (state.status != "running") return false;
  for (pid_t init : sandbox_pids(state)) {
    // sandcell's init (pid 1 inside) does not pass signals on: a stop signal goes to the
    // program, its child, as Docker sends it to the program; SIGKILL to the init ends them all.
    std::vector<pid_t> programs = signal == SIGKILL ? std::vector<pid_t>{} : children_of(init);
    if (programs.empty()) kill(init, signal);
    for (pid_t pid : programs) kill(pid, signal);
  }
  // A paused container's processes take signals only once thawed (v1 freezer; v2 lets SIGKILL
  // through): Docker unpauses after signalling too.
  try {
    if (runtime::container_frozen(state.cgroup_paths)) runtime::freeze_container(state.cgroup_paths, false);
  } catch (const std::exception&) {
    // the run's cgroups went with it
  }
  return true;
}

bool stop_container(const ContainerDir& container, std::optional<int> timeout_s, const std::string& signal) {
  if (container.state().status != "running") return false;
  nlohmann::json config = container.create_request()["Config"];
  int timeout = timeout_s.value_or(config.value("StopTimeout", 10));
  std::string name = signal.empty() ? config.value("StopSignal", "") : signal;
  signal_container(container, name.empty() ? SIGTERM : oci::parse_signal(name));
  if (!wait_for_exit(container, std::max(timeout, 0) * 1000)) {
    signal_container(container, SIGKILL);
    wait_for_exit(container, 10000);
  }
  return true;
}

runtime::UniqueFd lock_for_start(const ContainerDir& container) {
  runtime::UniqueFd fd(open(container.file("start.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) throw Error(errno, "open " + container.file("start.lock"));
  check(flock(fd.get(), LOCK_EX), "flock " + container.file("start.lock"));
  return fd;
}

void reset_for_start(const ContainerDir& container) {
  check(truncate(container.file("exit").c_str(), 0), "truncate " + container.file("exit"));
  container.save_state({});
}

namespace {

// The supervisor's environment: ours and where its end of the started pipe is.
std::vector<std::string> supervisor_environment(int started_fd) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (!std::string_view(*e).starts_with(std::string(kStartedFdVariable) + "=")) env.emplace_back(*e);
  env.push_back(std::string(kStartedFdVariable) + "=" + std::to_string(started_fd));
  return env;
}

// Spawned with the pipe's write end as fd kChildFd (dup2 clears close-on-exec on the copy only);
// our own ends stay close-on-exec, so no other process the server spawns holds them.
constexpr int kChildFd = 3;

void spawn_supervisor(const std::string& exe, const std::string& store_root, const ContainerDir& container,
                      int started_write) {
  std::vector<std::string> words = {exe, "--root", store_root, "docker-container-supervisor", container.path()};
  std::vector<std::string> env = supervisor_environment(kChildFd);
  std::vector<char*> argv, envp;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, started_write, kChildFd);
  pid_t pid = 0;
  int err = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(err, "spawn the container supervisor " + exe);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

void start_supervisor(const std::string& exe, const std::string& store_root, const ContainerDir& container) {
  int ends[2];
  check(pipe2(ends, O_CLOEXEC), "pipe for the container supervisor");
  runtime::UniqueFd started_read(ends[0]), started_write(ends[1]);
  if (started_write.get() == kChildFd) {  // dup2 onto itself would keep close-on-exec
    started_write = runtime::UniqueFd(fcntl(ends[1], F_DUPFD_CLOEXEC, kChildFd + 1));
    if (!started_write) throw Error(errno, "dup the supervisor's pipe");
  }
  spawn_supervisor(exe, store_root, container, started_write.get());
  started_write.reset();  // the supervisor's copy is the only one left
  // 30 s: the first run of an image unpacks its layers.
  pollfd p{.fd = started_read.get(), .events = POLLIN, .revents = 0};
  int ready;
  while ((ready = poll(&p, 1, 30000)) < 0 && errno == EINTR) {
  }
  if (ready > 0) {
    char message[PIPE_BUF];
    ssize_t n;
    while ((n = read(started_read.get(), message, sizeof message)) < 0 && errno == EINTR) {
    }
    if (n > 0 && message[0] == 'R') return;
    if (n > 0 && message[0] == 'E') throw ApiError{400, std::string(message + 1, static_cast<size_t>(n - 1))};
  }
  ContainerState state;
  try {
    state = container.state();
  } catch (const std::exception&) {
    return;  // over and auto-removed already
  }
  if (state.status != "created") {
    if (!state.error.empty()) throw ApiError{400, state.error};
    return;
  }
  if (ready == 0) throw ApiError{500, "the container's supervisor did not start within 30 s"};
  throw ApiError{500, "the container's supervisor ended before the container started"};
}

RunningSandbox running_sandbox(const std::string& store_root, const ContainerDir& container) {
  ContainerState state = container.state();
  if (state.status != "running" || state.init_pid <= 0)
    throw conflict("Container " + container.id() + " is not running");
  rootfs_builder::ImageStore images(store_root);
  RunningSandbox sandbox{
      .spec = spec_for_container(container.create_request(), images, container.path()),
      .target = {.init_pid = state.init_pid,
                 .supervisor_pid = state.pid,
                 .cgroup_paths = state.cgroup_paths}};
  sandbox.spec.seccomp = container_seccomp(/*report_denials=*/false);
  return sandbox;
}

}  // namespace sandcell::dockerapi
