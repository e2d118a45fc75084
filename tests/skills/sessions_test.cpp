// Sessions keep /workspace (and python variables) across calls, stay apart, expire.
#include <filesystem>

#include "skills_support.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
using Sessions = Skills;

TEST_F(Sessions, KeepAFileAndPythonVariablesAcrossCalls) {
  auto first = code("python",
                    "import numpy as np\n"
                    "counter = 41\n"
                    "arr = np.arange(5)\n"
                    "def double(v):\n    return 2 * v\n"
                    "log = open('/workspace/notes.txt', 'w')\n"
                    "log.write('kept\\n'); log.flush()\n",
                    {"--session", "s1"});
  ASSERT_EQ(first.exit_code, 0) << first.err << first.out;
  EXPECT_EQ(first.record["lost_variables"], nlohmann::json::array({"log"}));  // an open file is not kept
  auto second = code("python",
                     "counter += 1\n"
                     "print(counter, double(arr.sum()), np.__name__, open('/workspace/notes.txt').read().strip())\n",
                     {"--session", "s1"});
  ASSERT_EQ(second.exit_code, 0) << second.err << second.out;
  EXPECT_EQ(second.record["stdout"], "42 20 numpy kept\n");
  EXPECT_EQ(second.record["session"], "s1");
}

TEST_F(Sessions, VariablesSurviveAnExceptionAndErrorsStillClassify) {
  auto first = code("python", "a = 5\nraise ValueError('bad value')\n", {"--session", "e"});
  EXPECT_EQ(error_class(first), "runtime_exception") << first.out;
  EXPECT_EQ(first.record["error"]["exception"], "ValueError");
  EXPECT_EQ(first.record["error"]["line"], 2);
  auto second = code("python", "print(a)\n", {"--session", "e"});
  EXPECT_EQ(second.record["stdout"], "5\n") << second.out;
}

TEST_F(Sessions, TwoSessionsStayApart) {
  ASSERT_EQ(code("bash", "echo a > /workspace/mine.txt\n", {"--session", "a"}).exit_code, 0);
  ASSERT_EQ(code("python", "x = 'a'\n", {"--session", "a"}).exit_code, 0);
  auto b = code("bash", "ls /workspace; cat /workspace/mine.txt\n", {"--session", "b"});
  EXPECT_NE(b.exit_code, 0);
  EXPECT_EQ(b.record["stdout"].get<std::string>().find("mine.txt"), std::string::npos);
  auto bx = code("python", "print(x)\n", {"--session", "b"});
  EXPECT_EQ(error_class(bx), "runtime_exception");
  EXPECT_EQ(bx.record["error"]["exception"], "NameError");
  auto a = code("bash", "cat /workspace/mine.txt\n", {"--session", "a"});
  EXPECT_EQ(a.record["stdout"], "a\n");
}

TEST_F(Sessions, ListRemoveAndExpire) {
  ASSERT_EQ(code("bash", "true\n", {"--session", "keep"}).exit_code, 0);
  ASSERT_EQ(code("bash", "true\n", {"--session", "old"}).exit_code, 0);
  ASSERT_EQ(code("bash", "true\n", {"--session", "gone"}).exit_code, 0);
  auto ls = run_sandcell({"--root", test_store(), "sessions", "--sessions-dir", sessions(), "list", "--json"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  ASSERT_EQ(ls.record.size(), 3u);
  EXPECT_EQ(ls.record[0]["id"], "gone");
  EXPECT_EQ(ls.record[0]["skill"], "bash");
  auto rm = run_sandcell({"--root", test_store(), "sessions", "--sessions-dir", sessions(), "rm", "gone"});
  EXPECT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_FALSE(fs::exists(sessions() + "/gone"));
  EXPECT_EQ(run_sandcell({"--root", test_store(), "sessions", "--sessions-dir", sessions(), "rm", "gone"}).exit_code, 125);
  // Idle for two hours (the default TTL is one): the next sweep removes it, not the fresh one.
  auto two_hours_ago = fs::file_time_type::clock::now() - std::chrono::hours(2);
  fs::last_write_time(sessions() + "/old/session.json", two_hours_ago);
  fs::last_write_time(sessions() + "/old", two_hours_ago);
  auto after = run_sandcell({"--root", test_store(), "sessions", "--sessions-dir", sessions(), "list", "--json"});
  ASSERT_EQ(after.record.size(), 1u) << after.out;
  EXPECT_EQ(after.record[0]["id"], "keep");
  EXPECT_FALSE(fs::exists(sessions() + "/old"));
}

}  // namespace
}  // namespace sandcell::test
