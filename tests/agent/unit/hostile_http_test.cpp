// `sandcell serve` attacked over loopback the way a local user could: slow clients, deep JSON,
// chunked bodies over the limit, and a body that is itself a request after an early answer.
// Raw sockets, since a well-behaved HTTP client cannot send any of it.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "fake_executor.hpp"
#include "http/head_reader.hpp"
#include "sandcell/agent_service/http_api.hpp"

namespace sandcell::agent_service {
namespace {

using Clock = std::chrono::steady_clock;

struct Server {
  HttpApi api;
  int port;
  std::thread thread;
  Server(Executor& executor, HttpApiOptions options)
      : api(executor, std::move(options)), port(api.bind()) {
    thread = std::thread([this] { api.serve(); });
    for (int i = 0; i < 2000; ++i) {
      if (httplib::Client("127.0.0.1", port).Get("/v1/health")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  ~Server() {
    api.stop();
    thread.join();
  }
};

HttpApiOptions options() {
  return {.listen = "127.0.0.1:0",
          .token = "t0ken",
          .max_running = 2,
          .max_queued = 8,
          .max_body_bytes = 1 << 16,
          .head_timeout_seconds = 2,
          .max_connections_per_client = 4};
}

// A connection from `source` (any 127.0.0.0/8 address is loopback: a second client).
int connect_from(int port, const char* source = "127.0.0.1") {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
  inet_pton(AF_INET, source, &local.sin_addr);
  sockaddr_in remote{.sin_family = AF_INET,
                     .sin_port = htons(static_cast<uint16_t>(port)),
                     .sin_addr = {},
                     .sin_zero = {}};
  inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Everything the server sends until it closes the connection, or until `timeout`.
struct Received {
  std::string text;
  bool closed = false;
};
Received read_until_close(int fd, std::chrono::milliseconds timeout) {
  Received r;
  auto until = Clock::now() + timeout;
  char buf[4096];
  while (Clock::now() < until) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 0))) <= 0) break;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) {
      r.closed = true;
      break;
    }
    r.text.append(buf, static_cast<size_t>(n));
  }
  return r;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

std::string health_from(int port, const char* source) {
  int fd = connect_from(port, source);
  if (fd < 0) return "connect failed";
  send_all(fd, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  Received r = read_until_close(fd, std::chrono::seconds(2));
  close(fd);
  return r.text;
}

// 75 connections sending their head one byte a second held every worker thread, and
// /v1/health timed out, no token needed. Now one address has 4 connections (the cap here) with
// the head deadline (2 s here), 12 more with 1 s, and the rest are answered 429 at once; others
// are served meanwhile.
TEST(HostileHttp, SlowClientsCannotStarveHealthAndAreClosedAtTheHeadDeadline) {
  test::FakeExecutor executor;
  Server server(executor, options());
  std::vector<int> slow;
  for (int i = 0; i < 75; ++i) {
    int fd = connect_from(server.port);
    ASSERT_GE(fd, 0);
    slow.push_back(fd);
  }
  auto started = Clock::now();
  std::atomic<bool> stop{false};
  std::thread dribble([&] {
    const std::string head =
        "GET /v1/health HTTP/1.1\r\nHost: slow\r\nX-Pad: aaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    for (size_t i = 0; i < head.size() && !stop; ++i) {
      for (int fd : slow) send(fd, &head[i], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  std::string health = health_from(server.port, "127.0.0.2");
  EXPECT_NE(health.find("200 OK"), std::string::npos)
      << "health from another client starved: '" << health << "'";
  // Every slow connection is closed by the server long before its head is complete (~80 s).
  size_t closed = 0;
  for (int fd : slow) closed += read_until_close(fd, std::chrono::seconds(5)).closed;
  EXPECT_EQ(closed, slow.size());
  EXPECT_LT(Clock::now() - started, std::chrono::seconds(10));
  stop = true;
  dribble.join();
  for (int fd : slow) close(fd);
  EXPECT_NE(health_from(server.port, "127.0.0.1").find("200 OK"), std::string::npos)
      << "the first client is not locked out";
}

// Open server-side descriptors of this process (the server runs in it).
size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Without waiting: the server has closed (or reset) this connection.
bool closed_by_server(int fd) {
  char byte;
  ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

// `count` connections spread over 127.0.0.2 .. 127.0.0.60 (a client with many addresses: each
// one stays under the per-address cap).
std::vector<int> connections_from_many_addresses(int port, int count) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    std::string source = "127.0.0." + std::to_string(2 + i % 59);
    int fd = connect_from(port, source.c_str());
    if (fd < 0) break;
    fds.push_back(fd);
  }
  return fds;
}

// The per-address cap left a hole: with 59 loopback addresses, 200 connections trickling
// their heads held every worker thread for a head timeout each round, and an authenticated
// request waited for them. Heads are now read on their own loop and only complete requests
// reach a worker: the authenticated requests are answered while every slow connection is still
// open (before the first head deadline), and the server releases everything when they close.
TEST(HostileHttp, SlowHeadsFromManyAddressesNeverDelayAuthenticatedWork) {
  test::FakeExecutor executor;
  HttpApiOptions o = options();
  o.head_timeout_seconds = 6;
  Server server(executor, o);
  const size_t fds_before = open_fds();
  std::vector<int> slow = connections_from_many_addresses(server.port, 200);
  ASSERT_EQ(slow.size(), 200u);
  std::atomic<bool> stop{false};
  std::thread dribble([&] {
    const std::string head = "GET /v1/skills HTTP/1.1\r\nHost: slow\r\nX-Pad: " + std::string(400, 'a');
    for (size_t i = 0; i < head.size() && !stop; ++i) {
      for (int fd : slow) send(fd, &head[i], 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  int fd = connect_from(server.port, "127.0.0.1");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd,
                       "GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n"
                       "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n"
                       "Connection: close\r\nContent-Length: 39\r\n\r\n"
                       R"j({"language":"python","code":"print(1)"})j"));
  Received answer = read_until_close(fd, std::chrono::seconds(10));
  close(fd);
  // The ordering is the point: no slow connection has been let go yet when the answer is in.
  size_t still_open = 0;
  for (int s : slow) still_open += !closed_by_server(s);
  EXPECT_EQ(count_of(answer.text, "HTTP/1.1 200"), 2u) << answer.text;
  EXPECT_EQ(still_open, slow.size()) << "the authenticated requests waited for slow heads";
  EXPECT_EQ(executor.requests.size(), 1u);
  stop = true;
  dribble.join();
  for (int s : slow) close(s);
  EXPECT_NE(health_from(server.port, "127.0.0.1").find("200 OK"), std::string::npos);
  for (int i = 0; i < 500 && open_fds() > fds_before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(open_fds(), fds_before) << "the server kept descriptors of closed connections";
}

// After a 401 the server drained the unread request for up to a second on a worker thread: 200
// connections that got their 401 and then sent nothing held every worker for that second, round
// after round. Lingering happens on the head reader now: authenticated work is answered well
// within the first linger.
TEST(HostileHttp, ConnectionsLingeringAfterA401NeverDelayAuthenticatedWork) {
  test::FakeExecutor executor;
  Server server(executor, options());
  std::vector<int> refused = connections_from_many_addresses(server.port, 200);
  ASSERT_EQ(refused.size(), 200u);
  for (int fd : refused)
    send_all(fd, "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto asked = Clock::now();
  int fd = connect_from(server.port, "127.0.0.1");
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n\r\n"));
  Received answer = read_until_close(fd, std::chrono::seconds(10));
  auto waited = Clock::now() - asked;
  close(fd);
  EXPECT_NE(answer.text.find("HTTP/1.1 200"), std::string::npos) << answer.text;
  EXPECT_LT(waited, std::chrono::milliseconds(700)) << "the answer waited for lingering connections";
  for (int r : refused) {
    EXPECT_NE(read_until_close(r, std::chrono::seconds(5)).text.find("HTTP/1.1 401"), std::string::npos);
    close(r);
  }
}

// Without the token a client may only ask /v1/health, without a body, once per connection: a
// health request whose body never comes was read on a worker thread (until the read timeout),
// and pipelined health requests whose answers are never read could fill the socket buffer and
// block the worker writing them.
TEST(HostileHttp, WithoutTheTokenAClientGetsOneBodilessAnswerPerConnection) {
  test::FakeExecutor executor;
  Server server(executor, options());
  int fd = connect_from(server.port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /v1/health HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"));
  Received with_body = read_until_close(fd, std::chrono::seconds(2));
  close(fd);
  EXPECT_NE(with_body.text.find("HTTP/1.1 401"), std::string::npos) << with_body.text;
  EXPECT_TRUE(with_body.closed);
  fd = connect_from(server.port);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(send_all(fd, "GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"));
  Received pipelined = read_until_close(fd, std::chrono::seconds(2));
  close(fd);
  EXPECT_EQ(count_of(pipelined.text, "HTTP/1.1 200"), 1u) << pipelined.text;
  EXPECT_TRUE(pipelined.closed);
}

// The head reader holds a bounded number of connections, whatever their addresses: a new one
// beyond it closes the one nearest its deadline (here the oldest), and only whole heads reach
// the workers.
TEST(HeadReader, FullReaderClosesTheOldestAndHandsOnOnlyWholeHeads) {
  std::mutex mutex;
  std::vector<ParkedConnection> handed;
  HeadReader reader({.max_waiting_connections = 3}, [&](ParkedConnection c) {
    std::lock_guard lock(mutex);
    handed.push_back(std::move(c));
  });
  auto handed_count = [&] {
    std::lock_guard lock(mutex);
    return handed.size();
  };
  std::vector<std::array<int, 2>> pairs(4);
  for (auto& pair : pairs) {
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair.data()), 0);
    reader.park({.fd = pair[1], .client = {}, .buffered = {}, .requests_left = 1}, Parking::NewConnection);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // distinct deadlines
  }
  EXPECT_TRUE(read_until_close(pairs[0][0], std::chrono::seconds(2)).closed) << "the oldest was not closed";
  EXPECT_FALSE(closed_by_server(pairs[3][0]));
  ASSERT_TRUE(send_all(pairs[3][0], "GET / HTTP/1.1\r\nHost: x\r\n"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(handed_count(), 0u) << "a head without its blank line was handed on";
  ASSERT_TRUE(send_all(pairs[3][0], "\r\nbody"));
  for (int i = 0; i < 200 && handed_count() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  reader.stop();
  ASSERT_EQ(handed.size(), 1u);
  EXPECT_EQ(handed[0].buffered, "GET / HTTP/1.1\r\nHost: x\r\n\r\nbody");
  EXPECT_TRUE(read_until_close(pairs[1][0], std::chrono::seconds(2)).closed) << "stop() left one open";
  close(handed[0].fd);
  for (auto& pair : pairs) close(pair[0]);
}

// The bytes of unfinished heads are bounded in all, not only per head: over the bound, the
// connection nearest its deadline goes.
TEST(HeadReader, UnfinishedHeadsTogetherStayWithinTheirByteBound) {
  HeadReader reader({.max_head_bytes = 1000, .max_waiting_head_bytes = 1500}, [](ParkedConnection c) { close(c.fd); });
  std::array<int, 2> first{}, second{};
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, first.data()), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, second.data()), 0);
  reader.park({.fd = first[1], .client = {}, .buffered = {}, .requests_left = 1}, Parking::NewConnection);
  ASSERT_TRUE(send_all(first[0], "GET / HTTP/1.1\r\nX-Pad: " + std::string(800, 'a')));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  reader.park({.fd = second[1], .client = {}, .buffered = {}, .requests_left = 1}, Parking::NewConnection);
  ASSERT_TRUE(send_all(second[0], "GET / HTTP/1.1\r\nX-Pad: " + std::string(800, 'a')));
  EXPECT_TRUE(read_until_close(first[0], std::chrono::seconds(2)).closed) << "1,600 bytes of heads were held";
  EXPECT_FALSE(closed_by_server(second[0]));
  reader.stop();
  close(first[0]);
  close(second[0]);
}

TEST(HeadReader, WholeHeadIsTheFirstBlankCrlfLineAfterTheRequestLine) {
  EXPECT_TRUE(holds_whole_head("GET / HTTP/1.1\r\n\r\n"));
  EXPECT_TRUE(holds_whole_head("GET / HTTP/1.1\r\nA: b\r\n\r\n"));
  EXPECT_TRUE(holds_whole_head("GET / HTTP/1.1\r\nbare\n\r\n"));  // httplib skips the LF line
  EXPECT_FALSE(holds_whole_head("GET / HTTP/1.1\r\nA: b\r\n"));
  EXPECT_FALSE(holds_whole_head("GET / HTTP/1.1\r\nA: b\n\n"));  // no CRLF line: httplib reads on
  EXPECT_FALSE(holds_whole_head("\r\n\r"));
}

// The cap is on connections waiting for a head, not on prompt ones: a burst of clients from one
// address beyond it, each sending its request at once, is served in full.
TEST(HostileHttp, PromptClientsBeyondTheCapAreAllServed) {
  test::FakeExecutor executor;
  Server server(executor, options());
  std::vector<int> fds;
  for (int i = 0; i < 12; ++i) {
    int fd = connect_from(server.port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, "GET /v1/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    fds.push_back(fd);
  }
  for (int fd : fds) {
    EXPECT_NE(read_until_close(fd, std::chrono::seconds(5)).text.find("200 OK"), std::string::npos);
    close(fd);
  }
}

// A 401 (or 413) answered before the body was read, on a connection kept open: the body was
// then read as a second request and served (401 then 200), a request smuggled past the token.
TEST(HostileHttp, EarlyAnswerClosesTheConnectionSoTheBodyIsNeverARequest) {
  test::FakeExecutor executor;
  Server server(executor, options());
  const std::string inner =
      "GET /v1/skills HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n\r\n";
  const std::string unauthorized =
      "POST /v1/run HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(inner.size()) +
      "\r\n\r\n" + inner;
  const std::string too_large =
      "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\n"
      "Content-Length: 999999999\r\n\r\n" +
      inner;
  for (const std::string& attack : {unauthorized, too_large}) {
    int fd = connect_from(server.port);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(send_all(fd, attack));
    Received r = read_until_close(fd, std::chrono::seconds(5));
    close(fd);
    EXPECT_TRUE(r.closed) << "the connection stayed open after: " << r.text;
    EXPECT_EQ(count_of(r.text, "HTTP/1.1 "), 1u) << r.text;
    EXPECT_EQ(r.text.find("200 OK"), std::string::npos) << r.text;
  }
}

// --max-body-mb held for Content-Length only: a chunked body was read whole (300 MiB: 607 MB
// of server memory) and answered 400.
TEST(HostileHttp, ChunkedBodyOverTheLimitGets413) {
  test::FakeExecutor executor;
  Server server(executor, options());
  int fd = connect_from(server.port);
  ASSERT_GE(fd, 0);
  std::string head =
      "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nTransfer-Encoding: "
      "chunked\r\n\r\n";
  ASSERT_TRUE(send_all(fd, head));
  const std::string chunk = "4000\r\n" + std::string(0x4000, 'x') + "\r\n";
  std::thread sender([&] {
    for (int i = 0; i < 64; ++i)  // 1 MiB, 16 times the limit
      if (!send_all(fd, chunk)) break;
    send_all(fd, "0\r\n\r\n");
  });
  Received r = read_until_close(fd, std::chrono::seconds(10));
  shutdown(fd, SHUT_RDWR);
  sender.join();
  close(fd);
  EXPECT_NE(r.text.find("HTTP/1.1 413"), std::string::npos) << r.text.substr(0, 200);
  EXPECT_TRUE(executor.requests.empty());
}

TEST(HostileHttp, ChunkedBodyWithinTheLimitStillRuns) {
  test::FakeExecutor executor;
  Server server(executor, options());
  int fd = connect_from(server.port);
  ASSERT_GE(fd, 0);
  const std::string body = R"j({"language":"python","code":"print(1)"})j";
  char size[16];
  snprintf(size, sizeof size, "%zx", body.size());
  ASSERT_TRUE(send_all(fd,
                       "POST /v1/run HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t0ken\r\nConnection: close\r\n"
                       "Transfer-Encoding: chunked\r\n\r\n" + std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n"));
  Received r = read_until_close(fd, std::chrono::seconds(5));
  close(fd);
  EXPECT_NE(r.text.find("HTTP/1.1 200"), std::string::npos) << r.text;
  EXPECT_EQ(executor.requests.size(), 1u);
}

// A body nested 200,000 levels deep (400 KB) crashed the server in a recursive dump: it is a
// 400 now, refused while it is parsed.
TEST(HostileHttp, DeeplyNestedJsonIsRefusedAtParseTime) {
  test::FakeExecutor executor;
  HttpApiOptions o = options();
  o.max_body_bytes = 1 << 20;
  Server server(executor, o);
  std::string deep = R"j({"language":"python","code":"print(1)","env":)j" + std::string(200000, '[') +
                     std::string(200000, ']') + "}";
  httplib::Client client("127.0.0.1", server.port);
  client.set_bearer_token_auth("t0ken");
  auto res = client.Post("/v1/run", deep, "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_TRUE(executor.requests.empty());
  EXPECT_EQ(httplib::Client("127.0.0.1", server.port).Get("/v1/health")->status, 200);
}

// DELETE /v1/sessions/-h answered "removed" (the ID reached `sessions rm` as an option) and
// the session stayed: an ID starting with '-' or '.' is no session ID, so no route takes it.
TEST(HostileHttp, SessionIdsStartingWithADashOrDotMatchNoRoute) {
  test::FakeExecutor executor;
  Server server(executor, options());
  httplib::Client client("127.0.0.1", server.port);
  client.set_bearer_token_auth("t0ken");
  for (const char* id : {"-h", "--help", ".hidden"}) {
    auto res = client.Delete(std::string("/v1/sessions/") + id);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 404) << id;
    auto put = client.Put(std::string("/v1/sessions/") + id + "/files/a.txt", "x",
                          "application/octet-stream");
    ASSERT_TRUE(put);
    EXPECT_EQ(put->status, 404) << id;
  }
  EXPECT_TRUE(executor.removed_sessions.empty());
  EXPECT_TRUE(executor.requests.empty());
}

}  // namespace
}  // namespace sandcell::agent_service
