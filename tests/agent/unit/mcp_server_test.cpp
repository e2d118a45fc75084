// The MCP server's protocol handling, in-process with a fake executor: handshake versions,
// the stateless 2026-07-28 form, tools and their content.
#include <gtest/gtest.h>

#include <condition_variable>

#include "fake_executor.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/agent_service/mcp_server.hpp"

namespace sandcell::agent_service {
namespace {

using test::code_result;

struct McpFixture : ::testing::Test {
  test::FakeExecutor executor;
  std::mutex mutex;
  std::vector<Json> sent;
  McpServer server{executor, {.version = "9.9"}, [this](const Json& m) {
                     std::lock_guard lock(mutex);
                     sent.push_back(m);
                   }};

  // Sends one message and returns the answer to it (after any tool call finished).
  Json ask(const Json& message) {
    size_t before;
    {
      std::lock_guard lock(mutex);
      before = sent.size();
    }
    server.handle_line(message.dump());
    server.drain();
    std::lock_guard lock(mutex);
    return sent.size() > before ? sent.back() : Json();
  }
  static Json request(int id, const std::string& method, Json params = Json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", params}};
  }
  static Json stateless(int id, const std::string& method, Json params = Json::object(), const std::string& version = "2026-07-28") {
    params["_meta"] = {{"io.modelcontextprotocol/protocolVersion", version},
                       {"io.modelcontextprotocol/clientCapabilities", Json::object()},
                       {"io.modelcontextprotocol/clientInfo", {{"name", "raw"}, {"version", "1"}}}};
    return request(id, method, params);
  }
};

TEST_F(McpFixture, Initialize_AnswersEachHandshakeVersionItSpeaks) {
  for (std::string version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    Json answer = ask(request(1, "initialize", {{"protocolVersion", version}, {"capabilities", Json::object()},
                                                {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    EXPECT_EQ(answer["result"]["protocolVersion"], version);
    EXPECT_EQ(answer["result"]["serverInfo"]["name"], "sandcell");
    EXPECT_TRUE(answer["result"]["capabilities"].contains("tools"));
  }
}

TEST_F(McpFixture, Initialize_UnknownVersionGetsTheNewestHandshakeVersion) {
  EXPECT_EQ(ask(request(1, "initialize", {{"protocolVersion", "1999-01-01"}}))["result"]["protocolVersion"], "2025-11-25");
  // initialize does not exist in the stateless era: never answered with 2026-07-28.
  EXPECT_EQ(ask(request(2, "initialize", {{"protocolVersion", "2026-07-28"}}))["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpFixture, NotificationsGetNoAnswerAndPingDoes) {
  EXPECT_TRUE(ask({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}}).is_null());
  EXPECT_EQ(ask(request(5, "ping")), (Json{{"jsonrpc", "2.0"}, {"id", 5}, {"result", Json::object()}}));
}

TEST_F(McpFixture, ParseErrorInvalidRequestAndUnknownMethod) {
  server.handle_line("{not json");
  EXPECT_EQ(sent.back()["error"]["code"], -32700);
  EXPECT_EQ(ask({{"jsonrpc", "1.0"}, {"id", 1}, {"method", "ping"}})["error"]["code"], -32600);
  // Found by fuzz_mcp_request: a non-string "jsonrpc" threw out of handle_line and ended the server.
  EXPECT_EQ(ask({{"jsonrpc", 2}, {"id", 1}, {"method", "ping"}})["error"]["code"], -32600);
  EXPECT_EQ(ask(request(2, "resources/list"))["error"]["code"], -32601);
}

// 200,000 levels of nesting in "id" or "arguments" (400 KB) killed the server in a recursive
// dump; refused while parsed now, as a parse error, and the server goes on.
TEST_F(McpFixture, DeeplyNestedIdOrArguments_AreAParseErrorNotACrash) {
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  server.handle_line(R"({"jsonrpc":"2.0","id":)" + deep + R"(,"method":"ping"})");
  server.handle_line(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"run_code","arguments":{"code":)" +
                     deep + "}}}");
  server.drain();
  ASSERT_EQ(sent.size(), 2u);
  for (const Json& answer : sent) EXPECT_EQ(answer["error"]["code"], -32700);
  EXPECT_TRUE(executor.requests.empty());
  EXPECT_EQ(ask(request(3, "ping"))["result"], Json::object());
}

// JSON-RPC 2.0 "Batch": an empty array is answered with one Invalid Request error (it got no
// answer at all).
TEST_F(McpFixture, EmptyBatch_IsAnInvalidRequest) {
  server.handle_line("[]");
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent.back()["error"]["code"], -32600);
  EXPECT_TRUE(sent.back()["id"].is_null());
}

TEST_F(McpFixture, ToolsList_OffersRunCodeSessionsAndFiles) {
  Json tools = ask(request(1, "tools/list"))["result"]["tools"];
  std::vector<std::string> names;
  for (const Json& t : tools) names.push_back(t["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"run_code", "list_skills", "list_sessions", "remove_session", "upload_file", "download_file"}));
  EXPECT_EQ(tools[0]["inputSchema"]["required"], (Json{"language", "code"}));
}

// run_code accepted `net` but its schema did not name it, so a client could not know it may ask
// for network, nor how much: the schema offers `net` as wide as the operator's --allowed-net.
TEST_F(McpFixture, ToolsList_RunCodeOffersNetWithinTheOperatorsLimit) {
  Json net = ask(request(1, "tools/list"))["result"]["tools"][0]["inputSchema"]["properties"]["net"];
  EXPECT_EQ(net["type"], "string") << net.dump();
  EXPECT_EQ(net["enum"], Json::array({"none"})) << "the default limit allows no network: " << net.dump();
  for (const std::string allowed : {"allow:pypi.org,files.pythonhosted.org", "full"}) {
    McpServer wider(executor, {.version = "9.9", .allowed_net = allowed}, [this](const Json& m) { sent.push_back(m); });
    wider.handle_line(request(2, "tools/list").dump());
    Json offered = sent.back()["result"]["tools"][0]["inputSchema"]["properties"]["net"];
    EXPECT_EQ(offered["type"], "string") << allowed;
    EXPECT_FALSE(offered.contains("enum")) << allowed;
    EXPECT_NE(offered["description"].get<std::string>().find(allowed == "full" ? "full" : "files.pythonhosted.org"),
              std::string::npos)
        << offered.dump();
  }
}

// An upload with "session": "" said "wrote N bytes" into a workspace thrown away at once; a
// transfer that cannot persist is refused and runs nothing.
TEST_F(McpFixture, FileTransfersWithoutASession_AreRefused) {
  Json up = ask(request(1, "tools/call", {{"name", "upload_file"}, {"arguments", {{"session", ""}, {"path", "a.txt"}, {"content", "x"}}}}));
  EXPECT_EQ(up["result"]["isError"], true) << up.dump();
  EXPECT_NE(up.dump().find("needs a session"), std::string::npos) << up.dump();
  Json down = ask(request(2, "tools/call", {{"name", "download_file"}, {"arguments", {{"session", ""}, {"path", "a.txt"}}}}));
  EXPECT_EQ(down["result"]["isError"], true) << down.dump();
  EXPECT_TRUE(executor.requests.empty());
}

TEST_F(McpFixture, RunCode_TextContentAndPngArtifactsAsImages) {
  executor.answer = [](const Json& req) {
    EXPECT_EQ(req["language"], "python");
    EXPECT_EQ(req["timeout"], 5);
    EXPECT_EQ(req["session"], "s1");
    Json r = code_result("ok", "hi\n");
    r["artifacts"] = Json::array({{{"path", "out/fig.png"}, {"mime", "image/png"}, {"size", 3}, {"base64", "iVBO"}}});
    return r;
  };
  Json answer = ask(request(3, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "print('hi')"}, {"timeout", 5}, {"session", "s1"}}}}));
  const Json& result = answer["result"];
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["content"][0]["type"], "text");
  EXPECT_EQ(result["content"][0]["text"], "stdout:\nhi\n");
  EXPECT_EQ(result["content"].back()["type"], "image");
  EXPECT_EQ(result["content"].back()["mimeType"], "image/png");
  EXPECT_EQ(result["content"].back()["data"], "iVBO");
}

TEST_F(McpFixture, RunCode_FailureIsErrorWithItsClass) {
  executor.answer = [](const Json&) {
    return code_result("exit_nonzero", "", "Traceback...\nZeroDivisionError", {{"class", "runtime_error"}, {"message", "ZeroDivisionError"}});
  };
  Json result = ask(request(4, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "1/0"}}}}))["result"];
  EXPECT_EQ(result["isError"], true);
  EXPECT_NE(result.dump().find("runtime_error"), std::string::npos);
}

TEST_F(McpFixture, BadArgumentsAreToolErrorsUnknownToolIsAProtocolError) {
  Json missing = ask(request(1, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}}}}));
  EXPECT_EQ(missing["result"]["isError"], true);
  EXPECT_TRUE(executor.requests.empty());
  EXPECT_EQ(ask(request(2, "tools/call", {{"name", "nope"}, {"arguments", Json::object()}}))["error"]["code"], -32602);
}

// A bad argument is the client's to fix ("NAME: why"); the executor refusing the work is the
// tool failing ("NAME failed: why"), even when the executor calls it an input error.
TEST(McpTools, BadArgumentsAndFailedWork_AreToldApart) {
  struct RefusingExecutor : test::FakeExecutor {
    void remove_session(const std::string& id) override {
      throw Error::invalid("remove session " + id + ": no such session");
    }
  } executor;
  std::vector<Json> sent;
  McpServer server{executor, {.version = "9.9"}, [&](const Json& m) { sent.push_back(m); }};
  auto text_of = [&](const Json& arguments) {
    server.handle_line(McpFixture::request(1, "tools/call", {{"name", "remove_session"}, {"arguments", arguments}}).dump());
    server.drain();
    EXPECT_EQ(sent.back()["result"]["isError"], true);
    return sent.back()["result"]["content"][0]["text"].get<std::string>();
  };
  EXPECT_EQ(text_of({{"session", 7}}), "remove_session: argument 'session' (a string) is required");
  EXPECT_EQ(text_of({{"session", "s1"}}), "remove_session failed: remove session s1: no such session");
}

TEST_F(McpFixture, Stateless_DiscoverAdvertisesBothEras) {
  Json result = ask(stateless(1, "server/discover"))["result"];
  EXPECT_EQ(result["supportedVersions"], (Json{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}));
  EXPECT_EQ(result["resultType"], "complete");
  EXPECT_TRUE(result["capabilities"].contains("tools"));
  EXPECT_EQ(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "sandcell");
  EXPECT_GE(result["ttlMs"].get<int>(), 0);
  EXPECT_EQ(result["cacheScope"], "public");
}

TEST_F(McpFixture, Stateless_ToolsWorkWithoutHandshake) {
  executor.answer = [](const Json&) { return code_result("ok", "7\n"); };
  Json list = ask(stateless(1, "tools/list"))["result"];
  EXPECT_EQ(list["resultType"], "complete");
  EXPECT_TRUE(list.contains("ttlMs"));
  Json call = ask(stateless(2, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "print(7)"}}}}))["result"];
  EXPECT_EQ(call["resultType"], "complete");
  EXPECT_EQ(call["content"][0]["text"], "stdout:\n7\n");
}

TEST_F(McpFixture, Stateless_UnsupportedVersionIs32022WithTheSupportedList) {
  Json error = ask(stateless(9, "tools/list", Json::object(), "2099-01-01"))["error"];
  EXPECT_EQ(error["code"], -32022);
  EXPECT_EQ(error["data"]["requested"], "2099-01-01");
  EXPECT_EQ(error["data"]["supported"][0], "2026-07-28");
  // Also on server/discover itself, so the client can recover.
  EXPECT_EQ(ask(stateless(10, "server/discover", Json::object(), "2099-01-01"))["error"]["code"], -32022);
}

TEST_F(McpFixture, Stateless_MissingClientCapabilitiesIsInvalidParams) {
  Json message = request(1, "tools/list", {{"_meta", {{"io.modelcontextprotocol/protocolVersion", "2026-07-28"}}}});
  EXPECT_EQ(ask(message)["error"]["code"], -32602);
  EXPECT_EQ(ask(stateless(2, "ping"))["error"]["code"], -32601);  // removed in 2026-07-28
}

TEST_F(McpFixture, ToolCallsRunConcurrentlyWhilePingsAreAnswered) {
  std::mutex m;
  std::condition_variable cv;
  bool release = false;
  executor.answer = [&](const Json&) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return release; });
    return code_result("ok", "late\n");
  };
  server.handle_line(request(1, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "x"}}}}).dump());
  server.handle_line(request(2, "ping").dump());
  {
    std::lock_guard lock(mutex);
    ASSERT_EQ(sent.size(), 1u);  // the ping was answered while the call still runs
    EXPECT_EQ(sent[0]["id"], 2);
  }
  {
    std::lock_guard lock(m);
    release = true;
  }
  cv.notify_all();
  server.drain();
  EXPECT_EQ(sent.back()["id"], 1);
}

// notifications/cancelled stops the running call (its sandbox is killed) and its answer is
// never sent; the server goes on answering.
TEST_F(McpFixture, CancelledCallIsStoppedAndNotAnswered) {
  std::mutex m;
  std::condition_variable_any cv;
  bool started = false, saw_stop = false;
  executor.answer_stoppable = [&](const Json&, std::stop_token stop) {
    std::unique_lock lock(m);
    started = true;
    cv.notify_all();
    // Bounded, so a broken cancel fails the test instead of hanging it.
    cv.wait_for(lock, stop, std::chrono::seconds(60), [] { return false; });
    saw_stop = stop.stop_requested();
    return code_result("runtime_error", "");
  };
  server.handle_line(request(7, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "x"}}}}).dump());
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return started; });
  }
  server.handle_line(Json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 7}}}}.dump());
  server.drain();
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(ask(request(8, "ping"))["id"], 8);
  std::lock_guard lock(mutex);
  for (const Json& message : sent) EXPECT_NE(message["id"], 7) << message;
}

// Cancelling an id that is not running (finished, unknown) changes nothing.
TEST_F(McpFixture, CancellingAnUnknownIdIsIgnored) {
  server.handle_line(Json{{"jsonrpc", "2.0"}, {"method", "notifications/cancelled"}, {"params", {{"requestId", 99}}}}.dump());
  Json answer = ask(request(99, "tools/call", {{"name", "run_code"}, {"arguments", {{"language", "python"}, {"code", "x"}}}}));
  EXPECT_EQ(answer["id"], 99);
}

}  // namespace
}  // namespace sandcell::agent_service
