// Limits, statuses and the supervisor: every way a run can end is reported as what it was.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "sandcell_cli.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

std::string run_status(const CliRun& r) {
  return r.record.is_object() ? r.record["status"].get<std::string>()
                              : "no record: " + r.out + r.err;
}

TEST(Limits, CleanExitIsOkWithUsageAndEnforcement) {
  auto r = run_in_sandbox({}, {"/bin/true"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(run_status(r), "ok");
  for (const char* field : {"exit_code", "signal", "wall_ms", "cpu_ms", "peak_memory_bytes",
                            "stdout_bytes", "stderr_bytes", "stdout_truncated", "stderr_truncated",
                            "limits", "enforced", "isolation", "events"})
    EXPECT_TRUE(r.record.contains(field)) << field;
  EXPECT_EQ(r.record["limits"]["memory_bytes"], 512ull << 20);
  EXPECT_EQ(r.record["limits"]["pids"], 128);
  // The development host is hybrid (v1 controllers); tests/vm's guest is pure v2.
  const std::string layout = pure_cgroup_v2_host() ? "v2" : "v1";
  EXPECT_EQ(r.record["enforced"]["memory_bytes"], "cgroup-" + layout);
  EXPECT_EQ(r.record["enforced"]["wall_s"], "supervisor");
  EXPECT_EQ(r.record["isolation"]["cgroup"], layout);
}

TEST(Limits, NonzeroExitCodeIsPassedThrough) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "echo oops >&2; exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(run_status(r), "exit_nonzero");
  EXPECT_EQ(r.record["stderr"], "oops\n");
}

TEST(Limits, MemoryBombIsOom) {
  auto r = run_in_sandbox({"--memory", "64m"}, {"/bin/sc-probe", "mem", "512"});
  EXPECT_EQ(run_status(r), "oom") << r.out;
  EXPECT_GE(r.record["events"]["oom_kills"].get<int>(), 1);
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

TEST(Limits, ForkBombIsPidsLimitAndHostUnaffected) {
  auto r = run_in_sandbox({"--pids", "32", "--timeout", "2"}, {"/bin/sc-probe", "forkbomb"});
  EXPECT_EQ(run_status(r), "pids_limit") << r.out;
  EXPECT_GT(r.record["events"]["pids_limit_hits"].get<int>(), 0);
  EXPECT_TRUE(processes_matching("/bin/sc-probe forkbomb").empty());
  // The host can still start processes.
  EXPECT_EQ(system("true"), 0);
}

TEST(Limits, SpinIsTimeoutCpu) {
  auto r = run_in_sandbox({"--cpu-time", "0.5", "--timeout", "20"}, {"/bin/sc-probe", "spin"});
  EXPECT_EQ(run_status(r), "timeout_cpu") << r.out;
  EXPECT_GE(r.record["cpu_ms"].get<int>(), 450);
}

TEST(Limits, SleepIsTimeoutWall) {
  auto r = run_in_sandbox({"--timeout", "0.5"}, {"/bin/sc-probe", "sleep", "100"});
  EXPECT_EQ(run_status(r), "timeout_wall") << r.out;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

TEST(Limits, SigtermIgnoringProgramIsStillKilled) {
  auto r = run_in_sandbox({"--timeout", "0.5"}, {"/bin/sc-probe", "ignore-term"});
  EXPECT_EQ(run_status(r), "timeout_wall");
}

TEST(Limits, FloodIsOutputLimitAndSupervisorMemoryStaysBounded) {
  auto r = run_in_sandbox({"--output-limit", "1m"}, {"/bin/sc-probe", "flood"});
  EXPECT_EQ(run_status(r), "output_limit");
  EXPECT_TRUE(r.record["stdout_truncated"].get<bool>());
  EXPECT_EQ(r.record["stdout"].get<std::string>().size(), 1u << 20);
  EXPECT_GE(r.record["stdout_bytes"].get<uint64_t>(), 1u << 20);
  // Passed through (not captured), 256 MiB of output must not grow the supervisor.
  auto plain = run_sandcell(
      {"run", "--rootfs", test_rootfs(), "--output-limit", "256m", "--", "/bin/sc-probe", "flood"});
  EXPECT_EQ(plain.exit_code, 128 + SIGKILL);
  EXPECT_GE(plain.out.size(), 256u << 20);
  EXPECT_LT(plain.max_rss_kb, 64 * 1024) << "supervisor peak RSS in KiB";
}

// The last of the output can reach the supervisor after the init's report that the program has
// exited; past the limit it still makes the status output_limit, whichever came first.
TEST(Limits, OutputPastTheLimitJustBeforeTheExitIsStillOutputLimit) {
  for (int i = 0; i < 20; ++i) {
    auto r = run_in_sandbox({"--output-limit", "1k"},
                            {"/bin/sh", "-c", "head -c 3000 /dev/zero; exit 0"});
    EXPECT_EQ(run_status(r), "output_limit") << "run " << i;
    EXPECT_TRUE(r.record["stdout_truncated"].get<bool>());
    EXPECT_EQ(r.record["stdout"].get<std::string>().size(), 1024u);
  }
}

TEST(Limits, StderrFloodIsCappedToo) {
  auto r = run_in_sandbox({"--output-limit", "64k"}, {"/bin/sc-probe", "flood-stderr"});
  EXPECT_EQ(run_status(r), "output_limit");
  EXPECT_TRUE(r.record["stderr_truncated"].get<bool>());
  EXPECT_EQ(r.record["stderr"].get<std::string>().size(), 64u << 10);
}

TEST(Supervisor, BackgroundChildIsKilledWhenProgramExits) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "/bin/sc-probe sleep 3001 & exit 0"});
  EXPECT_EQ(run_status(r), "ok");
  // The run ended with the program, not with its child's 3001 s: a bound that tells the two apart
  // and no more (3 s was one here, and a run under emulation on a busy host took 3.4 s).
  EXPECT_LT(r.record["wall_ms"].get<int>(), 60000);
  EXPECT_TRUE(processes_matching("/bin/sc-probe sleep 3001").empty());
}

// The init ends what the program left running itself (kill(-1), then reaps it all) before it
// reports. Under a profile that denies it the kill, the report says the tree is not ended, and the
// supervisor waits for the init's exit instead, which ends the rest: the run still ends at once,
// with nothing left.
TEST(Supervisor, WhatTheInitCannotKillIsEndedByItsExit) {
  TempTree dir("sc-no-kill");
  const fs::path profile = dir.path / "no-kill.json";
  std::ofstream(profile) << R"({"defaultAction": "SCMP_ACT_ALLOW",
    "syscalls": [{"names": ["kill"], "action": "SCMP_ACT_ERRNO"}]})";
  auto r = run_in_sandbox({"--seccomp", profile.string()},
                          {"/bin/sh", "-c", "/bin/sc-probe sleep 3003 & exit 0"});
  EXPECT_EQ(run_status(r), "ok");
  // Not the 3003 s of the sleep: a plain run takes ms here, seconds under emulation (tests/vm).
  EXPECT_LT(r.record["wall_ms"].get<int>(), 60000);
  EXPECT_TRUE(processes_matching("/bin/sc-probe sleep 3003").empty());
  // The init's kill, denied: the way this test knows it went the fallback's way.
  ASSERT_EQ(r.record["events"]["denied_syscalls"].size(), 1u) << r.record["events"].dump();
  EXPECT_EQ(r.record["events"]["denied_syscalls"][0]["name"], "kill");
}

// With capabilities kept the init does not try: a process of another user (CAP_SETUID) is one
// kill(-1) skips while still succeeding for the rest, and waiting for it would last until the
// wall timeout. The init's exit ends both, as before.
TEST(Supervisor, WhatAnotherUserLeftRunningIsEndedToo) {
  auto r = run_in_sandbox({"--cap-add", "SETUID", "--cap-add", "SETGID", "--timeout", "20"},
                          {"/bin/sh", "-c",
                           "/bin/start-stop-daemon -S -b -c nobody -x /bin/sc-probe -- sleep 3006; "
                           "/bin/sc-probe sleep 3005 & sleep 0.2; exit 0"});
  EXPECT_EQ(run_status(r), "ok");
  EXPECT_LT(r.record["wall_ms"].get<int>(), 15000);  // before the 20 s wall timeout
  EXPECT_TRUE(processes_matching("/bin/sc-probe sleep 3005").empty());
  EXPECT_TRUE(processes_matching("/bin/sc-probe sleep 3006").empty());
}

// sandcell returns only once the sandbox's init is reaped, not as soon as the init has reported
// (the init then still tears its namespaces down; a tool that does not wait for its pid 1 leaves
// it to whoever reaps orphans). A caller that reaps orphans (a subreaper, as a container's init
// or an agent may be) gets no child it did not start, also after a run that left a daemon.
TEST(Supervisor, LeavesNoProcessForACallerThatReapsOrphans) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  // Earlier tests of this process (tests/vm runs a whole set in one) may have made it a subreaper
  // and left orphans that are still ending: reap those first, so that what is counted below is
  // this test's runs alone.
  for (int i = 0; i < 500; ++i) {
    pid_t earlier = waitpid(-1, nullptr, WNOHANG | __WALL);
    if (earlier < 0) break;
    if (earlier == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  errno = 0;
  ASSERT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1);  // no child before
  for (int i = 0; i < 5; ++i) {
    auto r = run_in_sandbox({}, {"/bin/sh", "-c", "/bin/sc-probe sleep 3004 & exit 0"});
    EXPECT_EQ(run_status(r), "ok");
    errno = 0;
    pid_t left = waitpid(-1, nullptr, WNOHANG | __WALL);  // reaps what was left, if anything
    int why = errno;
    EXPECT_EQ(left, -1) << "run " << i << " left a child for its caller to reap";
    EXPECT_EQ(why, ECHILD);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  while (waitpid(-1, nullptr, __WALL) > 0) {
  }
}

TEST(Supervisor, SetsidDaemonIsKilled) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "daemon"});
  EXPECT_EQ(run_status(r), "ok");
  EXPECT_TRUE(processes_matching("/bin/sc-probe daemon").empty());
}

TEST(Supervisor, TwentyParallelRunsStayIndependent) {
  std::vector<std::thread> threads;
  std::vector<CliRun> runs(20);
  for (int i = 0; i < 20; ++i)
    threads.emplace_back([&runs, i] {
      std::string id = std::to_string(i);
      runs[i] = run_in_sandbox(
          {"--hostname", "h" + id, "--env", "ID=" + id},
          {"/bin/sh", "-c", "echo $ID > /tmp/id; sleep 0.3; echo $(hostname) $(cat /tmp/id) $$"});
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(run_status(runs[i]), "ok") << runs[i].err;
    EXPECT_EQ(runs[i].record.value("stdout", ""),
              "h" + std::to_string(i) + " " + std::to_string(i) + " 2\n");
  }
}

TEST(Supervisor, SigkilledSupervisorLeavesNothingAfterGc) {
  // The sandbox's pid 1 is orphaned when its supervisor dies; as subreaper this test inherits
  // and reaps it, instead of leaving a zombie for the host's init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  pid_t supervisor =
      spawn_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/sc-probe", "sleep", "3002"});
  // Wait until the program runs inside the sandbox.
  for (int i = 0; i < 100 && processes_matching("/bin/sc-probe sleep 3002").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_FALSE(processes_matching("/bin/sc-probe sleep 3002").empty());
  kill(supervisor, SIGKILL);
  waitpid(supervisor, nullptr, 0);
  for (int i = 0; i < 100 && !processes_matching("/bin/sc-probe sleep 3002").empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(processes_matching("/bin/sc-probe sleep 3002").empty())
      << "the sandbox outlived its supervisor";
  std::string id_prefix = "/sandcell/" + std::to_string(supervisor) + "-";
  bool left = false;
  for (const auto& dir : sandcell_cgroups()) left |= dir.find(id_prefix) != std::string::npos;
  EXPECT_TRUE(left) << "expected the killed run's cgroups to remain until gc";
  auto gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("removed cgroup"), std::string::npos) << gc.out;
  for (const auto& dir : sandcell_cgroups())
    EXPECT_EQ(dir.find(id_prefix), std::string::npos) << dir;
  EXPECT_FALSE(fs::exists("/run/sandcell/" + std::to_string(supervisor)));
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

// A plain run leaves nothing under the state root but the shared scratch mount point; gc removes
// the directory of a dead run and leaves alone what is not a run's (the mount point, a `sandcell
// serve` socket someone put there).
TEST(Supervisor, GcJudgesOnlyRunDirectoriesUnderTheStateRoot) {
  auto r = run_in_sandbox({}, {"/bin/true"});
  ASSERT_EQ(run_status(r), "ok") << r.err;
  ASSERT_TRUE(fs::is_directory("/run/sandcell/scratch"));
  EXPECT_TRUE(fs::is_empty("/run/sandcell/scratch"));
  // pid 1 can never be a sandcell supervisor: a dead run's id.
  const std::string dead = "/run/sandcell/1-0badc0de", foreign = "/run/sandcell/api-test.sock";
  fs::create_directories(dead);
  std::ofstream(dead + "/resolv.conf") << "nameserver 192.0.2.1\n";
  std::ofstream(foreign) << "";
  auto gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(fs::exists(dead)) << gc.out;
  EXPECT_TRUE(fs::exists(foreign)) << gc.out;
  EXPECT_TRUE(fs::is_directory("/run/sandcell/scratch")) << gc.out;
  fs::remove(foreign);
}

}  // namespace
}  // namespace sandcell::test

namespace sandcell::test {
namespace {

TEST(Limits, CpuQuotaThrottlesToTheRequestedShare) {
  auto r = run_in_sandbox({"--cpus", "0.25", "--timeout", "1"}, {"/bin/sc-probe", "spin"});
  EXPECT_EQ(r.record["status"], "timeout_wall");
  // 0.25 cores for ~1 s of wall time: about 250 ms of CPU, far from the 1000 ms it would get.
  EXPECT_LT(r.record["cpu_ms"].get<int>(), 500) << r.record.dump();
  EXPECT_GT(r.record["cpu_ms"].get<int>(), 100) << r.record.dump();
}

TEST(Limits, ReportFileHoldsTheRecord) {
  std::string report = "/tmp/sandcell-report-" + std::to_string(getpid()) + ".json";
  auto r = run_sandcell({"run", "--rootfs", test_rootfs(), "--report", report, "--", "/bin/sh",
                         "-c", "echo hi; exit 4"});
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "hi\n");  // passed through, not captured
  std::ifstream in(report);
  auto record = nlohmann::json::parse(in);
  EXPECT_EQ(record["status"], "exit_nonzero");
  EXPECT_EQ(record["exit_code"], 4);
  EXPECT_EQ(record["stdout_bytes"], 3);
  EXPECT_FALSE(record.contains("stdout"));
  std::filesystem::remove(report);
}

}  // namespace
}  // namespace sandcell::test
