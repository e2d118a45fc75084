// The HTTP API in-process with a fake executor: auth, JSON and NDJSON runs, the concurrency
// gate and its 429, body limits, unix sockets, graceful stop.
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <future>
#include <thread>

#include "fake_executor.hpp"
#include "sandcell/agent_service/http_api.hpp"
#include "temp_tree.hpp"

namespace sandcell::agent_service {
namespace {

using test::code_result;

// A server on its own thread for the length of a test.
struct RunningApi {
  HttpApi api;
  int port;
  std::thread thread;
  RunningApi(Executor& executor, HttpApiOptions options) : api(executor, std::move(options)), port(api.bind()) {
    thread = std::thread([this] { api.serve(); });
    // httplib's stop() is a no-op until the accept loop runs: wait for the first answer.
    for (int i = 0; i < 2000; ++i) {
      if (client().Get("/v1/health")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ~RunningApi() {
    api.stop();
    thread.join();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth("t0ken");
    c.set_read_timeout(30, 0);
    return c;
  }
};

HttpApiOptions tcp(int max_running = 2, int max_queued = 8) {
  return {.listen = "127.0.0.1:0", .token = "t0ken", .max_running = max_running, .max_queued = max_queued, .max_body_bytes = 1 << 16};
}

// Blocks every execution until released.
struct Latch {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  int waiting = 0;
  void wait() {
    std::unique_lock lock(m);
    ++waiting;
    cv.notify_all();
    cv.wait(lock, [&] { return open; });
  }
  void wait_for_waiters(int n) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return waiting >= n; });
  }
  void release() {
    std::lock_guard lock(m);
    open = true;
    cv.notify_all();
  }
};

TEST(HttpApi, TcpWithoutToken_RefusesToStart) {
  test::FakeExecutor executor;
  EXPECT_THROW(HttpApi(executor, {.listen = "127.0.0.1:0"}), std::exception);
  EXPECT_THROW(HttpApi(executor, {.listen = "localhost", .token = "x"}), std::exception);
  EXPECT_THROW(HttpApi(executor, {.listen = "127.0.0.1:99999", .token = "x"}), std::exception);
}

TEST(HttpApi, RequestsWithoutTheRightToken_Get401) {
  test::FakeExecutor executor;
  RunningApi server(executor, tcp());
  httplib::Client anonymous("127.0.0.1", server.port);
  EXPECT_EQ(anonymous.Post("/v1/run", R"({"language":"python","code":"1"})", "application/json")->status, 401);
  anonymous.set_bearer_token_auth("t0ken-but-longer");
  EXPECT_EQ(anonymous.Get("/v1/skills")->status, 401);
  EXPECT_EQ(anonymous.Get("/v1/health")->status, 200);  // health tells nothing secret
  EXPECT_TRUE(executor.requests.empty());
  EXPECT_EQ(server.client().Get("/v1/skills")->status, 200);
}

TEST(HttpApi, Run_ReturnsTheResultAndRefusedRequestsAre400) {
  test::FakeExecutor executor;
  executor.answer = [](const Json& req) {
    if (req["code"] == "") return Json{{"error", {{"class", "sandcell"}, {"message", "empty code"}}}};
    return code_result("ok", "hi\n");
  };
  RunningApi server(executor, tcp());
  auto res = server.client().Post("/v1/run", R"j({"language":"python","code":"print('hi')"})j", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Json::parse(res->body)["stdout"], "hi\n");
  EXPECT_EQ(server.client().Post("/v1/run", R"({"language":"python","code":""})", "application/json")->status, 400);
  EXPECT_EQ(server.client().Post("/v1/run", "[1,2", "application/json")->status, 400);
  // Found by fuzz_http_request: a "stream" of another type was a type_error answered 500.
  EXPECT_EQ(server.client().Post("/v1/run", R"j({"code":"print(1)","stream":1})j", "application/json")->status, 400);
}

TEST(HttpApi, Stream_SendsOutputEventsThenTheEnd) {
  test::FakeExecutor executor;
  executor.answer = [](const Json& req) {
    EXPECT_FALSE(req.contains("stream"));
    return code_result("ok", "out\n", "err\n");
  };
  RunningApi server(executor, tcp());
  auto res = server.client().Post("/v1/run", R"({"language":"python","code":"x","stream":true})", "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/x-ndjson");
  std::vector<Json> events;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) events.push_back(Json::parse(line));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0], (Json{{"type", "stdout"}, {"data", "out\n"}}));
  EXPECT_EQ(events[1], (Json{{"type", "stderr"}, {"data", "err\n"}}));
  EXPECT_EQ(events[2]["type"], "end");
  EXPECT_EQ(events[2]["result"]["status"], "ok");
}

TEST(HttpApi, FullQueue_Answers429AndQueuedWorkStillRuns) {
  test::FakeExecutor executor;
  Latch latch;
  executor.answer = [&](const Json&) {
    latch.wait();
    return code_result("ok", "done\n");
  };
  RunningApi server(executor, tcp(1, 1));
  auto post = [&] { return server.client().Post("/v1/run", R"({"language":"python","code":"x"})", "application/json"); };
  auto running = std::async(std::launch::async, post);
  latch.wait_for_waiters(1);
  auto queued = std::async(std::launch::async, post);
  for (int i = 0; i < 5000 && Json::parse(server.client().Get("/v1/health")->body)["queued"] != 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto refused = post();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 429);
  EXPECT_EQ(refused->get_header_value("Retry-After"), "1");
  latch.release();
  EXPECT_EQ(running.get()->status, 200);
  EXPECT_EQ(queued.get()->status, 200);
  EXPECT_EQ(executor.requests.size(), 2u);
}

TEST(HttpApi, BodyOverTheLimit_Gets413) {
  test::FakeExecutor executor;
  RunningApi server(executor, tcp());
  Json big{{"language", "python"}, {"code", std::string(1 << 17, 'x')}};
  auto res = server.client().Post("/v1/run", big.dump(), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_TRUE(executor.requests.empty());
}

TEST(HttpApi, SessionFilesGoUpAndDown) {
  test::FakeExecutor executor;
  std::map<std::string, std::string> stored;
  executor.answer = [&](const Json& req) {
    EXPECT_EQ(req["session"], "s-1");
    Json r = code_result("ok", "");
    if (req.contains("files")) stored[req["files"][0]["path"]] = req["files"][0]["content_base64"];
    if (req.contains("get")) {
      r["files"] = Json::array();
      if (stored.count(req["get"][0])) r["files"].push_back({{"path", req["get"][0]}, {"base64", stored[req["get"][0]]}});
    }
    return r;
  };
  RunningApi server(executor, tcp());
  auto client = server.client();
  EXPECT_EQ(client.Put("/v1/sessions/s-1/files/data/in.bin", std::string("a\0b", 3), "application/octet-stream")->status, 200);
  auto down = client.Get("/v1/sessions/s-1/files/data/in.bin");
  ASSERT_TRUE(down);
  EXPECT_EQ(down->status, 200);
  EXPECT_EQ(down->body, std::string("a\0b", 3));
  EXPECT_EQ(client.Get("/v1/sessions/s-1/files/missing.txt")->status, 404);
  EXPECT_EQ(client.Delete("/v1/sessions/s-1")->status, 200);
  EXPECT_EQ(executor.removed_sessions, std::vector<std::string>{"s-1"});
}

TEST(HttpApi, UnixSocket_NeedsNoTokenAndIsOwnerOnly) {
  test::FakeExecutor executor;
  executor.answer = [](const Json&) { return code_result("ok", "unix\n"); };
  test::TempTree dir;
  std::string path = (dir.path / "api.sock").string();
  {
    HttpApi api(executor, {.listen = "unix:" + path});
    api.bind();
    std::thread serving([&] { api.serve(); });
    struct stat st{};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    httplib::Client client(path, 80);
    client.set_address_family(AF_UNIX);
    for (int i = 0; i < 2000 && !client.Get("/v1/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto res = client.Post("/v1/run", R"({"language":"python","code":"x"})", "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(Json::parse(res->body)["stdout"], "unix\n");
    api.stop();
    serving.join();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(HttpApi, Stop_FinishesTheRequestThatIsRunning) {
  test::FakeExecutor executor;
  Latch latch;
  executor.answer = [&](const Json&) {
    latch.wait();
    return code_result("ok", "finished\n");
  };
  auto server = std::make_unique<RunningApi>(executor, tcp());
  auto running = std::async(std::launch::async, [&] {
    return server->client().Post("/v1/run", R"({"language":"python","code":"x"})", "application/json");
  });
  latch.wait_for_waiters(1);
  std::thread stopper([&] { server.reset(); });  // stop + join: returns only after the answer
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  latch.release();
  stopper.join();
  auto res = running.get();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(Json::parse(res->body)["stdout"], "finished\n");
}

}  // namespace
}  // namespace sandcell::agent_service
