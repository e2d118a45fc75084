// SANDCELL_TIMELINE (sandcell/base/timeline.hpp): the marks of the supervisor, the sandbox's
// child and the program's exec land in the file, in the order they happened; the file's fd
// never reaches the program; without the variable nothing is written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

struct Mark {
  long pid = 0;
  std::string name;
  long long usec = 0;
};

std::vector<Mark> read_marks(const std::string& path) {
  std::vector<Mark> marks;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    Mark m;
    fields >> m.pid >> m.name >> m.usec;
    EXPECT_FALSE(fields.fail()) << "not 'PID NAME USEC': " << line;
    marks.push_back(m);
  }
  return marks;
}

// The program's open fds as it lists them itself (ls opens the directory: one more).
std::string program_fds(const std::vector<std::string>& env) {
  std::vector<std::string> argv{"/usr/bin/env"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.insert(argv.end(),
              {sandcell_binary(), "run", "--rootfs", test_rootfs(), "--", "ls", "/proc/self/fd"});
  CliRun run = run_program(argv);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  return run.out;
}

class Timeline : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("sc-timeline-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

TEST_F(Timeline, MarksEveryProcessOfARunInOrder) {
  const std::string path = file("marks");
  CliRun run = run_program({"/usr/bin/env", "SANDCELL_TIMELINE=" + path, sandcell_binary(), "run",
                            "--rootfs", test_rootfs(), "--", "true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, Mark> first;
  for (const Mark& m : read_marks(path)) first.emplace(m.name, m);
  // What must come before what (the supervisor and the child run side by side until "go").
  const std::vector<std::pair<std::string, std::string>> before{
      {"main", "clone"},           {"clone", "child"},       {"child", "child_ready"},
      {"child_ready", "child_go"}, {"go", "child_go"},       {"child_go", "child_confined"},
      {"child_confined", "exec"},  {"exec", "program_done"}, {"program_done", "recorded"},
      {"recorded", "torn_down"}};
  for (const auto& [earlier, later] : before) {
    ASSERT_TRUE(first.contains(earlier)) << "no mark " << earlier;
    ASSERT_TRUE(first.contains(later)) << "no mark " << later;
    EXPECT_LE(first[earlier].usec, first[later].usec) << earlier << " before " << later;
  }
  // Three processes: the supervisor, the child (the sandbox's init), the program it starts.
  EXPECT_EQ(first["main"].pid, first["clone"].pid);
  EXPECT_NE(first["child"].pid, first["main"].pid);
  EXPECT_EQ(first["child"].pid, first["child_confined"].pid);
  EXPECT_NE(first["exec"].pid, first["child"].pid);
}

TEST_F(Timeline, TheProgramNeverHasTheFile) {
  const std::string without = program_fds({});
  EXPECT_EQ(program_fds({"SANDCELL_TIMELINE=" + file("marks")}), without);
  EXPECT_TRUE(std::filesystem::exists(file("marks")));
}

TEST_F(Timeline, NothingIsWrittenWithoutTheVariable) {
  CliRun run = run_program({"/usr/bin/env", "-u", "SANDCELL_TIMELINE", sandcell_binary(), "run",
                            "--rootfs", test_rootfs(), "--", "true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  CliRun empty = run_program({"/usr/bin/env", "SANDCELL_TIMELINE=", sandcell_binary(), "run",
                              "--rootfs", test_rootfs(), "--", "true"});
  ASSERT_EQ(empty.exit_code, 0) << empty.err;
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace sandcell::test
