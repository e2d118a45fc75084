// The agent loop driven by a scripted OpenAI-compatible server, with a fake executor: tool calls,
// failures fed back, invalid arguments, budgets, fenced code blocks, transcripts.
#include <gtest/gtest.h>

#include "agent/code_blocks.hpp"
#include "agent/compact_result.hpp"
#include "fake_executor.hpp"
#include "fake_model_server.hpp"
#include "sandcell/agent_service/agent.hpp"
#include "temp_tree.hpp"

namespace sandcell::agent_service {
namespace {

using test::code_result;
using test::FakeExecutor;
using test::FakeModelServer;
using test::ScriptedAnswer;

struct LoopFixture : ::testing::Test {
  test::TempTree root;
  FakeExecutor executor;
  std::unique_ptr<Transcript> transcript = std::make_unique<Transcript>(root.path, new_run_id());

  AgentOutcome run(FakeModelServer& server, AgentOptions options) {
    ProviderConfig c{.provider = "openai", .model = "scripted", .base_url = server.base_url() + "/v1"};
    c.retry.max_attempts = 1;
    auto model = make_chat_model(c);
    return run_agent(*model, executor, *transcript, options);
  }
  std::vector<Json> records() { return read_transcript(root.path, transcript->run_id()); }
  std::vector<Json> records_of(const std::string& type) {
    std::vector<Json> out;
    for (const Json& r : records())
      if (r["type"] == type) out.push_back(r);
    return out;
  }
};

TEST_F(LoopFixture, FailingCodeIsFedBackAndTheFixedCodeLeadsToTheAnswer) {
  executor.answer = [](const Json& req) {
    std::string code = req["code"];
    if (code.find("prnt") != std::string::npos)
      return code_result("exit_nonzero", "", "NameError: name 'prnt' is not defined",
                         {{"class", "runtime_error"}, {"message", "NameError: name 'prnt' is not defined"}, {"line", 1}});
    return code_result("ok", "42\n");
  };
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t n) {
    if (n == 0) return ScriptedAnswer{200, test::openai_tool_call("c1", "run_code", R"j({"language":"python","code":"prnt(6*7)"})j")};
    if (n == 1) {
      EXPECT_NE(test::last_message_content(body).find("runtime_error"), std::string::npos);
      return ScriptedAnswer{200, test::openai_tool_call("c2", "run_code", R"j({"language":"python","code":"print(6*7)"})j")};
    }
    EXPECT_NE(test::last_message_content(body).find("42"), std::string::npos);
    return ScriptedAnswer{200, test::openai_text("The answer is 42.")};
  });
  AgentOutcome outcome = run(server, {.task = "compute 6*7"});
  EXPECT_EQ(outcome.status, "answered");
  EXPECT_EQ(outcome.answer, "The answer is 42.");
  EXPECT_EQ(outcome.steps, 3);
  EXPECT_EQ(outcome.executions, 2);
  ASSERT_EQ(executor.requests.size(), 2u);
  // One session for the whole run, removed at the end.
  EXPECT_EQ(executor.requests[0]["session"], executor.requests[1]["session"]);
  EXPECT_EQ(executor.removed_sessions, std::vector<std::string>{executor.requests[0]["session"].get<std::string>()});
  EXPECT_EQ(records_of("tool_result").size(), 2u);
  EXPECT_EQ(records_of("final").at(0)["answer"], "The answer is 42.");
  EXPECT_EQ(records_of("end").at(0)["status"], "answered");
}

TEST_F(LoopFixture, InvalidToolArgumentsAreAnErrorTheModelSees) {
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t n) {
    if (n == 0) return ScriptedAnswer{200, test::openai_tool_call("c1", "run_code", R"j({"code": "print(1)")j")};
    EXPECT_NE(test::last_message_content(body).find("not a valid JSON object"), std::string::npos);
    return ScriptedAnswer{200, test::openai_text("gave up")};
  });
  AgentOutcome outcome = run(server, {.task = "x"});
  EXPECT_EQ(outcome.status, "answered");
  EXPECT_TRUE(executor.requests.empty());
  EXPECT_EQ(records_of("tool_result").at(0)["is_error"], true);
}

TEST_F(LoopFixture, UnknownToolAndMissingArgumentAreErrors) {
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t n) {
    if (n == 0) return ScriptedAnswer{200, test::openai_tool_call("c1", "rm_rf", "{}")};
    if (n == 1) {
      EXPECT_NE(test::last_message_content(body).find("unknown tool"), std::string::npos);
      return ScriptedAnswer{200, test::openai_tool_call("c2", "run_code", R"({"language":"python"})")};
    }
    EXPECT_NE(test::last_message_content(body).find("'code'"), std::string::npos);
    return ScriptedAnswer{200, test::openai_text("ok")};
  });
  EXPECT_EQ(run(server, {.task = "x"}).status, "answered");
}

TEST_F(LoopFixture, StopsAtMaxSteps) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t n) {
    return ScriptedAnswer{200, test::openai_tool_call("c" + std::to_string(n), "run_code", R"j({"language":"python","code":"print(1)"})j")};
  });
  AgentOutcome outcome = run(server, {.task = "loop forever", .max_steps = 3});
  EXPECT_EQ(outcome.status, "max_steps");
  EXPECT_EQ(server.requests().size(), 3u);
  EXPECT_EQ(records_of("end").at(0)["status"], "max_steps");
}

TEST_F(LoopFixture, ProviderErrorEndsTheRunWithItsMessage) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{401, {{"error", {{"message", "bad key"}}}}};
  });
  AgentOutcome outcome = run(server, {.task = "x"});
  EXPECT_EQ(outcome.status, "model_error");
  EXPECT_NE(outcome.error.find("bad key"), std::string::npos);
  EXPECT_EQ(records_of("model_error").size(), 1u);
}

TEST_F(LoopFixture, WithoutToolCalling_FencedBlocksRunAndTheirOutputGoesBack) {
  executor.answer = [](const Json&) { return code_result("ok", "hello\n"); };
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t n) {
    EXPECT_FALSE(body.contains("tools"));
    if (n == 0) return ScriptedAnswer{200, test::openai_text("Try:\n```python\nprint('hello')\n```\n")};
    EXPECT_NE(test::last_message_content(body).find("hello"), std::string::npos);
    return ScriptedAnswer{200, test::openai_text("It printed hello.")};
  });
  AgentOutcome outcome = run(server, {.task = "say hello", .use_tools = false});
  EXPECT_EQ(outcome.status, "answered");
  ASSERT_EQ(executor.requests.size(), 1u);
  EXPECT_EQ(executor.requests[0]["language"], "python");
  EXPECT_EQ(executor.requests[0]["code"], "print('hello')\n");
}

TEST_F(LoopFixture, ServerRejectingTools_FallsBackToFencedBlocks) {
  executor.answer = [](const Json&) { return code_result("ok", "3\n"); };
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t) {
    if (body.contains("tools")) return ScriptedAnswer{400, {{"error", {{"message", "tools are not supported by this model"}}}}};
    if (body["messages"].size() == 2) return ScriptedAnswer{200, test::openai_text("```py\nprint(1+2)\n```")};
    return ScriptedAnswer{200, test::openai_text("3")};
  });
  AgentOutcome outcome = run(server, {.task = "1+2"});
  EXPECT_EQ(outcome.status, "answered");
  EXPECT_EQ(outcome.answer, "3");
  EXPECT_EQ(records_of("fallback").size(), 1u);
  EXPECT_EQ(executor.requests.size(), 1u);
}

TEST_F(LoopFixture, SecuritySummaryAddsUpEveryExecution) {
  executor.answer = [](const Json&) {
    Json r = code_result("timeout_wall", "");
    r["report"]["events"]["denied_syscalls"] = Json::array({{{"name", "keyctl"}, {"count", 2}}});
    r["report"]["events"]["blocked_connections"] = Json::array({{{"host", "evil.test"}, {"port", 443}, {"reason", "not allowed"}}});
    return r;
  };
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t n) {
    if (n < 2) return ScriptedAnswer{200, test::openai_tool_call("c" + std::to_string(n), "run_code", R"({"language":"python","code":"x"})")};
    return ScriptedAnswer{200, test::openai_text("done")};
  });
  AgentOutcome outcome = run(server, {.task = "x"});
  EXPECT_EQ(outcome.security["executions"], 2);
  EXPECT_EQ(outcome.security["denied_syscalls"][0]["name"], "keyctl");
  EXPECT_EQ(outcome.security["denied_syscalls"][0]["count"], 4);
  EXPECT_EQ(outcome.security["blocked_connections"][0]["count"], 2);
  EXPECT_EQ(outcome.security["limits_hit"][0]["limit"], "timeout_wall");
  EXPECT_EQ(records_of("security_summary").at(0)["denied_syscalls"][0]["count"], 4);
}

TEST_F(LoopFixture, WriteAndReadFileMoveBytesThroughTheSession) {
  std::map<std::string, std::string> files;
  executor.answer = [&](const Json& req) {
    Json r = code_result("ok", "");
    if (req.contains("files")) files[req["files"][0]["path"]] = req["files"][0]["content_base64"];
    if (req.contains("get"))
      r["files"] = Json::array({{{"path", req["get"][0]}, {"size", 5}, {"base64", files[req["get"][0]]}}});
    return r;
  };
  FakeModelServer server("/v1/chat/completions", [](const Json& body, size_t n) {
    if (n == 0) return ScriptedAnswer{200, test::openai_tool_call("w", "write_file", R"({"path":"a.txt","content":"hello"})")};
    if (n == 1) return ScriptedAnswer{200, test::openai_tool_call("r", "read_file", R"({"path":"a.txt"})")};
    EXPECT_NE(test::last_message_content(body).find("hello"), std::string::npos);
    return ScriptedAnswer{200, test::openai_text("read hello")};
  });
  EXPECT_EQ(run(server, {.task = "x"}).status, "answered");
  EXPECT_EQ(files["a.txt"], "aGVsbG8=");
}

TEST(CodeBlocks, ExtractsRunnableLanguagesAndSkipsOutput) {
  auto blocks = extract_code_blocks("a\n```python\nprint(1)\n```\n```text\noutput\n```\n```\nls\n```\n```js\nconsole.log(2)\n```", "bash");
  ASSERT_EQ(blocks.size(), 3u);
  EXPECT_EQ(blocks[0].language, "python");
  EXPECT_EQ(blocks[0].code, "print(1)\n");
  EXPECT_EQ(blocks[1].language, "bash");
  EXPECT_EQ(blocks[2].language, "node");
  EXPECT_TRUE(extract_code_blocks("no code here", "python").empty());
  EXPECT_TRUE(extract_code_blocks("```python\nunterminated", "python").empty());
}

TEST(CompactResult, KeepsHeadAndTailListsArtifactsWithoutBytes) {
  Json result = code_result("ok", std::string(5000, 'a') + std::string(5000, 'z'));
  result["artifacts"] = Json::array({{{"path", "out/p.png"}, {"mime", "image/png"}, {"size", 9}, {"base64", "AAAA"}}});
  Json compact = compact_result(result, 1000);
  std::string out = compact["stdout"];
  EXPECT_LT(out.size(), 1100u);
  EXPECT_EQ(out.front(), 'a');
  EXPECT_EQ(out.back(), 'z');
  EXPECT_NE(out.find("9000 bytes cut"), std::string::npos);
  EXPECT_FALSE(compact["artifacts"][0].contains("base64"));
  EXPECT_FALSE(without_payloads(result)["artifacts"][0].contains("base64"));
}

// MCP's run_code answer is this summary: it says when the run was served by a pooled sandbox.
TEST(CompactResult, SaysWhenTheRunWasPooled) {
  Json cold = code_result("ok", "1\n");
  EXPECT_FALSE(compact_result(cold).contains("pooled"));
  Json pooled = cold;
  pooled["report"]["pooled"] = true;
  pooled["report"]["pool_wait_ms"] = 0;
  EXPECT_EQ(compact_result(pooled)["pooled"], true);
}

}  // namespace
}  // namespace sandcell::agent_service
