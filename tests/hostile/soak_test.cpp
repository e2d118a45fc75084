// Soak (the CI-sized version of bench/soak.sh): many runs in one long-lived supervisor process
// must leave its fd count and RSS where they were, and supervisors killed with SIGKILL at random
// moments must leave nothing once `sandcell gc` has run. SANDCELL_SOAK_RUNS and
// SANDCELL_SOAK_KILLS scale it up (bench/soak.sh sets 1000 and 100).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "hostile.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

int env_count(const char* name, int fallback) {
  const char* value = getenv(name);
  return value != nullptr && *value != '\0' ? std::stoi(value) : fallback;
}

size_t open_fds() {
  size_t count = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;
}

runtime::Spec soak_spec() {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/sh", "-c", "echo out; echo err >&2; /bin/sc-probe syscall keyctl"};
  auto profile = seccomp::load_profile_arg("default", {});
  runtime::SeccompProgram program = seccomp::compile(*profile, {.report_denials = true});
  program.name = "default";
  spec.seccomp = std::move(program);
  return spec;
}

runtime::Result run_once(const runtime::Spec& spec, size_t& out_bytes) {
  runtime::RunOptions options;
  options.output = [&](runtime::Stream, std::span<const char> bytes) { out_bytes += bytes.size(); };
  options.stdin_fd = -1;
  return runtime::run_sandbox(spec, options);
}

TEST(Soak, ManyRunsInOneSupervisorLeakNoFdsAndNoMemory) {
  const int runs = env_count("SANDCELL_SOAK_RUNS", 100);
  const runtime::Spec spec = soak_spec();
  size_t out_bytes = 0;
  for (int i = 0; i < 10; ++i) run_once(spec, out_bytes);  // warm-up: caches, allocator arenas
  const size_t fds_before = open_fds();
  const long rss_before = rss_kib();
  for (int i = 0; i < runs; ++i) {
    auto result = run_once(spec, out_bytes);
    ASSERT_EQ(result.status, runtime::Status::Ok) << "run " << i << ": " << result.error;
    ASSERT_EQ(result.events.denied_syscalls.size(), 1u) << "run " << i;
  }
  EXPECT_EQ(open_fds(), fds_before) << "fds leaked over " << runs << " runs";
  // A leak of even 1 KiB per run would show as runs KiB; allow allocator noise only.
  EXPECT_LT(rss_kib() - rss_before, 2048) << "RSS grew over " << runs << " runs (KiB)";
  RecordProperty("rss_growth_kib", std::to_string(rss_kib() - rss_before));
  EXPECT_EQ(out_bytes, (10u + runs) * (4 + 4 + 19));  // "out\n", "err\n", "keyctl errno=EPERM\n"
}

TEST(Soak, SupervisorsKilledAtRandomMomentsLeaveNothingAfterGc) {
  const int kills = env_count("SANDCELL_SOAK_KILLS", 10);
  std::mt19937 random(static_cast<unsigned>(getpid()));
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // the orphaned sandbox pid 1s are reaped here
  std::vector<pid_t> supervisors;
  for (int i = 0; i < kills; ++i) {
    pid_t supervisor = spawn_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/sc-probe", "sleep", "3003"});
    // 0 to 150 ms: before the clone, during setup, or while the program runs.
    std::this_thread::sleep_for(std::chrono::microseconds(random() % 150000));
    kill(supervisor, SIGKILL);
    waitpid(supervisor, nullptr, 0);
    supervisors.push_back(supervisor);
  }
  // A sandbox killed before its execve still carries sandcell's command line.
  const std::string before_exec = sandcell_binary() + " run --rootfs " + test_rootfs() + " -- /bin/sc-probe sleep 3003";
  auto leftovers = [&] {
    auto found = processes_matching("/bin/sc-probe sleep 3003");
    for (pid_t pid : processes_matching(before_exec)) found.push_back(pid);
    return found;
  };
  for (int i = 0; i < 200 && !leftovers().empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }
  auto left_running = leftovers();
  EXPECT_TRUE(left_running.empty()) << left_running.size() << " sandboxes outlived their supervisor, first pid "
                                    << (left_running.empty() ? 0 : left_running[0]);
  for (pid_t pid : left_running) kill(pid, SIGKILL);  // ours: started by this test
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  auto gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  // Runs are named "<supervisor pid>-..." in cgroups, mounts and /run/sandcell.
  std::vector<std::string> left;
  std::string mountinfo;
  {
    std::ifstream in("/proc/self/mountinfo");
    mountinfo.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::error_code ec;
  for (pid_t pid : supervisors) {
    std::string id = std::to_string(pid) + "-";
    for (const auto& dir : sandcell_cgroups())
      if (dir.find("/sandcell/" + id) != std::string::npos) left.push_back(dir);
    if (mountinfo.find("/run/sandcell/" + id) != std::string::npos) left.push_back("mount of " + id);
    // The network namespace a killed run took from the pool, or was making for the next
    // (runtime/src/netns_pool.hpp); gc removes those of dead runs.
    for (const char* entry : {"/run/sandcell/netns/taken-", "/run/sandcell/netns/new-"})
      if (mountinfo.find(entry + id) != std::string::npos) left.push_back(entry + id);
    for (const auto& entry : fs::directory_iterator("/run/sandcell", ec))
      if (entry.path().filename().string().rfind(id, 0) == 0) left.push_back(entry.path());
  }
  EXPECT_TRUE(left.empty()) << left.size() << " left, first: " << (left.empty() ? "" : left[0]);
}

}  // namespace
}  // namespace sandcell::test
