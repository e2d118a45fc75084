// `sandcell agent` end to end: scripted model servers (OpenAI-compatible and Anthropic) on
// loopback drive the real loop into real sandboxes of the python skill, through a failing first
// attempt to a final answer; then `sandcell logs` reads the transcript.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "e2e_support.hpp"
#include "fake_model_server.hpp"
#include "sandcell/agent_service/transcript.hpp"

namespace sandcell::test {
namespace {

using nlohmann::json;

// The tool result the loop fed back last (OpenAI: a "tool" message; Anthropic: a tool_result block).
json last_tool_result(const json& request) {
  const json& m = request["messages"].back();
  if (m["content"].is_string()) return json::parse(m["content"].get<std::string>(), nullptr, false);
  for (const json& block : m["content"])
    if (block["type"] == "tool_result") return json::parse(block["content"].get<std::string>(), nullptr, false);
  return nullptr;
}

std::string run_id_from(const std::string& err) {
  auto at = err.find("run ");
  return at == std::string::npos ? "" : err.substr(at + 4, err.find(' ', at + 4) - at - 4);
}

struct AgentE2E : ::testing::Test {
  std::string run_id;
  void TearDown() override {
    if (!run_id.empty()) std::filesystem::remove(agent_service::transcripts_dir(skill_store()) / (run_id + ".jsonl"));
  }
  std::vector<json> transcript() { return agent_service::read_transcript(skill_store(), run_id); }
};

TEST_F(AgentE2E, ScriptedOpenAiModel_FixesItsFailingCodeInARealSandboxAndAnswers) {
  FakeModelServer server("/v1/chat/completions", [](const json& body, size_t n) {
    if (n == 0)  // a typo: the sandbox must report it as an error the model can act on
      return ScriptedAnswer{200, openai_tool_call("call_1", "run_code", json{{"language", "python"}, {"code", "total = sum(range(1, 101))\nprnt(total)\n"}}.dump())};
    json fed_back = last_tool_result(body);
    if (n == 1) {
      EXPECT_NE(fed_back.value("status", ""), "ok") << fed_back;
      EXPECT_NE(fed_back.dump().find("NameError"), std::string::npos) << fed_back;
      return ScriptedAnswer{200, openai_tool_call("call_2", "run_code", json{{"language", "python"}, {"code", "total = sum(range(1, 101))\nprint(total)\n"}}.dump())};
    }
    EXPECT_EQ(fed_back.value("status", ""), "ok") << fed_back;
    EXPECT_EQ(fed_back.value("stdout", ""), "5050\n") << fed_back;
    return ScriptedAnswer{200, openai_text("The sum of 1..100 is 5050.")};
  });
  setenv("OPENAI_API_KEY", "sk-scripted", 1);
  Finished r = run_sandcell_with_store({"agent", "--base-url", server.base_url() + "/v1", "--model", "scripted-gpt",
                                        "--max-steps", "5", "Add the numbers from 1 to 100 with Python."});
  run_id = run_id_from(r.err);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "The sum of 1..100 is 5050.\n");
  EXPECT_NE(r.err.find("security summary"), std::string::npos) << r.err;
  EXPECT_EQ(server.requests().size(), 3u);

  std::vector<json> records = transcript();
  int results = 0;
  for (const json& rec : records) {
    if (rec["type"] == "tool_result") {
      ++results;
      EXPECT_TRUE(rec["result"]["report"].is_object()) << rec;  // the sandbox's own record
    }
  }
  EXPECT_EQ(results, 2);
  EXPECT_EQ(records.back()["type"], "end");
  EXPECT_EQ(records.back()["status"], "answered");
  EXPECT_EQ(records[records.size() - 2]["type"], "security_summary");
  EXPECT_EQ(records[records.size() - 2]["executions"], 2);
  std::cout << "transcript " << run_id << ":\n";
  for (const json& rec : records) std::cout << rec.dump() << "\n";

  Finished list = run_sandcell_with_store({"logs"});
  EXPECT_EQ(list.exit_code, 0) << list.err;
  EXPECT_NE(list.out.find(run_id), std::string::npos) << list.out;
  Finished shown = run_sandcell_with_store({"logs", run_id});
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_NE(shown.out.find("The sum of 1..100 is 5050."), std::string::npos) << shown.out;
}

TEST_F(AgentE2E, ScriptedAnthropicModel_WritesAFileThenRunsCodeThatReadsIt) {
  FakeModelServer server("/v1/messages", [](const json& body, size_t n) {
    if (n == 0) return ScriptedAnswer{200, anthropic_tool_use("toolu_1", "write_file", {{"path", "numbers.txt"}, {"content", "3\n4\n5\n"}})};
    if (n == 1) {
      EXPECT_NE(last_tool_result(body).dump().find("numbers.txt"), std::string::npos);
      return ScriptedAnswer{200, anthropic_tool_use("toolu_2", "run_code",
                                                    {{"language", "python"}, {"code", "print(sum(int(x) ** 2 for x in open('numbers.txt')))"}})};
    }
    json fed_back = last_tool_result(body);
    EXPECT_EQ(fed_back.value("stdout", ""), "50\n") << fed_back;
    return ScriptedAnswer{200, anthropic_text("The squares add up to 50.")};
  });
  setenv("ANTHROPIC_API_KEY", "sk-ant-scripted", 1);
  Finished r = run_sandcell_with_store({"agent", "--provider", "anthropic", "--base-url", server.base_url(), "--model",
                                        "scripted-claude", "Sum the squares of the numbers in a file."});
  run_id = run_id_from(r.err);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "The squares add up to 50.\n");
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(transcript().back()["status"], "answered");
}

TEST_F(AgentE2E, ModelWithoutToolCalling_HasItsFencedCodeRun) {
  FakeModelServer server("/v1/chat/completions", [](const json& body, size_t n) {
    EXPECT_FALSE(body.contains("tools"));
    if (n == 0) return ScriptedAnswer{200, openai_text("Let me compute it:\n```python\nimport math\nprint(math.factorial(10))\n```")};
    std::string fed_back = body["messages"].back()["content"];
    EXPECT_NE(fed_back.find("3628800"), std::string::npos) << fed_back;
    return ScriptedAnswer{200, openai_text("10! = 3628800")};
  });
  Finished r = run_sandcell_with_store({"agent", "--no-tools", "--base-url", server.base_url() + "/v1", "What is 10 factorial?"});
  run_id = run_id_from(r.err);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "10! = 3628800\n");
}

TEST_F(AgentE2E, BadProviderSettings_AreOneClearLine) {
  unsetenv("ANTHROPIC_API_KEY");
  Finished r = run_sandcell_with_store({"agent", "--provider", "anthropic", "x"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_EQ(r.err, "sandcell: ANTHROPIC_API_KEY is not set (the anthropic provider needs a key)\n");
  Finished logs = run_sandcell_with_store({"logs", "../etc/passwd"});
  EXPECT_EQ(logs.exit_code, 125);
}

}  // namespace
}  // namespace sandcell::test
