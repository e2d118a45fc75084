// Waiting on a container's files and its supervisor (container_wake.hpp).
#include "container_wake.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "events.hpp"

namespace sandcell::dockerapi {

using runtime::UniqueFd;

namespace {

// What can answer a waiter on a change: creations and renames (rotation, state.json replaced by
// rename), closes after writing (the exit file written, a reader letting log.readers go), the
// directory itself going. A follower also wakes for each append (IN_MODIFY).
constexpr uint32_t kChangeEvents = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM |
                                   IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

UniqueFd watch_directory(const std::string& dir, ContainerWake::Watch watch) {
  UniqueFd fd(inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!fd) return fd;  // EMFILE (the per-user instance limit): the caller polls instead
  const uint32_t events =
      watch == ContainerWake::Watch::Everything ? kChangeEvents | IN_MODIFY : kChangeEvents;
  if (inotify_add_watch(fd.get(), dir.c_str(), events) < 0) return UniqueFd();  // gone already
  return fd;
}

}  // namespace

int server_stopping_fd() {
  static const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return fd;
}

void wake_all_waiters() {
  if (server_stopping_fd() < 0) return;
  uint64_t one = 1;
  if (write(server_stopping_fd(), &one, sizeof one) < 0) {
    // the counter is full: it is readable already
  }
}

ContainerWake::ContainerWake(ContainerDir container, Watch watch)
    : container_(std::move(container)), inotify_(watch_directory(container_.path(), watch)) {
  server_stopping_fd();  // made before any stop can be asked for
}

// state.json as the supervisor wrote it (ContainerDir::state() would already call a dead
// supervisor's container exited): a supervisor recorded as running is watched by a pidfd. The
// pidfd names the process that had the pid when it was opened, so its start time is checked
// after opening: a pid reused by another process reads as gone.
void ContainerWake::watch_recorded_supervisor() {
  nlohmann::json recorded;
  try {
    recorded = read_json(container_.file("state.json"));
  } catch (const std::exception&) {
    return;  // removed, or being replaced (the rename wakes us again)
  }
  // Also one recorded as exited before the exit file says so: it is writing it, or was killed
  // in between (note_lost_supervisor then writes it).
  const std::string status = recorded.value("Status", "");
  if (status != "running" && !(status == "exited" && !container_.exit_written())) return;
  pid_t pid = recorded.value("Pid", 0);
  unsigned long long start = recorded.value("PidStart", 0ull);
  if (pid <= 0 || (pid == watched_pid_ && start == watched_start_)) return;
  watched_pid_ = pid;
  watched_start_ = start;
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  const int error = errno;
  pidfd_.reset(fd);
  if (fd < 0 && error != ESRCH) return;  // no pidfd here (ENOSYS): the server's watcher notices
  gone_ = !pidfd_ || start_time_of(pid) != start;
  if (gone_) pidfd_.reset();
}

void ContainerWake::look_at_supervisor() {
  // Without inotify nothing says state.json changed: read it at every look.
  if (std::exchange(state_changed_, !inotify_)) watch_recorded_supervisor();
  if (pidfd_) {
    pollfd p{.fd = pidfd_.get(), .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 0) > 0) {
      gone_ = true;
      pidfd_.reset();
    }
  }
  if (!std::exchange(gone_, false)) return;
  // Gone. Its normal end wrote the exit before it exited; after a SIGKILL nothing did: record
  // it now (once, whoever of the waiters and the server's watcher is first).
  try {
    note_lost_supervisor(container_.store_root(), container_);
  } catch (const std::exception&) {
    // removed meanwhile
  }
}

void ContainerWake::drain_inotify() {
  alignas(inotify_event) char buffer[4096];
  for (;;) {
    ssize_t n = read(inotify_.get(), buffer, sizeof buffer);
    if (n <= 0) return;  // EAGAIN: drained
    for (ssize_t at = 0; at < n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      if (event->mask & (IN_Q_OVERFLOW | IN_IGNORED)) state_changed_ = true;
      if (event->len > 0 && std::strcmp(event->name, "state.json") == 0) state_changed_ = true;
      if (event->mask & IN_IGNORED) inotify_.reset();  // the directory is gone: no more events
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
      if (!inotify_) return;
    }
  }
}

void ContainerWake::wait(std::optional<std::chrono::milliseconds> timeout) {
  int ms = timeout ? static_cast<int>(std::clamp<std::chrono::milliseconds::rep>(timeout->count(), 0, 1 << 30)) : -1;
  if (!inotify_) ms = ms < 0 ? static_cast<int>(kFallbackPoll.count()) : std::min(ms, static_cast<int>(kFallbackPoll.count()));
  pollfd fds[3] = {{.fd = inotify_.get(), .events = POLLIN, .revents = 0},
                   {.fd = pidfd_.get(), .events = POLLIN, .revents = 0},
                   {.fd = server_stopping_fd(), .events = POLLIN, .revents = 0}};
  int n;
  while ((n = poll(fds, 3, ms)) < 0 && errno == EINTR) {
  }
  if (n <= 0) return;
  if (fds[0].revents) drain_inotify();
  if (fds[1].revents) {
    gone_ = true;
    pidfd_.reset();
  }
}

}  // namespace sandcell::dockerapi
