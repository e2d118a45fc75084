// BindMount::late (RunOptions::before_binds): a bind whose source is made while the sandbox
// starts, as `sandcell code`'s workspace disk is. With --userns=auto the supervisor calls the
// hook after the clone and the child attaches the source last of its root; without a user
// namespace the hook comes first. The program sees what the hook made, idmapped as asked; a hook
// that fails ends the run before anything of the program ran, with nothing left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

struct LateRun {
  runtime::Result result;
  std::string out;
  int hook_calls = 0;
  bool existed_at_start = true;  // the source, when run_sandbox was called
};

// Runs `script` with a late bind of <dir>/made at /late; the hook makes it and a file in it.
LateRun run_with_late_bind(runtime::UserNamespace userns, const std::string& script,
                           bool hook_fails = false) {
  const fs::path dir = fs::temp_directory_path() / ("sandcell-late-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path source = dir / "made";
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.user_namespace = userns;
  spec.args = {"/bin/sh", "-c", script};
  spec.limits.wall_s = 20;
  spec.bind_mounts.push_back({.source = source.string(),
                              .destination = "/late",
                              .read_only = false,
                              .idmap = true,
                              .late = true});
  LateRun run;
  run.existed_at_start = fs::exists(source);
  runtime::RunOptions options;
  options.stdin_fd = -1;
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    if (s == runtime::Stream::Stdout) run.out.append(data.data(), data.size());
  };
  options.before_binds = [&] {
    ++run.hook_calls;
    if (hook_fails) throw Error(EIO, "the disk could not be made");
    fs::create_directory(source);
    std::ofstream(source / "file") << "from the hook\n";
  };
  run.result = runtime::run_sandbox(spec, options);
  fs::remove_all(dir);
  return run;
}

TEST(LateBind, WithAUserNamespaceTheChildAttachesWhatTheHookMade) {
  LateRun run =
      run_with_late_bind(runtime::UserNamespace::Auto,
                         "cat /late/file; stat -c %u /late/file; echo x > /late/new && echo wrote");
  EXPECT_FALSE(run.existed_at_start);
  EXPECT_EQ(run.hook_calls, 1);
  ASSERT_EQ(run.result.status, runtime::Status::Ok) << run.result.error << run.out;
  // Idmapped: host root's file is the sandbox's root's.
  EXPECT_EQ(run.out, "from the hook\n0\nwrote\n");
}

TEST(LateBind, WithoutAUserNamespaceTheHookComesFirst) {
  LateRun run = run_with_late_bind(runtime::UserNamespace::Host, "cat /late/file");
  EXPECT_EQ(run.hook_calls, 1);
  ASSERT_EQ(run.result.status, runtime::Status::Ok) << run.result.error;
  EXPECT_EQ(run.out, "from the hook\n");
}

TEST(LateBind, AFailingHookEndsTheRunBeforeTheProgram) {
  LateRun run = run_with_late_bind(runtime::UserNamespace::Auto, "echo ran", /*hook_fails=*/true);
  EXPECT_EQ(run.hook_calls, 1);
  EXPECT_EQ(run.result.status, runtime::Status::RuntimeError);
  EXPECT_NE(run.result.error.find("the disk could not be made"), std::string::npos)
      << run.result.error;
  EXPECT_EQ(run.out, "");
}

TEST(LateBind, ASpecWithALateBindNeedsTheHook) {
  for (runtime::UserNamespace userns :
       {runtime::UserNamespace::Host, runtime::UserNamespace::Auto}) {
    runtime::Spec spec = runtime::default_spec();
    spec.rootfs_layers = {test_rootfs()};
    spec.args = {"/bin/true"};
    spec.user_namespace = userns;
    spec.bind_mounts.push_back(
        {.source = "/nonexistent-late", .destination = "/late", .late = true});
    runtime::RunOptions options;
    options.stdin_fd = -1;
    options.output = [](runtime::Stream, std::span<const char>) {};
    EXPECT_THROW(runtime::run_sandbox(spec, options), Error);
  }
}

}  // namespace
}  // namespace sandcell::test
