// The contract the agent layer (MCP, HTTP, LLM loop) relies on: --request-json, --stream,
// skills list --json, and bad input answered with one clear error and nothing left behind.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandcell/agent/code_result.hpp"
#include "skills_support.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Contract = Skills;

TEST_F(Contract, RequestJson_RunsWithFilesStdinAndGet) {
  json req = {{"language", "python3"},
              {"code", "import sys\nd = open('/workspace/in.txt').read()\nopen('/workspace/out/r.txt','w').write(d.upper())\n"
                       "print(sys.stdin.read().strip(), d.strip())\n"},
              {"timeout", 20},
              {"memory", "256m"},
              {"stdin", "from-stdin"},
              {"files", json::array({{{"path", "in.txt"}, {"content_base64", agent::base64_encode("abc\n")}}})},
              {"get", json::array({"in.txt"})}};
  auto r = request(req);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line of JSON";
  EXPECT_EQ(r.record["stdout"], "from-stdin abc\n");
  EXPECT_EQ(r.record["skill"], "python");
  EXPECT_EQ(r.record["report"]["limits"]["memory_bytes"], 256 << 20);
  ASSERT_EQ(r.record["artifacts"].size(), 1u);
  EXPECT_EQ(r.record["artifacts"][0]["mime"], "text/plain");
  EXPECT_EQ(agent::base64_decode(r.record["artifacts"][0]["base64"].get<std::string>(), "a"), "ABC\n");
  EXPECT_EQ(agent::base64_decode(r.record["files"][0]["base64"].get<std::string>(), "f"), "abc\n");
}

TEST_F(Contract, RequestJson_FailedProgramStillExitsZero) {
  auto r = request({{"skill", "c"}, {"code", "int main(void) { return 3; }\n"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.record["exit_code"], 3);
  EXPECT_EQ(r.record["status"], "exit_nonzero");
  EXPECT_EQ(r.record["error"]["class"], "nonzero_exit");
}

TEST_F(Contract, Stream_EventsThenEnd) {
  auto r = request({{"skill", "bash"}, {"code", "echo one; echo err >&2; sleep 0.2; echo 'two ü'\n"}}, {"--stream"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string out, err;
  json end;
  for (std::string line; std::getline(lines, line);) {
    json e = json::parse(line);
    if (e["type"] == "stdout") out += e["data"].get<std::string>();
    else if (e["type"] == "stderr") err += e["data"].get<std::string>();
    else if (e["type"] == "end") end = e["result"];
  }
  EXPECT_EQ(out, "one\ntwo ü\n");
  EXPECT_EQ(err, "err\n");
  ASSERT_TRUE(end.is_object()) << r.out;
  EXPECT_EQ(end["status"], "ok");
  EXPECT_EQ(end["stdout"], "one\ntwo ü\n");
}

// `FROM debian:bookworm-slim` with no registry: the skill_images fixture debootstraps the base
// from the Debian mirror (`sandcell bootstrap`, the one network source this project's machines
// have), then every skill's build runs apt-get inside RUN steps. Checked here on what the fixture
// made rather than by a second bootstrap (three minutes of CI for the same path).
TEST_F(Contract, TheBaseIsBootstrappedDebianAndTheSkillsPackagesCameFromAptGetInRun) {
  auto base = run_sandcell({"--root", test_store(), "run", "debian:bookworm-slim", "cat", "/etc/debian_version"});
  ASSERT_EQ(base.exit_code, 0) << base.err;
  EXPECT_EQ(base.out.rfind("12.", 0), 0u) << base.out;
  auto python = run_sandcell({"--root", test_store(), "run", "sandcell/skill-python:latest", "dpkg-query", "-W",
                              "-f=${Status}", "python3"});
  ASSERT_EQ(python.exit_code, 0) << python.err;
  EXPECT_EQ(python.out, "install ok installed");
  // apt-get's lists are removed in the same RUN step, so no layer carries them.
  auto lists = run_sandcell({"--root", test_store(), "run", "sandcell/skill-python:latest", "sh", "-c",
                             "ls /var/lib/apt/lists | grep -c _Packages || true"});
  EXPECT_EQ(lists.out, "0\n") << lists.err;
}

TEST_F(Contract, SkillsListJsonNamesEverySkillBuilt) {
  auto r = run_sandcell({"--root", test_store(), "skills", "list", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  for (const auto& s : r.record) {
    names.push_back(s["name"]);
    EXPECT_TRUE(s["built"].get<bool>()) << s;
    EXPECT_TRUE(s["aliases"].is_array());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"bash", "c", "cpp", "node", "python"}));
}

TEST_F(Contract, BadRequestsAnswerWithOneErrorAndLeaveNothing) {
  auto check = [&](const json& req, const std::string& says) {
    auto r = request(req);
    EXPECT_EQ(r.exit_code, 125) << req;
    ASSERT_TRUE(r.record.is_object()) << r.out;
    EXPECT_EQ(r.record["error"]["class"], "sandcell");
    EXPECT_NE(r.record["error"]["message"].get<std::string>().find(says), std::string::npos) << r.out;
    EXPECT_EQ(r.err.rfind("sandcell: ", 0), 0u) << r.err;
  };
  check({{"skill", "cobol"}, {"code", "x"}}, "unknown skill 'cobol'");
  check({{"skill", "python"}, {"code", "  \n"}}, "empty");
  check({{"skill", "python"}, {"code", std::string("print(1)\0\x01\x02", 11)}}, "binary");
  check({{"skill", "python"}, {"code", std::string(2 << 20, 'x')}}, "limit");
  check({{"skill", "python"}, {"code", "print(1)"}, {"timout", 3}}, "unknown field \"timout\"");
  check({{"skill", "python"}, {"code", "print(1)"}, {"memory", "lots"}}, "--memory");
  check({{"skill", "python"}, {"code", "print(1)"}, {"files", json::array({{{"path", "../x"}, {"content_base64", ""}}})}}, "..");
  check({{"skill", "bash"}, {"code", "true"}, {"packages", json::array({"x"})}}, "no package installer");
  check({{"skill", "python"}, {"code", "print(1)"}, {"packages", json::array({"--index-url=http://evil"})}}, "package name");
  // Used to overflow the stack of sandcell code in std::regex (SIGSEGV, no answer).
  check({{"skill", "python"}, {"code", "print(1)"}, {"packages", json::array({std::string(1 << 20, 'a')})}}, "too long");
  auto garbage = run_sandcell({"--root", test_store(), "code", "--request-json", "-"}, "\x89PNG\x01\x02not json");
  EXPECT_EQ(garbage.exit_code, 125);
  EXPECT_EQ(garbage.record["error"]["class"], "sandcell");
  // Nothing was made for any of them: no scratch workspace, no session.
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(test_store() + "/code-runs", ec)) ADD_FAILURE() << "left behind: " << e.path();
  EXPECT_FALSE(fs::exists(sessions()));
}

TEST_F(Contract, SkillNotBuiltSaysHowToBuildIt) {
  TempTree empty_store("sc-empty-store");
  auto r = run_sandcell({"--root", empty_store.path.string(), "code", "--skill", "node", "-"}, "console.log(1)\n");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("skill 'node' is not built: run `sandcell skills build node`"), std::string::npos) << r.err;
  auto bad_file = run_sandcell({"--root", test_store(), "code", "--skill", "python", "/no/such/file.py"});
  EXPECT_EQ(bad_file.exit_code, 125);
  EXPECT_NE(bad_file.err.find("/no/such/file.py"), std::string::npos) << bad_file.err;
}

TEST_F(Contract, HugeAndOddInputFilesAreRefusedBeforeAnythingRuns) {
  fs::path big = dir_.path / "big.bin";
  { std::ofstream(big).put('x'); }
  fs::resize_file(big, (64 << 20) + 1);  // sparse: costs no disk
  auto r = run_sandcell({"--root", test_store(), "code", "--skill", "bash", "--put", big.string() + ":big.bin", "-"}, "true\n");
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("the limit is 67108864"), std::string::npos) << r.err;
  auto dir = run_sandcell({"--root", test_store(), "code", "--skill", "bash", "--put", dir_.path.string() + ":d", "-"}, "true\n");
  EXPECT_EQ(dir.exit_code, 125);
  EXPECT_NE(dir.err.find("not a regular file"), std::string::npos) << dir.err;
  fs::path small = dir_.path / "small.txt";
  std::ofstream(small) << "x\n";
  auto escape = run_sandcell({"--root", test_store(), "code", "--skill", "bash", "--put", small.string() + ":/etc/x", "-"}, "true\n");
  EXPECT_EQ(escape.exit_code, 125);
  EXPECT_NE(escape.err.find("outside /workspace"), std::string::npos) << escape.err;
}

TEST_F(Contract, PlainModePassesOutputThroughWithTheProgramsExitCode) {
  auto r = run_sandcell({"--root", test_store(), "code", "--skill", "py", "-"},
                        "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(4)\n");
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_NE(r.err.find("err\n"), std::string::npos);
  EXPECT_NE(r.err.find("sandcell: nonzero_exit"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandcell::test
