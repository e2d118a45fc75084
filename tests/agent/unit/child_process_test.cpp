// finish_child's LeaveExit: a warm-pool member answers, closes its output and tears its sandbox
// down; the caller has the answer without waiting for that, and the exit is reaped elsewhere.
#include "executor/child_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <optional>
#include <string>

namespace sandcell::agent_service {
namespace {

bool exited(pid_t pid) {
  siginfo_t info{};
  return waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0;
}

// Answers, ends its output, then "tears down" until killed: it never exits by itself.
const std::vector<std::string> kAnswersThenLingers = {"/bin/sh", "-c",
                                                       "echo '{\"status\":\"ok\"}'; exec >&- 2>&-; exec sleep 1000"};

TEST(FinishChild, AnAnsweredChildIsLeftToReapWhileItStillRuns) {
  std::string out;
  std::optional<StartedChild> left;
  ChildOutcome outcome =
      finish_child(start_child(kAnswersThenLingers), "", [&](std::string_view chunk) { out.append(chunk); }, {},
                   {.answered = [&] { return out == "{\"status\":\"ok\"}\n"; },
                    .reap = [&](StartedChild child) { left = std::move(child); }});
  EXPECT_EQ(out, "{\"status\":\"ok\"}\n");
  EXPECT_EQ(outcome.exit_code, 0);
  ASSERT_TRUE(left.has_value());
  EXPECT_FALSE(exited(left->pid)) << "finish_child waited for the exit it was to leave";
  kill(left->pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(left->pid, &status, 0), left->pid);
  EXPECT_TRUE(WIFSIGNALED(status));
}

TEST(FinishChild, WithoutAWholeAnswerItWaitsForTheExitCode) {
  std::optional<StartedChild> left;
  ChildOutcome outcome = finish_child(start_child({"/bin/sh", "-c", "echo '{\"trunc'; exit 7"}), "",
                                      [](std::string_view) {}, {},
                                      {.answered = [] { return false; },
                                       .reap = [&](StartedChild child) { left = std::move(child); }});
  EXPECT_EQ(outcome.exit_code, 7);
  EXPECT_FALSE(left.has_value());
}

}  // namespace
}  // namespace sandcell::agent_service
