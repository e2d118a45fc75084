// run_sandbox() is a library call, and its callers have threads of their own (an agent's server
// runs sandboxes beside its workers). The clone copies only the calling thread, so nothing the
// child does may wait for another: glibc's set*id() wrappers did, for a thread that was still
// starting at the moment of the clone, and such a run hung until its wall timeout
// (child_steps.hpp, child_setresuid).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

TEST(ThreadedCaller, EveryRunEndsWhileOtherThreadsStartAndEnd) {
  std::atomic<bool> stop{false};
  // Threads starting all the time: a clone lands in the middle of one's start often enough.
  std::thread churn([&] {
    while (!stop) std::thread([] {}).join();
  });
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/true"};
  spec.limits.wall_s = 5;  // a hung run ends as timeout_wall
  runtime::RunOptions options;
  options.stdin_fd = -1;
  options.output = [](runtime::Stream, std::span<const char>) {};
  for (int i = 0; i < 150; ++i) {
    runtime::Result result = runtime::run_sandbox(spec, options);
    ASSERT_EQ(result.status, runtime::Status::Ok)
        << "run " << i << ": " << runtime::to_string(result.status) << " " << result.error;
  }
  stop = true;
  churn.join();
}

}  // namespace
}  // namespace sandcell::test
