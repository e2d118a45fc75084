// `sandcell serve` end to end: 50 concurrent clients against a server limited to 2 running
// executions get their own correct results; afterwards the server holds no extra fds and no
// children; SIGTERM lets a running request finish before the server exits 0.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <filesystem>
#include <future>
#include <thread>

#include "e2e_support.hpp"

namespace sandcell::test {
namespace {

using nlohmann::json;

struct ServeE2E : ::testing::Test {
  int port = free_tcp_port();
  std::unique_ptr<Background> server;

  void SetUp() override {
    server = std::make_unique<Background>(std::vector<std::string>{
        sandcell_bin(), "--root", skill_store(), "serve", "--listen", "127.0.0.1:" + std::to_string(port), "--token",
        "e2e-token", "--max-running", "2", "--max-queued", "64"});
    for (int i = 0; i < 5000 && !client().Get("/v1/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(client().Get("/v1/health")) << server->stderr_text();
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port);
    c.set_bearer_token_auth("e2e-token");
    c.set_read_timeout(300, 0);
    return c;
  }
  json run(const json& request) {
    auto res = client().Post("/v1/run", request.dump(), "application/json");
    if (!res) return {{"transport_error", httplib::to_string(res.error())}};
    json body = res->get_header_value("Content-Type") == "application/x-ndjson" ? json::array() : json::parse(res->body, nullptr, false);
    if (body.is_array()) {
      std::istringstream lines(res->body);
      for (std::string line; std::getline(lines, line);) body.push_back(json::parse(line));
    }
    return {{"status", res->status}, {"body", body}};
  }
};

TEST_F(ServeE2E, FiftyConcurrentRequestsGetTheirOwnResultsAndNothingLeaks) {
  json warm = run({{"language", "python"}, {"code", "print('warm')"}});  // fds the server keeps for good
  ASSERT_EQ(warm["status"], 200) << warm;
  int fds_before = open_fd_count(server->pid());
  std::vector<std::future<json>> replies;
  for (int i = 0; i < 50; ++i)
    replies.push_back(std::async(std::launch::async, [this, i] {
      json request{{"language", "python"}, {"code", "import sys\nn = " + std::to_string(i) + "\nprint(n * n)\nprint(n, file=sys.stderr)\n"}};
      if (i % 5 == 0) request["stream"] = true;
      return run(request);
    }));
  for (int i = 0; i < 50; ++i) {
    json reply = replies[i].get();
    if (reply["status"] != 200) std::this_thread::sleep_for(std::chrono::seconds(1));  // let the server log why
    ASSERT_EQ(reply["status"], 200) << i << ": " << reply << "\nserver alive: " << (kill(server->pid(), 0) == 0)
                                    << "\nserver stderr:\n" << server->stderr_text();
    json result = i % 5 == 0 ? reply["body"].back()["result"] : reply["body"];
    if (i % 5 == 0) {
      EXPECT_EQ(reply["body"].back()["type"], "end");
    }
    EXPECT_EQ(result["status"], "ok") << i << ": " << result;
    EXPECT_EQ(result["stdout"], std::to_string(i * i) + "\n") << i;
    EXPECT_EQ(result["stderr"], std::to_string(i) + "\n") << i;
  }
  // Connections close and runner processes are reaped once every answer is out.
  for (int i = 0; i < 500 && (open_fd_count(server->pid()) > fds_before || !children_of(server->pid()).empty()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(open_fd_count(server->pid()), fds_before);
  EXPECT_TRUE(children_of(server->pid()).empty());
  json health = json::parse(client().Get("/v1/health")->body);
  EXPECT_EQ(health["running"], 0);
  EXPECT_EQ(health["queued"], 0);
  EXPECT_EQ(server->signal_and_wait(SIGTERM), 0) << server->stderr_text();
}

TEST_F(ServeE2E, SigtermFinishesTheRunningRequestThenExits) {
  auto pending = std::async(std::launch::async, [this] {
    return run({{"language", "python"}, {"code", "import time\ntime.sleep(1.5)\nprint('finished')"}, {"timeout", 30}});
  });
  auto running = [this] {
    auto res = client().Get("/v1/health");
    return res ? json::parse(res->body)["running"].get<int>() : -1;
  };
  for (int i = 0; i < 5000 && running() != 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(running(), 1);
  EXPECT_EQ(server->signal_and_wait(SIGTERM), 0) << server->stderr_text();
  json reply = pending.get();
  ASSERT_EQ(reply["status"], 200) << reply;
  EXPECT_EQ(reply["body"]["stdout"], "finished\n");
}

// `sandcell serve` is handed to sandcell-serve (the only executable that links cpp-httplib,
// cli/serve_command.cpp), and each execution is a sandcell-images process: not `sandcell`, which
// would only exec sandcell-images (agent_service::sandcell_bin_in()).
TEST_F(ServeE2E, ServesFromSandcellServeAndRunsCodeInSandcellImages) {
  const auto exe_of = [](pid_t pid) {
    std::error_code ec;
    return std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec)
        .filename()
        .string();
  };
  EXPECT_EQ(exe_of(server->pid()), "sandcell-serve");
  auto pending = std::async(std::launch::async, [this] {
    return run({{"language", "python"}, {"code", "import time\ntime.sleep(2)"}, {"timeout", 30}});
  });
  std::string seen;
  for (int i = 0; i < 2000 && seen != "sandcell-images"; ++i) {
    for (pid_t child : children_of(server->pid()))
      if (exe_of(child) == "sandcell-images") seen = "sandcell-images";
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(seen, "sandcell-images") << "no execution of the server ran sandcell-images";
  EXPECT_EQ(pending.get()["status"], 200);
}

// The server's TCP sockets have TCP_NODELAY: an answer leaves as a head and a body, and with
// Nagle's algorithm the body waited for the client's delayed ACK of the head (~40 ms per request
// on a busy keep-alive connection). Read from the server's own fds (pidfd_getfd): the listening
// socket and the one that accepted this test's connection.
TEST_F(ServeE2E, ItsSocketsSendWithoutNaglesDelay) {
  int conn = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(conn, 0);
  sockaddr_in server_addr{.sin_family = AF_INET,
                          .sin_port = htons(static_cast<uint16_t>(port)),
                          .sin_addr = {htonl(INADDR_LOOPBACK)},
                          .sin_zero = {}};
  ASSERT_EQ(connect(conn, reinterpret_cast<sockaddr*>(&server_addr), sizeof server_addr), 0);
  sockaddr_in mine{};
  socklen_t mine_len = sizeof mine;
  ASSERT_EQ(getsockname(conn, reinterpret_cast<sockaddr*>(&mine), &mine_len), 0);
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, server->pid(), 0));
  ASSERT_GE(pidfd, 0);
  int listening_checked = 0, accepted_checked = 0;
  for (int attempt = 0; attempt < 500 && accepted_checked == 0; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the accept
    listening_checked = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(server->pid()) + "/fd")) {
      const int fd = static_cast<int>(
          syscall(SYS_pidfd_getfd, pidfd, std::stoi(entry.path().filename().string()), 0));
      if (fd < 0) continue;
      sockaddr_in local{}, peer{};
      socklen_t local_len = sizeof local, peer_len = sizeof peer;
      int accepting = 0, nodelay = -1;
      socklen_t int_len = sizeof(int);
      if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) == 0 &&
          local.sin_family == AF_INET && ntohs(local.sin_port) == port) {
        getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &int_len);
        int_len = sizeof(int);
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &int_len);
        if (accepting) {
          EXPECT_EQ(nodelay, 1) << "the listening socket";
          ++listening_checked;
        } else if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) == 0 &&
                   peer.sin_port == mine.sin_port) {
          EXPECT_EQ(nodelay, 1) << "the socket that accepted this test's connection";
          ++accepted_checked;
        }
      }
      close(fd);
    }
  }
  close(pidfd);
  close(conn);
  EXPECT_EQ(listening_checked, 1);
  EXPECT_EQ(accepted_checked, 1);
}

TEST_F(ServeE2E, WrongTokenIsRefusedAndTcpWithoutTokenDoesNotStart) {
  httplib::Client anonymous("127.0.0.1", port);
  EXPECT_EQ(anonymous.Post("/v1/run", R"j({"language":"python","code":"print(1)"})j", "application/json")->status, 401);
  unsetenv("SANDCELL_TOKEN");
  Finished r = run_sandcell_with_store({"serve", "--listen", "127.0.0.1:" + std::to_string(free_tcp_port())});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("needs a bearer token"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandcell::test
