// Hostile resource use: each bomb ends with its own status in the record, the kernel outcome the
// program saw, and a host that stays healthy. (The single-process memory bomb, the probe fork
// bomb, one-thread spin, sleep, SIGTERM-ignoring, stdout/stderr floods and setsid daemons are in
// integration/limits_test.cpp.)
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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

TEST(HostileResources, ThreadBombHitsThePidsLimit) {
  auto r = run_in_sandbox({"--pids", "32"}, {"/bin/sc-probe", "threads", "10000"});
  EXPECT_EQ(stdout_of(r).rfind("started ", 0), 0u) << stdout_of(r);
  EXPECT_NE(stdout_of(r).find("of 10000 threads: errno=EAGAIN"), std::string::npos) << stdout_of(r);
  EXPECT_EQ(status_of(r), "pids_limit");
  EXPECT_GT(event_int(r, "pids_limit_hits"), 0);
  EXPECT_TRUE(processes_matching("/bin/sc-probe threads").empty());
}

TEST(HostileResources, ShellForkBombHitsThePidsLimit) {
  auto r = run_in_sandbox({"--pids", "32", "--timeout", "2"}, {"/bin/sh", "-c", "f() { f | f & }; f; wait"});
  EXPECT_EQ(status_of(r), "pids_limit") << r.record.dump();
  EXPECT_GT(event_int(r, "pids_limit_hits"), 0);
  EXPECT_NE(r.record.value("stderr", "").find("can't fork"), std::string::npos) << r.record.value("stderr", "");
  EXPECT_EQ(system("true"), 0);
}

TEST(HostileResources, MemoryBombSpreadOverProcessesIsOom) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sh", "-c",
      "for i in 1 2 3 4 5 6 7 8; do /bin/sc-probe mem 24 & done; wait"});
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
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sh", "-c", "/bin/sc-probe fill-bytes /dev/shm/fill; echo $?"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_GE(event_int(r, "oom_kills"), 1);
}

TEST(HostileResources, DiskFillOfTheWritableLayerIsBounded) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sh", "-c", "/bin/sc-probe fill-bytes /tmp/fill; echo $?"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
  EXPECT_GE(event_int(r, "oom_kills"), 1);
  EXPECT_FALSE(fs::exists(test_rootfs() + "/tmp/fill"));
}

TEST(HostileResources, InodeFillOfTheWritableLayerIsBounded) {
  auto r = run_in_sandbox({"--memory", "32m", "--timeout", "120"}, {"/bin/sh", "-c",
      "mkdir /tmp/d && /bin/sc-probe fill-files /tmp/d; echo $?"});
  EXPECT_EQ(status_of(r), "oom") << r.record.dump();
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

TEST(HostileResources, HundredMegabyteLineIsCappedInTheRecordAndPassedThroughWhole) {
  auto json = run_in_sandbox({}, {"/bin/sc-probe", "line", "100"});
  EXPECT_EQ(status_of(json), "output_limit");
  EXPECT_TRUE(json.record["stdout_truncated"].get<bool>());
  EXPECT_EQ(stdout_of(json).size(), 1u << 20);  // the default --output-limit
  EXPECT_LT(json.max_rss_kb, 64 * 1024);
  auto plain = run_sandcell({"run", "--rootfs", test_rootfs(), "--output-limit", "200m", "--",
                             "/bin/sc-probe", "line", "100"});
  EXPECT_EQ(plain.exit_code, 0);
  EXPECT_EQ(plain.out.size(), 100u << 20);
  EXPECT_EQ(plain.out.find('\n'), std::string::npos);
  EXPECT_LT(plain.max_rss_kb, 64 * 1024) << "supervisor peak RSS in KiB";
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
