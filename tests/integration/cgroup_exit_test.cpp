// The end of a run on a v1 host: the sandbox's init moves itself out of the run's cgroups as
// soon as its program runs in them, and says so in its report, so once the program and whatever
// it left running are gone the supervisor removes them while the init is still exiting (tearing
// its namespaces down takes ~0.3 ms of RCU grace periods here), not after. strace (of the
// supervisor only) shows the order of its rmdir and wait4 calls: the removal follows the init's
// report, which the supervisor reads before it reaps the init (the wait4 of the pid its clone3
// returned; another reaps the helper that makes the next run's network namespace,
// netns_pool.hpp).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"
#include "sandcell_cli.hpp"
#include "text_pages.hpp"

namespace sandcell::test {
namespace {

struct SupervisorCalls {
  std::vector<std::string> lines;  // rmdir and wait4 calls, in order
  std::string init;                // the sandbox's init, as clone3 returned it
  int exit_code = -1;
};

// The run's own rmdir/wait4 calls: gc-like rmdirs of /run/sandcell are left out.
SupervisorCalls trace_run(const std::string& program) {
  char path[] = "/tmp/sandcell-strace-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  close(fd);
  SupervisorCalls calls;
  // LeakSanitizer cannot run under ptrace (the asan build): its leak check stays off here.
  calls.exit_code =
      std::system(("ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" "
                   "strace -qq -o " +
                   std::string(path) + " -e trace=rmdir,wait4,clone3 " + sandcell_binary() +
                   " run --rootfs " + test_rootfs() + " -- /bin/sh -c '" + program + "' >/dev/null")
                      .c_str());
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("clone3(", 0) == 0 && calls.init.empty())
      calls.init = line.substr(line.rfind("= ") + 2);
    if (line.rfind("wait4(", 0) == 0 || line.find("/sys/fs/cgroup/") != std::string::npos)
      calls.lines.push_back(line);
  }
  unlink(path);
  return calls;
}

size_t first(const std::vector<std::string>& lines, const std::string& start,
             const std::string& has) {
  for (size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind(start, 0) == 0 && lines[i].find(has) != std::string::npos) return i;
  return lines.size();
}

bool fs_exists(const std::string& path) {
  return access(path.c_str(), F_OK) == 0;
}

std::string joined(const std::vector<std::string>& lines) {
  std::ostringstream out;
  for (const std::string& line : lines) out << line << "\n";
  return out.str();
}

class CgroupExit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (runtime::probe_cgroups().mode != runtime::CgroupHost::Mode::V1)
      GTEST_SKIP() << "the init leaves its cgroups on v1 hosts only; this host is not v1";
  }
};

TEST_F(CgroupExit, TheRunsCgroupsAreRemovedBeforeTheInitIsReaped) {
  SupervisorCalls calls = trace_run("exit 3");
  ASSERT_EQ(WEXITSTATUS(calls.exit_code), 3);
  const std::string all = joined(calls.lines);
  const size_t removed = first(calls.lines, "rmdir(", "= 0");
  const size_t reaped = first(calls.lines, "wait4(" + calls.init + ",", "");
  ASSERT_LT(removed, calls.lines.size()) << all;
  EXPECT_LT(removed, reaped) << all;
  EXPECT_EQ(all.find("EBUSY"), std::string::npos) << all;  // empty on the first try
}

// What the program left running is ended by the init before it reports (kill(-1), then it reaps
// it all; child_process.cpp), so the cgroups are as empty at the report as after a plain exit:
// every one is removed on the first try, before the init is reaped, and none is left for gc.
TEST_F(CgroupExit, WhatTheProgramLeftRunningIsEndedBeforeTheInitReports) {
  SupervisorCalls calls = trace_run("/bin/sc-probe bg-sleep");
  ASSERT_EQ(WEXITSTATUS(calls.exit_code), 0);
  const std::string all = joined(calls.lines);
  std::vector<std::string> removed;  // directories whose rmdir succeeded
  for (const std::string& line : calls.lines) {
    if (line.rfind("rmdir(\"", 0) != 0 || line.find("= 0") == std::string::npos) continue;
    removed.push_back(line.substr(7, line.find('"', 7) - 7));
  }
  EXPECT_EQ(removed.size(), 4u) << all;  // memory, pids, cpu, cpuacct
  for (const std::string& dir : removed) EXPECT_FALSE(fs_exists(dir)) << dir;
  EXPECT_EQ(all.find("EBUSY"), std::string::npos) << all;
  EXPECT_LT(first(calls.lines, "rmdir(", "= 0"),
            first(calls.lines, "wait4(" + calls.init + ",", ""))
      << all;
}

// The controllers' lines of /proc/PID/cgroup ("4:memory:/sandcell/RUN"): controller -> path.
std::map<std::string, std::string> cgroups_of(pid_t pid) {
  std::map<std::string, std::string> paths;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    for (size_t start = 0; start <= controllers.size();) {
      const size_t comma = std::min(controllers.find(',', start), controllers.size());
      paths[controllers.substr(start, comma - start)] = line.substr(second + 1);
      start = comma + 1;
    }
  }
  return paths;
}

// While the program runs, only its processes are in the run's cgroups: the init has moved into
// their `sandcell` parents (child_process.cpp), and nothing is left for it to do there at the end
// of the run. The pids limit, one above --pids while the init was counted, is --pids again.
TEST_F(CgroupExit, TheInitIsOutOfTheRunsCgroupsWhileTheProgramRuns) {
  const pid_t supervisor =
      spawn_sandcell({"run", "--rootfs", test_rootfs(), "--pids", "7", "--", "/bin/sleep", "1"});
  ASSERT_GT(supervisor, 0);
  const pid_t program = wait_for_sandbox_program(supervisor);
  const pid_t init = first_child(supervisor);
  std::map<std::string, std::string> init_cgroups, program_cgroups;
  std::string pids_max;
  // The init leaves right after the program's execve, one hierarchy after the other; give it
  // a moment to leave all four (under ASan on a loaded host memory had moved, cpu not yet).
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
       std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(std::chrono::milliseconds(10))) {
    auto init_now = cgroups_of(init), program_now = cgroups_of(program);
    if (init_now.empty() || program_now.empty()) break;  // the run is over: keep the last
    init_cgroups = init_now;
    program_cgroups = program_now;
    std::ifstream limit("/sys/fs/cgroup/pids" + program_cgroups["pids"] + "/pids.max");
    std::getline(limit, pids_max);
    if (init_cgroups["memory"] == "/sandcell" && init_cgroups["pids"] == "/sandcell" &&
        init_cgroups["cpu"] == "/sandcell" && init_cgroups["cpuacct"] == "/sandcell")
      break;
  }
  int status = 0;
  ASSERT_EQ(waitpid(supervisor, &status, 0), supervisor);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(program, 0) << "the program never started";
  EXPECT_EQ(pids_max, "7");
  for (const char* controller : {"memory", "pids", "cpu", "cpuacct"}) {
    EXPECT_EQ(init_cgroups[controller], "/sandcell") << controller;
    EXPECT_EQ(program_cgroups[controller].rfind("/sandcell/", 0), 0u)
        << controller << ": " << program_cgroups[controller];
  }
}

}  // namespace
}  // namespace sandcell::test
