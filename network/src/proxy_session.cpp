// One client of the proxy: read the request head, decide, connect to a checked address, then
// either tunnel (CONNECT) or forward the one request and relay its response (plain HTTP).
#include <netinet/in.h>

#include <array>
#include <cstring>

#include "destination.hpp"
#include "owned_fd.hpp"
#include "proxy_request.hpp"
#include "proxy_state.hpp"
#include "socket_io.hpp"

namespace sandcell::network {
namespace {

const char* status_text(int status) {
  switch (status) {
    case 400:
      return "Bad Request";
    case 403:
      return "Forbidden";
    case 431:
      return "Request Header Fields Too Large";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::string host_header(const std::string& host, uint16_t port) {
  const std::string name = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return port == 80 ? name : name + ":" + std::to_string(port);
}

class Session {
 public:
  Session(Proxy::State& state, int client)
      : state_(state),
        client_(client),
        limits_{.stop_fd = state.stop_event.get(), .idle = state.config.idle_timeout},
        parser_(state.config.max_header_bytes) {}

  void run() {
    if (!read_head()) return;
    const auto& head = *parser_.head();
    const Verdict verdict = check_destination(state_.config, head.host, head.port, head.connect);
    state_.record({.host = verdict.host,
                   .port = head.port,
                   .reason = verdict.reason,
                   .allowed = verdict.allowed});
    if (!verdict.allowed)
      return send_refusal(client_, verdict.status, verdict.reason, limits_.stop_fd);
    const OwnedFd upstream(connect_checked(verdict.addresses, head.port));
    if (!upstream) {
      return send_refusal(client_, 502, std::string("connect failed: ") + std::strerror(errno),
                          limits_.stop_fd);
    }
    if (head.connect) return tunnel(upstream.get());
    forward(upstream.get(), host_header(verdict.host, head.port));
  }

 private:
  // Reads until the head is complete. False when the client is gone or was refused.
  bool read_head() {
    while (!parser_.head() && !parser_.error()) {
      const auto n = receive_some(client_, buffer_.data(), buffer_.size(), limits_);
      if (!n || *n == 0) {
        if (received_) refuse_request(400, "incomplete request");
        return false;
      }
      received_ = true;
      const size_t used = parser_.feed_head(buffer_.data(), *n);
      pending_.assign(buffer_.data() + used, *n - used);
    }
    if (parser_.error()) {
      refuse_request(parser_.error()->status, parser_.error()->reason);
      return false;
    }
    return true;
  }

  void refuse_request(int status, const std::string& reason) {
    state_.record({.host = "", .port = 0, .reason = reason, .allowed = false});
    send_refusal(client_, status, reason, limits_.stop_fd);
  }

  int connect_checked(const std::vector<IpAddress>& addresses, uint16_t port) {
    int fd = -1;
    for (const auto& address : addresses) {
      fd = connect_to(address, port, state_.config.connect_timeout, limits_.stop_fd);
      if (fd >= 0) break;
    }
    return fd;
  }

  // Feeds the rest of the request to the parser, sending its body to `sink`, until the message
  // is complete. Leaves the bytes after it in pending_. False if the client or the sink failed.
  bool finish_message(const std::function<bool(std::string_view)>& sink) {
    while (true) {
      const size_t used = parser_.feed_body(pending_.data(), pending_.size(), sink);
      pending_.erase(0, used);
      if (parser_.message_complete()) return true;
      if (parser_.error()) return false;
      const auto n = receive_some(client_, buffer_.data(), buffer_.size(), limits_);
      if (!n || *n == 0) return false;
      pending_.append(buffer_.data(), *n);
    }
  }

  void tunnel(int upstream) {
    if (!finish_message([](std::string_view) { return false; })) return;
    if (!send_all(client_, "HTTP/1.1 200 Connection established\r\n\r\n", limits_)) return;
    if (!send_all(upstream, pending_, limits_)) return;  // e.g. a TLS ClientHello sent early
    relay(client_, upstream, limits_);
  }

  void forward(int upstream, const std::string& host) {
    if (!send_all(upstream, parser_.upstream_head(host), limits_)) return;
    const auto to_upstream = [&](std::string_view data) {
      return send_all(upstream, data, limits_);
    };
    if (!finish_message(to_upstream)) return;
    // One request per connection: bytes after it are never forwarded, since they would reach the
    // checked address under another Host header.
    relay_response(upstream, client_, limits_);
  }

  Proxy::State& state_;
  int client_;
  IoLimits limits_;
  RequestParser parser_;
  std::array<char, 16 * 1024> buffer_{};
  std::string pending_;
  bool received_ = false;
};

}  // namespace

void send_refusal(int fd, int status, const std::string& reason, int stop_fd) {
  const std::string body = reason + "\n";
  const std::string response =
      "HTTP/1.1 " + std::to_string(status) + " " + status_text(status) +
      "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + body;
  const IoLimits limits{.stop_fd = stop_fd, .idle = std::chrono::seconds(2)};
  if (!send_all(fd, response, limits)) return;
  // Lingering close: closing with unread request bytes would send a RST that can destroy the
  // response before the client reads it. Drain a bounded amount first.
  shutdown(fd, SHUT_WR);
  std::array<char, 4096> sink{};
  const IoLimits drain{.stop_fd = stop_fd, .idle = std::chrono::milliseconds(500)};
  for (size_t total = 0; total < 256 * 1024;) {
    const auto n = receive_some(fd, sink.data(), sink.size(), drain);
    if (!n || *n == 0) break;
    total += *n;
  }
}

void serve_client(Proxy::State& state, int client_fd) {
  try {
    Session(state, client_fd).run();
  } catch (const std::exception&) {
    // Out of memory or threads: this client loses its connection, the proxy keeps serving.
  }
}

}  // namespace sandcell::network
