// The OpenAI-compatible and Anthropic providers against scripted servers on loopback.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "fake_model_server.hpp"
#include "sandcell/agent_service/chat_model.hpp"
#include "temp_tree.hpp"

namespace sandcell::agent_service {
namespace {

using test::FakeModelServer;
using test::ScriptedAnswer;

ProviderConfig config(const std::string& provider, const std::string& base_url) {
  ProviderConfig c{.provider = provider, .model = "test-model", .base_url = base_url, .api_key = "sk-test"};
  c.retry = {.max_attempts = 3, .first_backoff = std::chrono::milliseconds(1), .max_backoff = std::chrono::milliseconds(5)};
  c.timeout = std::chrono::seconds(10);
  return c;
}

std::vector<ToolSpec> one_tool() {
  return {{"run_code", "run it", {{"type", "object"}, {"properties", {{"code", {{"type", "string"}}}}}}}};
}

TEST(OpenAiProvider, SendsToolsAndParsesToolCalls) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{200, test::openai_tool_call("call_1", "run_code", R"j({"code":"print(1)"})j")};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  ChatReply reply = model->complete("be brief", {{Role::user, "hi", {}, "", false}}, one_tool());
  ASSERT_EQ(reply.tool_calls.size(), 1u);
  EXPECT_EQ(reply.tool_calls[0].id, "call_1");
  EXPECT_EQ(reply.tool_calls[0].name, "run_code");
  EXPECT_EQ(Json::parse(reply.tool_calls[0].arguments)["code"], "print(1)");
  Json sent = server.requests().at(0);
  EXPECT_EQ(sent["model"], "test-model");
  EXPECT_EQ(sent["messages"][0]["role"], "system");
  EXPECT_EQ(sent["messages"][1]["content"], "hi");
  EXPECT_EQ(sent["tools"][0]["function"]["name"], "run_code");
  EXPECT_EQ(server.headers().at(0).find("Authorization")->second, "Bearer sk-test");
}

TEST(OpenAiProvider, SendsToolResultsBackWithTheirCallIds) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) { return ScriptedAnswer{200, test::openai_text("done")}; });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  std::vector<Message> history = {{Role::user, "task", {}, "", false},
                                  {Role::assistant, "", {{"call_9", "run_code", "{}"}}, "", false},
                                  {Role::tool, "{\"status\":\"ok\"}", {}, "call_9", false}};
  EXPECT_EQ(model->complete("", history, one_tool()).text, "done");
  Json sent = server.requests().at(0);
  EXPECT_EQ(sent["messages"][1]["tool_calls"][0]["id"], "call_9");
  EXPECT_EQ(sent["messages"][2]["role"], "tool");
  EXPECT_EQ(sent["messages"][2]["tool_call_id"], "call_9");
}

TEST(OpenAiProvider, RetriesOn429And503HonouringRetryAfter) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t n) {
    if (n == 0) return ScriptedAnswer{429, {{"error", {{"message", "slow down"}}}}, "", {{"Retry-After", "0"}}};
    if (n == 1) return ScriptedAnswer{503, {{"error", {{"message", "overloaded"}}}}};
    return ScriptedAnswer{200, test::openai_text("third time")};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  EXPECT_EQ(model->complete("", {{Role::user, "x", {}, "", false}}, {}).text, "third time");
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(OpenAiProvider, GivesUpAfterMaxAttemptsWithTheServersMessage) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{500, {{"error", {{"message", "boom inside"}}}}};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  try {
    model->complete("", {{Role::user, "x", {}, "", false}}, {});
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_EQ(e.http_status, 500);
    EXPECT_NE(std::string(e.what()).find("boom inside"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.requests().size(), 3u);
}

TEST(OpenAiProvider, Unauthorized_NamesTheKeyVariableAndDoesNotRetry) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{401, {{"error", {{"message", "Incorrect API key provided"}}}}};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  try {
    model->complete("", {{Role::user, "x", {}, "", false}}, {});
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_NE(std::string(e.what()).find("OPENAI_API_KEY"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Incorrect API key"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.requests().size(), 1u);
}

TEST(OpenAiProvider, NotFound_SaysToCheckBaseUrlAndModel) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{404, {{"error", {{"message", "model 'nope' not found"}}}}};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  try {
    model->complete("", {{Role::user, "x", {}, "", false}}, {});
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_EQ(e.http_status, 404);
    EXPECT_NE(std::string(e.what()).find("--base-url"), std::string::npos) << e.what();
  }
}

TEST(OpenAiProvider, AnswerThatIsNotJson_IsAClearError) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) { return ScriptedAnswer{200, nullptr, "<html>gateway</html>"}; });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  try {
    model->complete("", {{Role::user, "x", {}, "", false}}, {});
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_NE(std::string(e.what()).find("not a JSON object"), std::string::npos) << e.what();
  }
}

TEST(OpenAiProvider, ServerWithoutToolSupport_IsMarkedForFallback) {
  FakeModelServer server("/v1/chat/completions", [](const Json&, size_t) {
    return ScriptedAnswer{400, {{"error", {{"message", "this model does not support tools"}}}}};
  });
  auto model = make_chat_model(config("openai", server.base_url() + "/v1"));
  try {
    model->complete("", {{Role::user, "x", {}, "", false}}, one_tool());
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_TRUE(e.tools_unsupported);
  }
}

TEST(OpenAiProvider, UnreachableServer_IsAnErrorNamingTheUrl) {
  auto c = config("openai", "http://127.0.0.1:9/v1");  // discard port: nothing listens
  try {
    make_chat_model(c)->complete("", {{Role::user, "x", {}, "", false}}, {});
    FAIL() << "no error";
  } catch (const ProviderError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:9"), std::string::npos) << e.what();
  }
}

TEST(AnthropicProvider, ToolUseAndToolResultRoundTrip) {
  FakeModelServer server("/v1/messages", [](const Json&, size_t n) {
    return n == 0 ? ScriptedAnswer{200, test::anthropic_tool_use("toolu_1", "run_code", {{"code", "print(2)"}})}
                  : ScriptedAnswer{200, test::anthropic_text("two")};
  });
  auto model = make_chat_model(config("anthropic", server.base_url()));
  std::vector<Message> history = {{Role::user, "task", {}, "", false}};
  ChatReply first = model->complete("sys", history, one_tool());
  ASSERT_EQ(first.tool_calls.size(), 1u);
  EXPECT_EQ(first.text, "Let me run that.");
  EXPECT_EQ(Json::parse(first.tool_calls[0].arguments)["code"], "print(2)");
  history.push_back({Role::assistant, first.text, first.tool_calls, "", false});
  history.push_back({Role::tool, "failed", {}, "toolu_1", true});
  EXPECT_EQ(model->complete("sys", history, one_tool()).text, "two");

  Json sent = server.requests().at(1);
  EXPECT_EQ(sent["system"], "sys");
  EXPECT_EQ(sent["tools"][0]["input_schema"]["type"], "object");
  EXPECT_EQ(sent["messages"][1]["content"][1]["type"], "tool_use");
  EXPECT_EQ(sent["messages"][1]["content"][1]["input"]["code"], "print(2)");
  const Json& result = sent["messages"][2]["content"][0];
  EXPECT_EQ(sent["messages"][2]["role"], "user");
  EXPECT_EQ(result["type"], "tool_result");
  EXPECT_EQ(result["tool_use_id"], "toolu_1");
  EXPECT_EQ(result["is_error"], true);
  auto headers = server.headers().at(0);
  EXPECT_EQ(headers.find("x-api-key")->second, "sk-test");
  EXPECT_EQ(headers.find("anthropic-version")->second, "2023-06-01");
}

TEST(ProviderConfig, FlagsBeatEnvironmentBeatConfigFile) {
  test::TempTree tree;
  std::string file = (tree.path / "agent.json").string();
  std::ofstream(file) << R"({"provider": "openai", "model": "from-file", "base_url": "http://file/v1", "timeout": 7})";
  setenv("OPENAI_MODEL", "from-env", 1);
  unsetenv("OPENAI_BASE_URL");
  ProviderConfig c = resolve_provider_config({}, file);
  EXPECT_EQ(c.model, "from-env");
  EXPECT_EQ(c.base_url, "http://file/v1");
  EXPECT_EQ(c.timeout, std::chrono::seconds(7));
  c = resolve_provider_config({.provider = "openai", .model = "from-flag"}, file);
  EXPECT_EQ(c.model, "from-flag");
  unsetenv("OPENAI_MODEL");
  EXPECT_EQ(resolve_provider_config({}, file).model, "from-file");
}

TEST(ProviderConfig, AnthropicWithoutKey_IsRefused) {
  unsetenv("ANTHROPIC_API_KEY");
  EXPECT_THROW(resolve_provider_config({.provider = "anthropic"}, ""), std::exception);
  EXPECT_THROW(resolve_provider_config({.provider = "gemini"}, ""), std::exception);
}

}  // namespace
}  // namespace sandcell::agent_service
