#include "executor/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

extern char** environ;

namespace sandcell::agent_service {
namespace {

using runtime::UniqueFd;

constexpr int kStopGraceSeconds = 10;

struct Pipe {
  UniqueFd read, write;
};

Pipe make_pipe() {
  int fds[2];
  check(pipe2(fds, O_CLOEXEC), "pipe2");
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

// posix_spawn attributes: own process group, empty signal mask (servers block SIGTERM/SIGINT
// in every thread to take them with sigwait), default SIGPIPE/SIGTERM/SIGINT.
struct SpawnAttributes {
  posix_spawnattr_t attr;
  SpawnAttributes() {
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int sig : {SIGPIPE, SIGTERM, SIGINT, SIGHUP}) sigaddset(&defaults, sig);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  }
  ~SpawnAttributes() { posix_spawnattr_destroy(&attr); }
};

pid_t spawn(const std::vector<std::string>& argv, const Pipe& in, const Pipe& out, const Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto 0-2 clears O_CLOEXEC there; every other pipe end stays closed-on-exec, so
  // concurrent spawns never inherit each other's pipes (a leaked write end would keep a
  // reader waiting for EOF forever). Pipes are made with O_CLOEXEC rather than relying only on
  // closefrom below because a concurrent fork elsewhere in the process must not get them.
  posix_spawn_file_actions_adddup2(&actions, in.read.get(), 0);
  posix_spawn_file_actions_adddup2(&actions, out.write.get(), 1);
  posix_spawn_file_actions_adddup2(&actions, err.write.get(), 2);
  // Libraries do not all open their fds with O_CLOEXEC (cpp-httplib's listening and accepted
  // sockets): a runner that inherited a client's socket could write into it, and keeps it
  // open after the server closed it. The child gets exactly 0-2.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  SpawnAttributes attributes;
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0].c_str(), &actions, &attributes.attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(rc, "spawn " + argv[0]);
  return pid;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(errno, "waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A write into a pipe whose reader is gone raises SIGPIPE in the writing thread; unless the
// process ignores it (the servers do), that ends the process instead of failing the write with
// EPIPE. Blocked in this thread while it pumps, and a SIGPIPE left pending is taken on the way
// out, so a child that exits before reading its request is a child that stopped reading,
// whoever embeds the executor.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    const timespec now{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_, old_;
};

// Moves `input` into the child's stdin and its stdout/stderr out until both reach EOF.
void pump(UniqueFd in, UniqueFd out, UniqueFd err, std::string_view input,
          const std::function<void(std::string_view)>& on_stdout, std::string& stderr_text) {
  const SigpipeBlocked no_sigpipe;
  fcntl(in.get(), F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (input.empty()) in.reset();
  std::array<char, 65536> buffer;
  while (in || out || err) {
    std::array<pollfd, 3> fds{{{in.get(), POLLOUT, 0}, {out.get(), POLLIN, 0}, {err.get(), POLLIN, 0}}};
    if (poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(errno, "poll on the runner's pipes");
    }
    if (in && fds[0].revents) {
      ssize_t n = write(in.get(), input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if (n < 0 && errno != EAGAIN && errno != EINTR) in.reset();  // the child stopped reading
      if (written == input.size()) in.reset();
    }
    for (auto [index, fd] : {std::pair{1, &out}, std::pair{2, &err}}) {
      if (!*fd || !fds[index].revents) continue;
      ssize_t n = read(fd->get(), buffer.data(), buffer.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        fd->reset();
        continue;
      }
      std::string_view chunk(buffer.data(), static_cast<size_t>(n));
      if (index == 1) on_stdout(chunk);
      else if (stderr_text.size() < (1u << 20)) stderr_text.append(chunk);
    }
  }
}

}  // namespace

StartedChild start_child(const std::vector<std::string>& argv) {
  Pipe in = make_pipe(), out = make_pipe(), err = make_pipe();
  pid_t pid = spawn(argv, in, out, err);
  // Signals go through a pidfd: the stop may come from another thread at any moment, and a
  // pidfd can never reach a process that reused the pid after ours was reaped.
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  return {pid, std::move(pidfd), std::move(in.write), std::move(out.read), std::move(err.read)};
}

ChildOutcome run_child(const std::vector<std::string>& argv, std::string_view input,
                       const std::function<void(std::string_view)>& on_stdout, std::stop_token stop) {
  return finish_child(start_child(argv), input, on_stdout, stop);
}

ChildOutcome finish_child(StartedChild child, std::string_view input,
                          const std::function<void(std::string_view)>& on_stdout, std::stop_token stop) {
  return finish_child(std::move(child), input, on_stdout, stop, LeaveExit{});
}

ChildOutcome finish_child(StartedChild child, std::string_view input,
                          const std::function<void(std::string_view)>& on_stdout, std::stop_token stop,
                          const LeaveExit& leave) {
  const pid_t pid = child.pid;
  UniqueFd& pidfd = child.pidfd;
  ChildOutcome outcome;
  bool left = false;
  try {
    std::optional<std::jthread> escalation;
    std::stop_callback on_stop(stop, [&] {
      syscall(SYS_pidfd_send_signal, pidfd.get(), SIGTERM, nullptr, 0);
      escalation.emplace([&pidfd](std::stop_token done) {
        std::mutex m;
        std::condition_variable_any cv;
        std::unique_lock lock(m);
        cv.wait_for(lock, done, std::chrono::seconds(kStopGraceSeconds), [] { return false; });
        if (!done.stop_requested())  // the grace time is over, not the run
          syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
      });
    });
    pump(std::move(child.stdin_write), std::move(child.stdout_read), std::move(child.stderr_read), input, on_stdout,
         outcome.stderr_text);
    left = leave.answered && leave.answered();
    if (!left) outcome.exit_code = wait_for(pid);  // before the escalation thread (joined here) lets go of the pidfd
  } catch (...) {
    kill(pid, SIGKILL);
    wait_for(pid);
    throw;
  }
  if (left) {  // answered: its teardown is not the caller's wait
    outcome.exit_code = 0;
    leave.reap(std::move(child));
  }
  return outcome;
}

}  // namespace sandcell::agent_service
