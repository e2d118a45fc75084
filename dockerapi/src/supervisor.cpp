// One container's supervisor: its own process in its own session (as conmon is), so the
// container outlives the API server. A checklist: detach, mount the container's disk, join its
// volumes' disks, build the sandbox, record "running", run it with the output framed into the log, unmount the disk,
// record the outcome.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>

#include "container_io.hpp"
#include "container_log.hpp"
#include "container_mounts.hpp"
#include "container_processes.hpp"
#include "container_tty.hpp"
#include "container_store.hpp"
#include "create_request.hpp"
#include "events.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/shared_disk.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/dockerapi/server.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;

// The API server waits for our first process; the second one, in a new session, supervises.
bool detach_from_server() {
  pid_t child = fork();
  if (child < 0) throw Error(errno, "fork the container supervisor");
  if (child > 0) return false;
  check(setsid(), "setsid");
  return true;
}

// The stdin FIFO opened without waiting for a writer: an attached client already holds the
// write end (attach comes before start); without one the program reads end of file. A Tty's
// (`for_terminal`) is opened for writing too, so it never ends: a terminal's input has no end
// of file but the ^D the client types.
UniqueFd open_stdin(const ContainerDir& container, bool for_terminal) {
  if (!std::filesystem::exists(container.file("stdin"))) return UniqueFd();
  UniqueFd fd(open(container.file("stdin").c_str(), (for_terminal ? O_RDWR : O_RDONLY) | O_NONBLOCK | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + container.file("stdin"));
  check(fcntl(fd.get(), F_SETFL, 0), "clear O_NONBLOCK on stdin");
  return fd;
}

// The pipe the API server's start waits on (start_supervisor): once state.json left `created`,
// one write (atomic: at most PIPE_BUF bytes) of "R" (running) or "E" and the error that ended
// the start (the server needs it when an AutoRemove takes the directory at once), then closed.
// End of file without it tells the server the supervisor died first (a SIGKILL closes it too).
class StartedPipe {
 public:
  static StartedPipe from_environment();
  void send(const std::string& error = "") {
    if (!fd_) return;
    std::string message = error.empty() ? "R" : ("E" + error).substr(0, PIPE_BUF);
    while (write(fd_.get(), message.data(), message.size()) < 0 && errno == EINTR) {
    }
    fd_.reset();
  }

 private:
  UniqueFd fd_;
};

StartedPipe StartedPipe::from_environment() {
  StartedPipe pipe;
  const char* text = getenv(kStartedFdVariable);
  if (!text) return pipe;
  int fd = atoi(text);
  unsetenv(kStartedFdVariable);
  struct stat st {};
  if (fd > 2 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    fcntl(fd, F_SETFD, FD_CLOEXEC);  // not the sandbox's
    pipe.fd_ = UniqueFd(fd);
  }
  return pipe;
}

// Config.Tty: the program's pty, pumped while it runs (container_tty.hpp).
struct Terminal {
  UniqueFd input, control;
  std::optional<TerminalSize> initial_size;
  std::unique_ptr<TerminalPump> pump;
};

// "running" is recorded once the init exists: from then on exec can join it.
runtime::RunOptions run_options(const ContainerDir& container, ContainerState& state, LogWriter& log,
                                int stdin_fd, const std::string& store_root, Terminal* terminal,
                                StartedPipe& started) {
  runtime::RunOptions options;
  options.output = [&log](runtime::Stream stream, std::span<const char> data) { log.append(stream, data); };
  options.stdin_fd = stdin_fd >= 0 ? stdin_fd : -1;
  if (terminal)
    options.on_terminal = [terminal, &log](UniqueFd master) {
      try {
        if (terminal->initial_size) set_terminal_size(master.get(), *terminal->initial_size);
        terminal->pump = std::make_unique<TerminalPump>(
            std::move(master), std::move(terminal->input), std::move(terminal->control),
            [&log](std::span<const char> data) { log.append(runtime::Stream::Stdout, data); });
      } catch (const std::exception&) {
        // no pump (no thread or pipe to be had): the master closes, the program's tty hangs up
      }
    };
  options.freezer = true;  // pause/unpause (v1 makes no freezer cgroup otherwise)
  options.on_started = [&container, &state, &store_root, &started](pid_t init,
                                                       const std::vector<std::string>& cgroup_paths) {
    state.init_pid = init;
    state.cgroup_paths = cgroup_paths;
    try {
      container.save_state(state);
    } catch (const std::exception&) {
      // a full disk: the container runs, exec cannot find it
    }
    started.send();
    record_container_event(store_root, container, "start");
  };
  return options;
}

void record_end(const ContainerDir& container, ContainerState state, const runtime::Result& result,
                const std::string& store_root) {
  state.status = "exited";
  state.finished_at = now_rfc3339();
  state.exit_code = runtime::exit_code_for(result);
  state.oom_killed = result.status == runtime::Status::Oom;
  state.error = result.status == runtime::Status::RuntimeError ? result.error : "";
  {
    std::ofstream out(container.file("record.json") + ".tmp");
    out << runtime::to_json(result).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  rename((container.file("record.json") + ".tmp").c_str(), container.file("record.json").c_str());
  container.save_state(state);
  container.write_exit(state.exit_code);
  if (state.oom_killed) record_container_event(store_root, container, "oom");
  record_container_event(store_root, container, "die", {{"exitCode", std::to_string(state.exit_code)}});
}

void record_failure(const ContainerDir& container, ContainerState state, const std::string& error,
                    const std::string& store_root) {
  state.status = "exited";
  state.finished_at = now_rfc3339();
  state.exit_code = 125;
  state.error = error;
  container.save_state(state);
  container.write_exit(state.exit_code);
  record_container_event(store_root, container, "die", {{"exitCode", std::to_string(state.exit_code)}});
}

// AutoRemove (`run --rm`): the container, then its anonymous volumes no other container names.
void remove_container(const ContainerDir& container, const nlohmann::json& request, const std::string& store_root) {
  wait_for_log_readers(container, 30000);  // one behind a rotation still finds the generations after its own
  std::filesystem::remove_all(container.path());
  record_event(store_root, container_event("destroy", container.id(), request));
  try {
    remove_anonymous_volumes(request["HostConfig"].value("Mounts", nlohmann::json::array()),
                             VolumeStore(store_root + "/docker/volumes"),
                             ContainerStore(store_root + "/docker/containers"));
  } catch (const std::exception&) {  // left for `docker volume prune`
  }
}

// The container's writable layer on a filesystem of its own (docs/docker-api.md, "Disk"): the
// image <dir>/disk.img (unnamed for an AutoRemove'd container), made at the first start from the
// template of the StorageOpt size and kept until rm (a restart finds its files), mounted at
// <dir>/disk while the container runs, with <dir>/lock held: a disk mounted there whose lock
// nobody holds is a killed supervisor's, which `sandcell gc`, rm and the next start unmount.
struct ContainerDisk {
  UniqueFd lock;
  std::unique_ptr<WorkspaceDisk> disk;
  uint64_t bound = 0;
  std::string unbounded;  // why there is no disk
};

ContainerDisk mount_disk(const ContainerDir& container, const nlohmann::json& request, const std::string& store_root) {
  ContainerDisk out;
  std::optional<uint64_t> bytes = disk_bytes_of(request);
  if (!bytes) {
    out.unbounded = "a container created before disk bounds";
    return out;
  }
  out.bound = *bytes;
  if (std::optional<std::string> why = WorkspaceDisk::unavailable()) {
    out.unbounded = *why;
    return out;
  }
  out.lock = UniqueFd(open(container.file("lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!out.lock || flock(out.lock.get(), LOCK_EX | LOCK_NB) != 0)
    throw Error(errno, "lock " + container.file("lock") + " (another supervisor has the container)");
  // With the lock, a disk still mounted there is a killed supervisor's.
  if (umount2(container.file("disk").c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT)
    throw Error(errno, "unmount the stale disk " + container.file("disk"));
  // An AutoRemove'd container (`run --rm`) is never started again: its image needs no name, is
  // never written back to the host's disk, and goes with the loop device.
  const std::string templates = store_root + "/disk-templates";
  out.disk = request["HostConfig"].value("AutoRemove", false)
                 ? WorkspaceDisk::scratch(templates, container.file("disk"), *bytes)
                 : WorkspaceDisk::session(templates, container.file("disk.img"), container.file("disk"), *bytes);
  return out;
}

// The container's volumes (docs/docker-api.md, "Volumes"): each bounded one is a disk shared with
// the other containers running with it (sandcell/base/shared_disk.hpp), joined (mounted unless
// one of them has it mounted) before the sandbox is built and left (the last one out unmounts)
// once the program is gone. Volumes are joined one at a time, each for good: no lock order.
struct VolumeDisk {
  std::string name;
  bool writable = true;
  std::unique_ptr<SharedDisk> disk;  // none: an unbounded volume, because of `unbounded`
  std::string unbounded;
};

std::vector<VolumeDisk> join_volumes(const nlohmann::json& request, const std::string& store_root) {
  VolumeStore volumes(store_root + "/docker/volumes");
  std::vector<VolumeDisk> out;
  for (const nlohmann::json& m : request["HostConfig"].value("Mounts", nlohmann::json::array())) {
    if (m.value("Type", "") != "volume") continue;
    std::optional<Volume> volume = volumes.find(m.value("Source", ""));
    if (!volume) throw Error::invalid("volume " + m.value("Source", "") + " was removed");
    VolumeDisk joined{.name = volume->name, .writable = !m.value("ReadOnly", false), .disk = nullptr,
                      .unbounded = volume->unbounded};
    if (volume->size_bytes) {
      if (std::optional<std::string> why = WorkspaceDisk::unavailable())
        throw Error::invalid("volume " + volume->name + " is a disk image this host cannot mount: " + *why);
      joined.disk = SharedDisk::join(store_root + "/disk-templates", volume->dir, *volume->size_bytes);
    }
    out.push_back(std::move(joined));
  }
  return out;
}

// Each volume's bound and use in the record, while still joined.
void record_volumes(runtime::Result& result, const std::vector<VolumeDisk>& volumes) {
  if (result.status == runtime::Status::RuntimeError) return;
  for (const VolumeDisk& v : volumes)
    runtime::record_volume(result, v.name, v.disk ? &v.disk->disk() : nullptr, v.writable, v.unbounded);
}

int supervise(const ContainerDir& container, const std::string& store_root, StartedPipe& started) {
  nlohmann::json request = container.create_request();
  ContainerState state;
  state.status = "running";
  state.pid = getpid();
  state.pid_start = start_time_of(getpid());
  state.started_at = now_rfc3339();
  try {
    rootfs_builder::ImageStore images(store_root);
    rootfs_builder::ImageStore::Lease lease = images.lease();  // no prune under a running container
    ContainerDisk disk = mount_disk(container, request, store_root);
    std::vector<VolumeDisk> volumes = join_volumes(request, store_root);
    runtime::Spec spec = spec_for_container(request, images, container.path());
    spec.seccomp = container_seccomp(/*report_denials=*/true);
    std::filesystem::create_directories(spec.rootfs_upper_dir);
    std::filesystem::remove_all(spec.rootfs_work_dir);  // overlay wants it empty
    std::filesystem::create_directories(spec.rootfs_work_dir);
    LogWriter log(container, log_policy_of(request));  // bounded and rotated (container_log.hpp)
    std::optional<Terminal> terminal;
    UniqueFd input;
    if (request["Config"].value("Tty", false)) {
      terminal.emplace();
      terminal->input = open_stdin(container, true);
      terminal->control = make_control_fifo(container);
      if (request["HostConfig"].contains("ConsoleSize")) {
        const nlohmann::json& size = request["HostConfig"]["ConsoleSize"];
        terminal->initial_size = TerminalSize{size[0].get<uint16_t>(), size[1].get<uint16_t>()};
      }
    } else {
      input = open_stdin(container, false);
    }
    runtime::Result result = runtime::run_sandbox(
        spec, run_options(container, state, log, input ? input.get() : -1, store_root,
                          terminal ? &*terminal : nullptr, started));
    if (terminal) {
      terminal->pump.reset();  // its output in the log before the exit file says the run is over
      unlink(container.file("tty.ctl").c_str());
    }
    if (result.status != runtime::Status::RuntimeError)
      runtime::record_disk(result, disk.disk.get(), disk.bound, "the container's writable layer", disk.unbounded);
    record_volumes(result, volumes);
    disk.disk.reset();  // unmounted before the exit is recorded: an rm that waited for it finds it gone
    volumes.clear();    // left (the last user unmounts) before it too
    record_end(container, state, result, store_root);
  } catch (const std::exception& e) {
    record_failure(container, state, e.what(), store_root);
  }
  try {  // no-op once sent; else the start failed: its error
    started.send(container.state().error);
  } catch (const std::exception& e) {
    started.send(e.what());
  }
  if (request["HostConfig"].value("AutoRemove", false)) remove_container(container, request, store_root);
  return 0;
}

}  // namespace

int supervise_container(const std::string& container_dir, const std::string& store_root) {
  StartedPipe started = StartedPipe::from_environment();  // both processes: the first one's copy closes with it
  if (!detach_from_server()) return 0;
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null >= 0) {
    for (int fd : {0, 1, 2}) dup2(null, fd);
    close(null);
  }
  return supervise(ContainerDir(container_dir), store_root, started);
}

}  // namespace sandcell::dockerapi
