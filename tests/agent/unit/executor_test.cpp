// Which executable the real executor spawns when nobody names one.
#include "sandcell/agent_service/executor.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace sandcell::agent_service {
namespace {

namespace fs = std::filesystem;

struct ScratchDir {
  fs::path path;
  ScratchDir() {
    char tmpl[] = "/tmp/sandcell-executor-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~ScratchDir() { fs::remove_all(path); }
};

// `code` lives in sandcell-images: executions go there directly, not through the lean sandcell
// (one exec and a static glibc start fewer per execution); an installation without it (or a
// build tree that names another layout) still gets `sandcell`.
TEST(SubprocessExecutor, SpawnsSandcellImagesWhenItIsInstalledBesideUs) {
  ScratchDir dir;
  EXPECT_EQ(sandcell_bin_in(dir.path), (dir.path / "sandcell").string());
  const fs::path images = dir.path / "sandcell-images";
  std::ofstream(images) << "#!/bin/sh\n";
  chmod(images.c_str(), 0644);
  EXPECT_EQ(sandcell_bin_in(dir.path), (dir.path / "sandcell").string()) << "not executable";
  chmod(images.c_str(), 0755);
  EXPECT_EQ(sandcell_bin_in(dir.path), images.string());
}

TEST(SubprocessExecutor, SandcellBinFromTheEnvironmentWins) {
  setenv("SANDCELL_BIN", "/opt/x/sandcell", 1);
  EXPECT_EQ(default_sandcell_bin(), "/opt/x/sandcell");
  unsetenv("SANDCELL_BIN");
}

// A session ID is a positional argument of `sandcell sessions rm`: after "--", so that an ID
// like "-h" can never be read as an option (it printed the help, exited 0 and was reported as
// removed while the session stayed).
TEST(SubprocessExecutor, RemoveSessionPassesTheIdAfterDoubleDash) {
  ScratchDir dir;
  const fs::path fake = dir.path / "sandcell";
  const fs::path args = dir.path / "args";
  std::ofstream(fake) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << args.string() << "\n";
  chmod(fake.c_str(), 0755);
  auto executor = make_subprocess_executor({.sandcell_bin = fake.string(), .root = ""});
  executor->remove_session("-h");
  std::ifstream in(args);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "sessions\nrm\n--\n-h\n");
}

// `serve`, `mcp` and `agent` pass the operator's ceilings to every `sandcell code` they start,
// where no request can lift them.
TEST(SubprocessExecutor, RunsPassTheOperatorCeilings) {
  ScratchDir dir;
  const fs::path fake = dir.path / "sandcell";
  const fs::path args = dir.path / "args";
  std::ofstream(fake) << "#!/bin/sh\nprintf '%s\\n' \"$@\" > " << args.string() << "\necho '{\"status\":\"ok\"}'\n";
  chmod(fake.c_str(), 0755);
  auto executor = make_subprocess_executor(
      {.sandcell_bin = fake.string(), .root = "", .code_flags = {"--max-memory", "2g", "--allowed-net", "none"}});
  EXPECT_EQ(executor->run(Json{{"code", "x"}})["status"], "ok");
  std::ifstream in(args);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "code\n--request-json\n-\n--max-memory\n2g\n--allowed-net\nnone\n");
}

// A runner that exits without reading its request (here: a request larger than a pipe holds)
// is a runner that stopped reading: the executor's write fails with EPIPE instead of SIGPIPE
// ending the process that embeds it (this test's had SIGPIPE at its default).
TEST(SubprocessExecutor, ARunnerThatExitsBeforeReadingItsRequestIsNoSigpipe) {
  ScratchDir dir;
  const fs::path fake = dir.path / "sandcell";
  std::ofstream(fake) << "#!/bin/sh\necho '{\"status\":\"ok\"}'\n";
  chmod(fake.c_str(), 0755);
  auto executor = make_subprocess_executor({.sandcell_bin = fake.string(), .root = ""});
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(executor->run(Json{{"code", std::string(1 << 20, 'x')}})["status"], "ok");
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE)) << "none left pending for later";
}

// The operator's --disk is the bound of a request that names none; a request's own "disk" is
// kept (`sandcell code` checks it against --max-disk), and so is one the server did not set.
TEST(SubprocessExecutor, ARequestWithoutDiskGetsTheOperatorsDefault) {
  ScratchDir dir;
  const fs::path fake = dir.path / "sandcell";
  const fs::path request = dir.path / "request";
  std::ofstream(fake) << "#!/bin/sh\ncat > " << request.string() << "\necho '{\"status\":\"ok\"}'\n";
  chmod(fake.c_str(), 0755);
  auto sent = [&](const SubprocessExecutorOptions& options, const Json& r) {
    make_subprocess_executor(options)->run(r);
    std::ifstream in(request);
    return Json::parse(in);
  };
  const SubprocessExecutorOptions with_default{.sandcell_bin = fake.string(), .default_disk = "64m"};
  EXPECT_EQ(sent(with_default, Json{{"code", "x"}})["disk"], "64m");
  EXPECT_EQ(sent(with_default, Json{{"code", "x"}, {"disk", nullptr}})["disk"], "64m");
  EXPECT_EQ(sent(with_default, Json{{"code", "x"}, {"disk", "16m"}})["disk"], "16m");
  EXPECT_FALSE(sent({.sandcell_bin = fake.string()}, Json{{"code", "x"}}).contains("disk"));
}

}  // namespace
}  // namespace sandcell::agent_service
