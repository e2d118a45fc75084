#include "e2e_support.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace sandcell::test {

std::string sandcell_bin() { return SANDCELL_BIN; }

std::string skill_store() {
  const char* env = std::getenv("SANDCELL_TEST_STORE");
  if (!env || !*env) throw std::runtime_error("SANDCELL_TEST_STORE is not set (the skill_images fixture sets it)");
  return env;
}

Finished run_sandcell_with_store(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> argv{sandcell_bin(), "--root", skill_store()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string out;
  agent_service::ChildOutcome outcome = agent_service::run_child(argv, input, [&](std::string_view c) { out.append(c); });
  return {outcome.exit_code, out, outcome.stderr_text};
}

Background::Background(const std::vector<std::string>& argv) {
  char name[] = "/tmp/sandcell-e2e-err-XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0) throw std::runtime_error("mkstemp");
  close(fd);
  err_ = name;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, name, O_WRONLY | O_TRUNC, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + argv[0]);
}

Background::~Background() {
  if (pid_ > 0) signal_and_wait(SIGKILL);
  std::filesystem::remove(err_);
}

int Background::signal_and_wait(int sig) {
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Background::stderr_text() const {
  std::ifstream in(err_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int free_tcp_port() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

std::vector<pid_t> children_of(pid_t pid) {
  std::vector<pid_t> children;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (pid_t child; in >> child;) children.push_back(child);
  }
  return children;
}

int open_fd_count(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
       it != std::filesystem::directory_iterator(); ++it)
    ++n;
  return n;
}

}  // namespace sandcell::test
