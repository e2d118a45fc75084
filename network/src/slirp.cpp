// slirp4netns for `--net full` (see slirp.hpp).
#include "sandcell/network/slirp.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "sandcell/network/nft_rules.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

using runtime::UniqueFd;

constexpr int kReadyTimeoutMs = 10'000;
constexpr int kStopTimeoutMs = 1'000;

// A pipe whose ends sit at fd 10 or above, so posix_spawn's dup2 onto 3 and 4 cannot clobber
// one end with the other.
struct HighPipe {
  UniqueFd read_end, write_end;
};
HighPipe make_pipe(const char* what) {
  int fds[2];
  check(pipe2(fds, O_CLOEXEC), std::string("pipe for ") + what);
  UniqueFd low_read(fds[0]), low_write(fds[1]);
  HighPipe pipe{UniqueFd(fcntl(fds[0], F_DUPFD_CLOEXEC, 10)), UniqueFd(fcntl(fds[1], F_DUPFD_CLOEXEC, 10))};
  if (!pipe.read_end || !pipe.write_end) throw Error(errno, std::string("dup the pipe for ") + what);
  return pipe;
}

// slirp4netns's own account: the cause is on an earlier line than its last ("child failed(1)").
std::string log_lines(const std::string& path) {
  std::ifstream in(path);
  std::string line, text;
  while (std::getline(in, line))
    if (!line.empty()) text += (text.empty() ? "" : "; ") + line;
  return text;
}

// slirp4netns with the ready pipe at fd 3, the exit pipe at fd 4, stderr to the log.
pid_t spawn_slirp(const SlirpSpec& spec, int ready_fd, int exit_fd) {
  const std::string pid = std::to_string(spec.sandbox_pid);
  // Not --enable-sandbox: as real root its mount namespace keeps shared propagation, and the
  // detach of its old root took host mounts with it (an `ip netns` bind mount under /run/netns
  // vanished from the host in testing). sandcell never changes host mounts.
  std::vector<std::string> args = {"slirp4netns", "--configure", "--mtu=65520",
                                   "--disable-host-loopback", "--disable-dns", "--ready-fd=3",
                                   "--exit-fd=4", "--enable-seccomp", pid, "tap0"};
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, ready_fd, 3);
  posix_spawn_file_actions_adddup2(&actions, exit_fd, 4);
  // The supervisor blocks SIGINT/SIGTERM/SIGHUP for its signalfd; slirp4netns gets a clean mask.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t child = -1;
  const int rc = posix_spawnp(&child, "slirp4netns", &actions, &attr, argv.data(), environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(rc, "start slirp4netns");
  return child;
}

}  // namespace

bool slirp4netns_installed() {
  const char* path = getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/local/bin:/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/slirp4netns").c_str(), X_OK) == 0) return true;
  return false;
}

SlirpNetwork::SlirpNetwork(const SlirpSpec& spec)
    : filter_(spec.sandbox_pid,
              sandbox_filter_script(spec.allowed_cidrs, spec.resolvers, spec.host_addresses)) {
  HighPipe ready = make_pipe("slirp4netns --ready-fd");
  HighPipe exit = make_pipe("slirp4netns --exit-fd");
  pid_ = spawn_slirp(spec, ready.write_end.get(), exit.read_end.get());
  exit_fd_ = std::move(exit.write_end);
  ready.write_end.reset();
  pollfd p{.fd = ready.read_end.get(), .events = POLLIN, .revents = 0};
  char byte = 0;
  const bool up = poll(&p, 1, kReadyTimeoutMs) == 1 && read(ready.read_end.get(), &byte, 1) == 1;
  if (!up) {
    stop();
    const std::string why = log_lines(spec.log_path);
    throw Error(EIO, "slirp4netns did not configure the sandbox's network" +
                         (why.empty() ? std::string() : " (" + why + ")"));
  }
}

SlirpNetwork::~SlirpNetwork() { stop(); }

void SlirpNetwork::stop() {
  if (pid_ < 0) return;
  exit_fd_.reset();
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0)));
  pollfd p{.fd = pidfd.get(), .events = POLLIN, .revents = 0};
  if (!pidfd || poll(&p, 1, kStopTimeoutMs) != 1) kill(pid_, SIGKILL);  // our own child, by pid
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

}  // namespace sandcell::network
