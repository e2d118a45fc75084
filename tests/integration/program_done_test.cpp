// kProgramDoneSignal (sandbox.hpp): a pooled program's word that it is done, taken as its exit.
// The record comes while its sandbox is frozen, with the status it said; then the sandbox is
// killed and removed as any other. Taken from the program's own process only, only in a pooled
// run: a program that sends it otherwise just goes on.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Whether the run's cgroup is frozen: v1's freezer hierarchy, or v2's cgroup.freeze.
bool frozen(const std::vector<std::string>& cgroups) {
  for (const std::string& dir : cgroups) {
    if (fs::exists(dir + "/freezer.state")) return contents(dir + "/freezer.state") == "FROZEN\n";
    if (fs::exists(dir + "/cgroup.freeze")) return contents(dir + "/cgroup.freeze") == "1\n";
  }
  return false;
}

// A pooled run of `script` (busy box sh): handed over at once; the go writes a line to its
// stdin, which the script reads first, so nothing of it runs before the hand-over.
struct PooledRun {
  std::string out;
  std::vector<std::string> cgroups;
  int on_result_calls = 0;
  bool frozen_at_result = false;
  std::vector<std::string> cgroups_at_result;
  std::optional<runtime::Result> early;
  runtime::Result result;

  explicit PooledRun(const std::string& script, bool pooled = true) {
    runtime::Spec spec = runtime::default_spec();
    spec.rootfs_layers = {test_rootfs()};
    spec.args = {"/bin/sh", "-c", script};
    spec.limits.wall_s = 20;
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    runtime::UniqueFd stdin_read(fds[0]), stdin_write(fds[1]);
    runtime::UniqueFd event(
        eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK));  // readable: the request is there
    runtime::HandOver hand_over;
    hand_over.fd = event.get();
    hand_over.take = [] {
      runtime::HandOverTerms terms;
      terms.wall_s = 20;
      return terms;
    };
    hand_over.go = [&] {
      ssize_t n = write(stdin_write.get(), "go\n", 3);
      (void)n;
    };
    runtime::RunOptions options;
    options.stdin_fd = stdin_read.get();
    options.output = [&](runtime::Stream s, std::span<const char> data) {
      if (s == runtime::Stream::Stdout) out.append(data.data(), data.size());
    };
    options.on_started = [&](pid_t, const std::vector<std::string>& paths) { cgroups = paths; };
    options.on_result = [&](const runtime::Result& r) {
      ++on_result_calls;
      early = r;
      frozen_at_result = frozen(cgroups);
      for (const std::string& dir : cgroups)
        if (fs::exists(dir)) cgroups_at_result.push_back(dir);
    };
    if (pooled) options.hand_over = &hand_over;
    if (!pooled) {
      ssize_t n = write(stdin_write.get(), "go\n", 3);
      (void)n;
      spec.limits.wall_s = 1;
    }
    result = runtime::run_sandbox(spec, options);
  }

  std::vector<std::string> cgroups_left() const {
    std::vector<std::string> left;
    for (const std::string& dir : cgroups)
      if (fs::exists(dir)) left.push_back(dir);
    return left;
  }
};

TEST(ProgramDone, APooledProgramsWordIsItsExitAndItsRecordComesWhileItsSandboxIsFrozen) {
  // A background child, and a program that sleeps forever once it has said "done 7": without
  // the word taken, the run would end at its 20 s wall limit.
  PooledRun run("read x; sleep 1000 & exec /bin/sc-probe done 7");
  ASSERT_EQ(run.on_result_calls, 1);
  EXPECT_EQ(run.result.status, runtime::Status::ExitNonzero) << run.result.error;
  EXPECT_EQ(run.result.exit_code, 7);
  EXPECT_TRUE(run.result.pooled);
  EXPECT_EQ(run.out, "done 7\n");
  EXPECT_FALSE(run.cgroups.empty());
  // The answer came before the teardown: the cgroup still there, frozen.
  EXPECT_TRUE(run.frozen_at_result);
  EXPECT_EQ(run.cgroups_at_result, run.cgroups);
  EXPECT_EQ(runtime::to_json(*run.early), runtime::to_json(run.result));
  // And the teardown came: the sleeping child killed, the cgroup removed.
  EXPECT_TRUE(run.cgroups_left().empty()) << run.cgroups_left().front();
}

TEST(ProgramDone, StatusZeroIsOk) {
  PooledRun run("read x; echo hello; exec /bin/sc-probe done 0");
  EXPECT_EQ(run.result.status, runtime::Status::Ok) << run.result.error;
  EXPECT_EQ(run.result.exit_code, 0);
  EXPECT_EQ(run.out, "hello\ndone 0\n");
  EXPECT_TRUE(run.frozen_at_result);
}

// The word of another process of the sandbox (here the shell's child) is not the program's: the
// run goes on to the program's own exit.
TEST(ProgramDone, AnotherProcesssWordIsNotTaken) {
  PooledRun run("read x; /bin/sc-probe done-and-exit 9; echo after; exit 3");
  EXPECT_EQ(run.result.status, runtime::Status::ExitNonzero) << run.result.error;
  EXPECT_EQ(run.result.exit_code, 3);
  EXPECT_EQ(run.out, "after\n");
  EXPECT_FALSE(run.frozen_at_result);
  EXPECT_TRUE(run.cgroups_at_result.empty());  // the usual order: removed before the record
}

// A cold run's init does not take it: the program sleeps on, to its wall limit (1 s here).
TEST(ProgramDone, AColdRunDoesNotTakeIt) {
  PooledRun run("read x; exec /bin/sc-probe done 7", /*pooled=*/false);
  EXPECT_EQ(run.result.status, runtime::Status::TimeoutWall) << run.result.error;
  EXPECT_FALSE(run.result.pooled);
  EXPECT_EQ(run.out, "done 7\n");
  EXPECT_FALSE(run.frozen_at_result);
}

}  // namespace
}  // namespace sandcell::test
