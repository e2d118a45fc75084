// Hostile resource use: each bomb ends with its own status in the record, the kernel outcome the
// program saw, and a host that stays healthy. (The single-process memory bomb, the probe fork
// bomb, one-thread spin, sleep, SIGTERM-ignoring, stdout/stderr floods and setsid daemons are in
// integration/limits_test.cpp.)
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hostile.hpp"

extern char** environ;

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

int64_t record_int(const CliRun& r, const char* field) {
  return r.record.is_object() ? r.record[field].get<int64_t>() : -1;
}

int64_t event_int(const CliRun& r, const char* field) {
  return r.record.is_object() ? r.record["events"].value(field, int64_t{-1}) : -1;
}

// --pids N is N for the program, at the edge too: sandcell's init, which starts it inside the
// run's cgroup and is counted there until it leaves (v1), takes nothing of the limit.
TEST(HostileResources, PidsOneIsTheProgramAlone) {
  auto alone = run_in_sandbox({"--pids", "1"}, {"/bin/true"});
  EXPECT_EQ(status_of(alone), "ok") << alone.out << alone.err;
  auto threads = run_in_sandbox({"--pids", "1"}, {"/bin/sc-probe", "threads", "4"});
  EXPECT_EQ(stdout_of(threads), "started 0 of 4 threads: errno=EAGAIN\n") << threads.err;
}

TEST(HostileResources, ThreadBombHitsThePidsLimit) {
  auto r = run_in_sandbox({"--pids", "32"}, {"/bin/sc-probe", "threads", "10000"});
  EXPECT_EQ(stdout_of(r), "started 31 of 10000 threads: errno=EAGAIN\n");  // 32 tasks with the main thread
  EXPECT_EQ(status_of(r), "pids_limit");
  EXPECT_GT(event_int(r, "pids_limit_hits"), 0);
  EXPECT_TRUE(processes_matching("/bin/sc-probe threads").empty());
}

TEST(HostileResources, ShellForkBombHitsThePidsLimit) {
  // Every f waits for its pipeline of two more: the tree only grows. `exit 1`: a run that exits 0
  // is `ok` whatever it brushed against (README, the result record).
  auto r = run_in_sandbox({"--pids", "32", "--timeout", "10"}, {"/bin/sh", "-c", "f() { f | f; }; f & sleep 1; exit 1"});
  EXPECT_EQ(status_of(r), "pids_limit") << r.record.dump();
  EXPECT_GT(event_int(r, "pids_limit_hits"), 0);
  EXPECT_NE(r.record.value("stderr", "").find("can't fork"), std::string::npos) << r.record.value("stderr", "");
  EXPECT_EQ(system("true"), 0);
}

TEST(HostileResources, MemoryBombSpreadOverProcessesIsOom) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sh", "-c",
      "for i in 1 2 3 4 5 6 7 8; do /bin/sc-probe mem 24 & done; wait; exit 1"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_GE(event_int(r, "oom_kills"), 1);
  EXPECT_LE(r.record["peak_memory_bytes"].get<int64_t>(), 64ll << 20);
}

TEST(HostileResources, MemfdFillIsOom) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sc-probe", "memfd", "512"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(stdout_of(r).find("memfd 512"), std::string::npos);
}

TEST(HostileResources, ShmTmpfsFillIsOom) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sc-probe", "fill-bytes", "/dev/shm/fill"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);  // killed while writing: no "wrote N MB" line
  EXPECT_EQ(stdout_of(r), "");
}

TEST(HostileResources, DiskFillOfTheWritableLayerIsBounded) {
  // The writable layer is a tmpfs charged to the sandbox's memory: a disk fill ends in the OOM
  // killer, not on the host's disk.
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sc-probe", "fill-bytes", "/tmp/fill"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_EQ(stdout_of(r), "");
  EXPECT_FALSE(fs::exists(test_rootfs() + "/tmp/fill"));
}

TEST(HostileResources, InodeFillOfTheWritableLayerIsBounded) {
  auto r = run_in_sandbox({"--memory", "32m", "--timeout", "120", "--workdir", "/tmp/d"},
                          {"/bin/sc-probe", "fill-files", "/tmp/d"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_EQ(stdout_of(r), "");  // killed while creating: inodes are charged to the sandbox
  EXPECT_FALSE(fs::exists(test_rootfs() + "/tmp/d"));
}

TEST(HostileResources, SpinOnEveryCoreIsTimeoutCpu) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  auto r = run_in_sandbox({"--cpu-time", "1", "--timeout", "60"},
                          {"/bin/sc-probe", "spin-threads", std::to_string(cores + 1)});
  EXPECT_EQ(status_of(r), "timeout_cpu") << r.record.dump();
  EXPECT_GE(record_int(r, "cpu_ms"), 950);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(processes_matching("/bin/sc-probe spin-threads").empty());
}

// stdin is a pipe the caller never writes to nor closes: the run must still end.
TEST(HostileResources, BlockedStdinEndsAtTheWallTimeout) {
  int in[2], out[2];
  ASSERT_EQ(pipe(in), 0);
  ASSERT_EQ(pipe(out), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_addclose(&actions, in[1]);
  posix_spawn_file_actions_addclose(&actions, out[0]);
  std::vector<std::string> args{sandcell_binary(), "run", "--json", "--rootfs", test_rootfs(),
                                "--timeout", "1", "--", "/bin/cat"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  std::string json;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) json.append(buffer, n);
  int status = 0;
  waitpid(pid, &status, 0);
  close(in[1]);
  close(out[0]);
  auto record = nlohmann::json::parse(json, nullptr, false);
  ASSERT_TRUE(record.is_object()) << json;
  EXPECT_EQ(record["status"], "timeout_wall");
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGKILL);
  EXPECT_TRUE(processes_matching("/bin/cat").empty());
}

// `sandcell ARGS` with stdout in a file, under GNU time: the peak RSS of sandcell itself. (The
// rusage of a child this test spawns directly would include the test's own peak: posix_spawn
// execs from a vfork child that shares this process's memory.)
struct Measured {
  int exit_code = -1;
  long peak_kib = -1;
  fs::path out;
};

Measured measure(const std::string& args) {
  Measured m;
  m.out = fs::temp_directory_path() / ("sandcell-hostile-out-" + std::to_string(getpid()));
  fs::path usage = m.out.string() + ".time";
  std::string command = "/usr/bin/time -f '%M %x' -o " + usage.string() + " " + sandcell_binary() + " " + args +
                        " > " + m.out.string() + " 2>/dev/null";
  EXPECT_NE(system(command.c_str()), -1);
  // The last line is "%M %x"; a nonzero exit adds a "Command exited with..." line before it.
  std::ifstream in(usage);
  for (std::string line; std::getline(in, line);) std::istringstream(line) >> m.peak_kib >> m.exit_code;
  fs::remove(usage);
  return m;
}

// (bytes, newlines) of a file, read in chunks.
std::pair<uint64_t, uint64_t> count_bytes_and_newlines(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<char> chunk(1 << 20);
  uint64_t bytes = 0, newlines = 0;
  while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0) {
    bytes += in.gcount();
    newlines += std::count(chunk.begin(), chunk.begin() + in.gcount(), '\n');
  }
  return {bytes, newlines};
}

TEST(HostileResources, HundredMegabyteLineIsCappedInTheRecordAndPassedThroughWhole) {
  const std::string probe = " -- /bin/sc-probe line 100";
  auto json = measure("run --json --rootfs " + test_rootfs() + probe);
  std::ifstream in(json.out);
  auto record = nlohmann::json::parse(in, nullptr, false);
  ASSERT_TRUE(record.is_object());
  EXPECT_EQ(record["status"], "output_limit");
  EXPECT_TRUE(record["stdout_truncated"].get<bool>());
  EXPECT_EQ(record["stdout"].get<std::string>().size(), 1u << 20);  // the default --output-limit
  EXPECT_EQ(json.exit_code, 128 + SIGKILL);
  EXPECT_LT(json.peak_kib, 64 * 1024) << "supervisor peak RSS in KiB";
  auto plain = measure("run --rootfs " + test_rootfs() + " --output-limit 200m" + probe);
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(count_bytes_and_newlines(plain.out), std::make_pair(uint64_t{100} << 20, uint64_t{0}));
  EXPECT_LT(plain.peak_kib, 64 * 1024) << "supervisor peak RSS in KiB";
  fs::remove(plain.out);
}

TEST(HostileResources, OpenFileExhaustionStopsAtTheRlimit) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "open-files"});
  EXPECT_EQ(stdout_of(r), "opened 1021 errno=EMFILE\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_TRUE(no_denials(r));
}

TEST(HostileResources, StoppedProcessIsStillKilledAtTheTimeout) {
  auto r = run_in_sandbox({"--timeout", "1"}, {"/bin/sc-probe", "stop-child"});
  EXPECT_EQ(stdout_of(r).rfind("stopped ", 0), 0u) << stdout_of(r);
  EXPECT_EQ(status_of(r), "timeout_wall");
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
  EXPECT_TRUE(processes_matching("/bin/sc-probe stop-child").empty());
}

TEST(HostileResources, DeepRecursionIsSignaledSegv) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "recurse"});
  EXPECT_EQ(stdout_of(r), "recursing\n");
  EXPECT_EQ(status_of(r), "signaled");
  EXPECT_EQ(r.record["signal"], SIGSEGV);
  EXPECT_EQ(r.exit_code, 128 + SIGSEGV);
}

TEST(HostileResources, BothStreamsFloodedAtOnceAreBothCapped) {
  auto r = run_in_sandbox({"--output-limit", "64k"}, {"/bin/sh", "-c",
      "/bin/sc-probe flood-stderr & /bin/sc-probe flood"});
  EXPECT_EQ(status_of(r), "output_limit");
  EXPECT_TRUE(r.record["stdout_truncated"].get<bool>() || r.record["stderr_truncated"].get<bool>());
  EXPECT_LE(stdout_of(r).size(), 64u << 10);
  EXPECT_LE(r.record.value("stderr", "").size(), 64u << 10);
  EXPECT_TRUE(processes_matching("/bin/sc-probe flood").empty());
}

}  // namespace
}  // namespace sandcell::test
