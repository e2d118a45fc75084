#include "sandcell_cli.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace sandcell::test {
namespace fs = std::filesystem;

std::string test_rootfs() {
  return SANDCELL_TEST_ROOTFS;
}

std::string shell_output(const std::string& command) {
  std::string out;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return "FAILED: popen " + command;
  char buffer[4096];
  while (size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  int status = pclose(pipe);
  return (WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "" : "FAILED: ") + out;
}
std::string sandcell_binary() {
  return SANDCELL_BIN;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path() {
  char name[] = "/tmp/sandcell-test-XXXXXX";
  int fd = mkstemp(name);
  if (fd < 0) throw std::runtime_error("mkstemp");
  close(fd);
  return name;
}

std::vector<char*> make_argv(std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return argv;
}

pid_t spawn(std::vector<std::string> args, const std::string& in, const std::string& out,
            const std::string& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, in.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_TRUNC, 0);
  auto argv = make_argv(args);
  // posix_spawn's child shares our memory until its execve, and execve records the peak RSS of
  // the memory it leaves in the child's ru_maxrss: ours, up to 512 MiB after a test that read
  // a flood's output. Resetting our peak first (proc(5), clear_refs "5") makes max_rss_kb the
  // program's own.
  std::ofstream("/proc/self/clear_refs") << "5";
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw std::runtime_error("posix_spawn " + args[0]);
  return pid;
}

}  // namespace

CliRun run_sandcell(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> full{args};
  if (full.empty() || full[0] != "/usr/bin/setpriv") full.insert(full.begin(), sandcell_binary());
  return run_program(full, input);
}

CliRun run_program(const std::vector<std::string>& full, const std::string& input) {
  std::string in = temp_path(), out = temp_path(), err = temp_path();
  std::ofstream(in, std::ios::binary) << input;
  pid_t pid = spawn(full, in, out, err);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  CliRun r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(out);
  r.err = read_file(err);
  r.max_rss_kb = usage.ru_maxrss;
  r.record = nlohmann::json::parse(r.out, nullptr, false);
  if (r.record.is_discarded()) r.record = nullptr;
  for (const auto& p : {in, out, err}) fs::remove(p);
  return r;
}

CliRun run_in_sandbox(const std::vector<std::string>& flags,
                      const std::vector<std::string>& command, const std::string& input) {
  std::vector<std::string> args{"run", "--json", "--rootfs", test_rootfs()};
  args.insert(args.end(), flags.begin(), flags.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  return run_sandcell(args, input);
}

pid_t spawn_sandcell(const std::vector<std::string>& args) {
  std::vector<std::string> full{sandcell_binary()};
  full.insert(full.end(), args.begin(), args.end());
  return spawn_program(full);
}

pid_t spawn_program(const std::vector<std::string>& argv) {
  return spawn(argv, "/dev/null", "/dev/null", "/dev/null");
}

std::vector<pid_t> processes_matching(const std::string& prefix) {
  std::vector<pid_t> found;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = read_file(entry.path() / "cmdline");
    for (char& c : cmdline)
      if (c == '\0') c = ' ';
    pid_t pid = std::stoi(name);
    if (pid != getpid() && cmdline.rfind(prefix, 0) == 0) found.push_back(pid);
  }
  return found;
}

std::vector<std::string> sandcell_cgroups() {
  std::vector<std::string> dirs;
  std::error_code ec;
  // A v1 hierarchy or the hybrid unified mount (/sys/fs/cgroup/<name>/sandcell), or the root of a
  // pure v2 host (/sys/fs/cgroup/sandcell).
  std::vector<fs::path> parents = {"/sys/fs/cgroup/sandcell"};
  for (const auto& hierarchy : fs::directory_iterator("/sys/fs/cgroup", ec))
    parents.push_back(hierarchy.path() / "sandcell");
  for (const fs::path& parent : parents) {
    if (!fs::is_directory(parent)) continue;
    for (const auto& child : fs::directory_iterator(parent, ec))
      if (child.is_directory()) dirs.push_back(child.path());
  }
  return dirs;
}

bool pure_cgroup_v2_host() {
  // On a pure v2 host /sys/fs/cgroup is the unified hierarchy itself; on a hybrid one it is a
  // tmpfs of v1 mounts, and the unified tree (if any) is /sys/fs/cgroup/unified.
  return fs::exists("/sys/fs/cgroup/cgroup.controllers");
}

}  // namespace sandcell::test
