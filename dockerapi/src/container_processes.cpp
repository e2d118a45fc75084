// Starting the supervisor, and signals to a container's program.
#include "container_processes.hpp"

#include <signal.h>
#include <spawn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
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

void start_supervisor(const std::string& exe, const std::string& store_root, const ContainerDir& container) {
  std::vector<std::string> words = {exe, "--root", store_root, "docker-container-supervisor", container.path()};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv.data(), environ);
  if (err != 0) throw Error(err, "spawn the container supervisor " + exe);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (int i = 0; i < 1500; ++i) {  // 30 s: the first run of an image unpacks its layers
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
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw ApiError{500, "the container's supervisor did not start within 30 s"};
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
