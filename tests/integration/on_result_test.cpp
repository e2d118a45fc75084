// RunOptions::on_result: the record as soon as the program is gone, before the rest of the
// teardown (the warm pool answers from it). It must be the record run_sandbox returns, and by
// then nothing of the program may run: what it left behind is killed and its cgroup removed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <optional>

#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

TEST(OnResult, TheRecordComesOnceWithNothingOfTheProgramLeft) {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  // A background child that would outlive the program: the cgroup's removal ends it.
  spec.args = {"/bin/sh", "-c", "sleep 1000 & echo started; exit 3"};
  spec.limits.wall_s = 20;
  runtime::RunOptions options;
  options.stdin_fd = -1;
  std::string out;
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    if (s == runtime::Stream::Stdout) out.append(data.data(), data.size());
  };
  std::vector<std::string> cgroups;
  options.on_started = [&](pid_t, const std::vector<std::string>& paths) { cgroups = paths; };
  int calls = 0;
  std::optional<runtime::Result> early;
  std::vector<std::string> cgroups_left;
  options.on_result = [&](const runtime::Result& r) {
    ++calls;
    early = r;
    for (const std::string& dir : cgroups)
      if (fs::exists(dir)) cgroups_left.push_back(dir);
  };
  runtime::Result result = runtime::run_sandbox(spec, options);
  ASSERT_EQ(calls, 1);
  EXPECT_EQ(out, "started\n");
  EXPECT_FALSE(cgroups.empty());
  EXPECT_TRUE(cgroups_left.empty()) << cgroups_left.front();
  EXPECT_EQ(result.status, runtime::Status::ExitNonzero) << result.error;
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(runtime::to_json(*early), runtime::to_json(result));
}

TEST(OnResult, ARunThatCannotStartStillReturnsItsRecord) {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/no/such/program"};
  runtime::RunOptions options;
  options.stdin_fd = -1;
  options.output = [](runtime::Stream, std::span<const char>) {};
  std::optional<runtime::Result> early;
  options.on_result = [&](const runtime::Result& r) { early = r; };
  runtime::Result result = runtime::run_sandbox(spec, options);
  EXPECT_NE(result.status, runtime::Status::Ok);
  if (early) {  // called or not, never another record
    EXPECT_EQ(runtime::to_json(*early), runtime::to_json(result));
  }
}

}  // namespace
}  // namespace sandcell::test
