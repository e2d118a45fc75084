#include "sandcell/agent_service/http_api.hpp"

#include <httplib.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <thread>

#include "http/admission_gate.hpp"
#include "http/guarded_server.hpp"
#include "http/routes.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::agent_service {

// Outside the anonymous namespace: HttpApi::State, declared in the header, holds one.
struct ListenAddress {
  std::string unix_path;  // set for unix:PATH
  std::string host;
  int port = 0;
};

namespace {

ListenAddress parse_listen(const std::string& listen) {
  if (listen.rfind("unix:", 0) == 0) {
    if (listen.size() == 5) throw Error::invalid("--listen unix: needs a socket path");
    return {listen.substr(5), "", 0};
  }
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0)
    throw Error::invalid("--listen '" + listen + "': expected HOST:PORT or unix:PATH");
  auto port = parse_number<uint16_t>(std::string_view(listen).substr(colon + 1));
  if (!port) throw Error::invalid("--listen '" + listen + "': the port must be a number from 0 to 65535");
  std::string host = listen.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return {"", host, *port};
}

}  // namespace

struct HttpApi::State {
  Executor& executor;
  HttpApiOptions options;
  ListenAddress address;
  AdmissionGate gate;
  GuardedServer server;
  int listen_fd = -1;  // httplib's listening socket, seen through its socket-options hook
};

namespace {

ConnectionBounds connection_bounds(const HttpApiOptions& options) {
  if (!(options.head_timeout_seconds > 0) || options.max_connections_per_client < 1)
    throw Error::invalid("--header-timeout must be positive and --max-connections-per-client at least 1");
  return {.head_timeout = std::chrono::milliseconds(static_cast<int64_t>(options.head_timeout_seconds * 1000)),
          .max_connections_per_client = options.max_connections_per_client,
          .max_body_bytes = options.max_body_bytes};
}

// Every queued request waits in a worker thread, so the pool holds running + queued + a few for
// health checks and 429 answers; otherwise httplib's own unbounded queue would hide the limit.
// No thread ever waits for a request head (GuardedServer reads heads apart), so idle or slow
// sockets, however many, take none of them.
size_t worker_threads(const HttpApiOptions& options) {
  if (options.max_running < 1 || options.max_queued < 0)
    throw Error::invalid("--max-running must be at least 1 and --max-queued at least 0");
  return static_cast<size_t>(options.max_running + options.max_queued + 4);
}

// Debian's libcpp-httplib 0.11.4 is compiled with CPPHTTPLIB_LISTEN_BACKLOG 5. Fifty clients
// connecting at once overflow that accept queue; the kernel then drops handshakes or answers
// with SYN cookies, and a client can see its connection reset before any reply (the
// ServeE2E load test did, ~1 run in 5). listen() again on the bound socket raises the backlog.
void widen_backlog(int fd) {
  if (fd >= 0 && ::listen(fd, SOMAXCONN) != 0) throw Error(errno, "listen backlog of the HTTP socket");
}

}  // namespace

HttpApi::HttpApi(Executor& executor, HttpApiOptions options)
    : state_(new State{executor, options, parse_listen(options.listen), AdmissionGate(options.max_running, options.max_queued),
                       GuardedServer(connection_bounds(options), worker_threads(options))}) {
  State& s = *state_;
  if (s.address.unix_path.empty() && s.options.token.empty())
    throw Error::invalid("serving on TCP needs a bearer token: --token or $SANDCELL_TOKEN (or listen on unix:PATH)");
  s.server.set_payload_max_length(s.options.max_body_bytes);
  // An answer's head and body leave in two writes. With Nagle's algorithm the body waited for
  // the ACK of the head, which a client on a busy keep-alive connection delays (~40 ms on
  // Linux): back-to-back requests on one connection took 72 ms instead of 34 (cold print(1)).
  // Accepted sockets inherit the listening socket's TCP_NODELAY.
  s.server.set_tcp_nodelay(true);
  s.server.set_socket_options([&s](socket_t sock) {
    httplib::default_socket_options(sock);
    s.listen_fd = sock;
  });
  if (!s.address.unix_path.empty()) s.server.set_address_family(AF_UNIX);
  add_request_guards(s.server, s.options, s.address.unix_path.empty());
  add_routes(s.server, s.executor, s.gate, s.options);
}

HttpApi::~HttpApi() {
  if (!state_->address.unix_path.empty()) ::unlink(state_->address.unix_path.c_str());
}

int HttpApi::bind() {
  State& s = *state_;
  if (!s.address.unix_path.empty()) {
    ::unlink(s.address.unix_path.c_str());  // a stale socket of an earlier server
    mode_t old = ::umask(0177);              // the socket is the credential: owner only
    bool ok = s.server.bind_to_port(s.address.unix_path, 80);
    ::umask(old);
    if (!ok) throw Error(errno ? errno : EADDRINUSE, "listen on unix:" + s.address.unix_path);
    widen_backlog(s.listen_fd);
    return 0;
  }
  if (s.address.port == 0) {
    int port = s.server.bind_to_any_port(s.address.host);
    if (port < 0) throw Error(errno ? errno : EADDRINUSE, "listen on " + s.address.host);
    widen_backlog(s.listen_fd);
    return port;
  }
  if (!s.server.bind_to_port(s.address.host, s.address.port))
    throw Error(errno ? errno : EADDRINUSE, "listen on " + s.options.listen);
  widen_backlog(s.listen_fd);
  return s.address.port;
}

void HttpApi::serve() { state_->server.listen_after_bind(); }

void HttpApi::stop() { state_->server.stop(); }

int serve_http_until_signal(Executor& executor, const HttpApiOptions& options) {
  // Blocked before any thread starts, so every thread inherits the mask and only sigwait
  // below sees SIGTERM/SIGINT (the runner's children get a clean mask at spawn).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  HttpApi api(executor, options);
  int port = api.bind();
  std::cerr << "sandcell serve: listening on "
            << (options.listen.rfind("unix:", 0) == 0 ? options.listen : options.listen.substr(0, options.listen.rfind(':') + 1) + std::to_string(port))
            << std::endl;
  std::atomic<bool> serving{true};
  std::thread waiter([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    if (!serving.exchange(false)) return;  // woken by the main thread below
    std::cerr << "sandcell serve: " << strsignal(sig) << ", finishing running requests" << std::endl;
    api.stop();
  });
  api.serve();
  bool stopped_by_signal = !serving.exchange(false);
  // Wakes a waiter still in sigwait (serve ended without a signal); a no-op when it returned.
  pthread_kill(waiter.native_handle(), SIGTERM);
  waiter.join();
  if (!stopped_by_signal) {
    // cpp-httplib ends its accept loop when accept() fails for a reason other than EMFILE.
    std::cerr << "sandcell: serve: the listening socket failed; stopped after finishing the running requests" << std::endl;
    return 125;
  }
  std::cerr << "sandcell serve: stopped" << std::endl;
  return 0;
}

}  // namespace sandcell::agent_service
