// Bad input: one clear line on stderr, exit 125 (126/127 for the command), nothing left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "oci_bundle.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// Directories of runs ("<pid>-<hex>"), not the shared scratch mount point or the userns pool.
size_t run_state_entries() {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fs::directory_iterator("/run/sandcell", ec); !ec && it != fs::directory_iterator();
       ++it)
    n += it->path().filename().string().find('-') != std::string::npos;
  return n;
}

void expect_one_line_error(const CliRun& r, int code, const std::string& mentions) {
  EXPECT_EQ(r.exit_code, code) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(mentions), std::string::npos) << r.err;
  EXPECT_EQ(r.err.rfind("sandcell: ", 0), 0u) << r.err;
}

TEST(BadInput, MissingRootfs) {
  auto r = run_sandcell({"run", "--rootfs", "/nonexistent/rootfs", "--", "/bin/true"});
  expect_one_line_error(r, 125, "/nonexistent/rootfs");
  EXPECT_EQ(run_state_entries(), 0u);
}

TEST(BadInput, BadSize) {
  auto r = run_sandcell({"run", "--rootfs", test_rootfs(), "--memory", "lots", "--", "/bin/true"});
  expect_one_line_error(r, 125, "--memory");
}

// Wherever it stands, the unknown option is what the line names: not a word after it that a
// guess about its value turned into an "unexpected argument" (`/bin/true`, `--`).
TEST(BadInput, UnknownOption) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--rootfs", test_rootfs(), "--frobnicate", "--",
                                 "/bin/true"},
        {"run", "--frobnicate", "--rootfs", test_rootfs(), "--", "/bin/true"},
        {"run", "--rootfs", test_rootfs(), "--frobnicate", "/bin/true"}}) {
    auto r = run_sandcell(args);
    expect_one_line_error(r, 125, "not expected: --frobnicate (");
  }
}

// CLI11 alone says "A subcommand is required", naming no word, and sandcell-oci added a second
// line; the word that is no command is what the line names, at any depth.
TEST(BadInput, UnknownCommand) {
  expect_one_line_error(run_sandcell({"frobnicate", "--rootfs", test_rootfs()}), 125,
                        "unknown command 'frobnicate' (see sandcell --help)");
  expect_one_line_error(run_sandcell({"--root", "/nonexistent", "skills", "frobnicate"}), 125,
                        "unknown command 'skills frobnicate' (see sandcell skills --help)");
  CliRun oci = run_program({oci_binary(), "--root", "/nonexistent", "frobnicate"});
  EXPECT_EQ(oci.exit_code, 125);
  EXPECT_EQ(oci.err, "sandcell-oci: unknown command 'frobnicate' (see sandcell-oci --help)\n");
}

// Without `--`, the program's words start at the first word that is not an option or an
// option's value; a flag (--json) takes no value, so the word after it is still an option.
TEST(BadInput, FlagsDoNotSwallowTheNextWord) {
  auto r = run_sandcell({"run", "--json", "--rootfs", test_rootfs(), "/bin/sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.out.find("\"exit_nonzero\""), std::string::npos) << r.out;
}

TEST(BadInput, CommandMissingInRootfsIs127) {
  auto r = run_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/no-such-program"});
  expect_one_line_error(r, 127, "no-such-program");
  auto json = run_in_sandbox({}, {"no-such-program"});
  EXPECT_EQ(json.exit_code, 127);
  EXPECT_EQ(json.record["status"], "runtime_error");
  EXPECT_EQ(run_state_entries(), 0u);
  EXPECT_TRUE(sandcell_cgroups().empty());
}

// The profile is read after the clone, while the child mounts (Spec::seccomp):
// a bad one must still be one line and exit 125, with the child killed and nothing left.
TEST(BadInput, BadSeccompProfileAfterTheCloneLeavesNothing) {
  const std::string bad_json = fs::temp_directory_path() / "sandcell-bad-profile.json";
  {
    std::ofstream(bad_json) << "{\"defaultAction\": ";  // cut short
  }
  for (const std::string& profile : {std::string("/nonexistent/profile.json"), bad_json}) {
    auto r =
        run_sandcell({"run", "--rootfs", test_rootfs(), "--seccomp", profile, "--", "/bin/true"});
    expect_one_line_error(r, 125, profile);
    auto json = run_sandcell(
        {"run", "--rootfs", test_rootfs(), "--seccomp", profile, "--json", "--", "/bin/true"});
    EXPECT_EQ(json.exit_code, 125);
    EXPECT_TRUE(json.out.empty()) << "an input error prints no record: " << json.out;
    EXPECT_EQ(run_state_entries(), 0u);
    EXPECT_TRUE(sandcell_cgroups().empty());
  }
  fs::remove(bad_json);
}

TEST(BadInput, NotExecutableIs126) {
  auto r = run_in_sandbox({}, {"/etc/passwd"});
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_EQ(r.record["status"], "runtime_error");
}

// nobody has no /etc/subuid range: rootless with only its own id, which runs as uid 0 and
// refuses any other user with the fix in the message.
TEST(BadInput, NonRootCallerWithoutSubIdsRunsAsItsOnlyIdAndRefusesOthers) {
  auto ok = run_sandcell({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                          sandcell_binary(), "run", "--rootfs", test_rootfs(), "--",
                          "/bin/sc-probe", "ids"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.out, "uid 0 0 0 gid 0 0 0\n");
  auto r = run_sandcell({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                         sandcell_binary(), "run", "--rootfs", test_rootfs(), "--user", "1000",
                         "--", "/bin/true"});
  expect_one_line_error(r, 125, "/etc/subuid");
  std::error_code ec;
  std::filesystem::remove("/tmp/sandcell-65534", ec);  // its run state root, empty after the runs
}

TEST(BadInput, BadMountAndUserSpecs) {
  expect_one_line_error(
      run_sandcell({"run", "--rootfs", test_rootfs(), "--mount", "/tmp", "--", "/bin/true"}), 125,
      "--mount");
  expect_one_line_error(
      run_sandcell({"run", "--rootfs", test_rootfs(), "--user", "alice", "--", "/bin/true"}), 125,
      "--user");
  expect_one_line_error(
      run_sandcell({"run", "--rootfs", test_rootfs(), "--cap-add", "CAP_NOPE", "--", "/bin/true"}),
      125, "CAP_NOPE");
  expect_one_line_error(
      run_sandcell({"run", "--rootfs", test_rootfs(), "--workdir", "relative", "--", "/bin/true"}),
      125, "working directory");
  expect_one_line_error(
      run_sandcell({"run", "--rootfs", test_rootfs(), "--net", "bogus", "--", "/bin/true"}), 125,
      "--net");
}

TEST(BadInput, HelpTeachesAndExitsZero) {
  auto r = run_sandcell({"run", "--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* text : {"--memory", "--timeout", "--report", "Exit code", "[512m]"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text;
}

// Usage lines name the program as the user types it, whichever executable printed them.
TEST(BadInput, HelpUsageLinesNameSandcell) {
  EXPECT_NE(run_sandcell({"--help"}).out.find("Usage: sandcell [OPTIONS] SUBCOMMAND"),
            std::string::npos);
  EXPECT_NE(run_sandcell({"serve", "--help"}).out.find("Usage: sandcell serve [OPTIONS]"),
            std::string::npos);
  EXPECT_NE(
      run_sandcell({"skills", "list", "--help"}).out.find("Usage: sandcell skills list [OPTIONS]"),
      std::string::npos);
}

}  // namespace
}  // namespace sandcell::test
