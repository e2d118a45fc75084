// Cancelling a run through the real executor: `sandcell code` is interrupted, its sandbox and
// everything in it are killed, and the result says so. As a subreaper this test would inherit
// any process of the run that outlived its supervisor.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <stop_token>
#include <string>

#include "e2e_support.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::test {
namespace {

using agent_service::Json;

TEST(CancelE2E, StoppingARunKillsItsSandboxAndReportsTheInterruption) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  auto executor = agent_service::make_subprocess_executor({.sandcell_bin = sandcell_bin(), .root = skill_store()});
  std::stop_source stop;
  std::string out;
  Json request{{"language", "python"},
               {"code", "import time\nprint('started', flush=True)\ntime.sleep(600)\nprint('not reached')\n"},
               {"timeout", 900}};
  Json result = executor->run_streaming(request, [&](std::string_view stream, std::string_view data) {
    if (stream == "stdout") out.append(data);
    if (out.find("started\n") != std::string::npos) stop.request_stop();
  }, stop.get_token());
  EXPECT_TRUE(stop.stop_requested()) << result.dump();
  EXPECT_EQ(out, "started\n");  // and never "not reached"
  EXPECT_NE(result.value("status", ""), "ok") << result.dump();
  EXPECT_NE(result.dump().find("interrupted"), std::string::npos) << result.dump();
  EXPECT_TRUE(children_of(getpid()).empty()) << "a process of the cancelled run outlived it";
}

}  // namespace
}  // namespace sandcell::test
