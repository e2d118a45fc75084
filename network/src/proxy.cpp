// The proxy's listener: one thread accepting, one thread per client, at most max_clients at once.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "proxy_state.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

constexpr size_t kMaxLoggedDecisions = 4096;

OwnedFd listen_on(const std::string& address, uint16_t port) {
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &sin.sin_addr) != 1) {
    throw Error::invalid("proxy listen address is not IPv4: " + address);
  }
  const std::string where = "proxy on " + address + ":" + std::to_string(port);
  OwnedFd fd(static_cast<int>(
      check(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), "socket for " + where)));
  const int one = 1;
  check(setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one), "SO_REUSEADDR " + where);
  check(bind(fd.get(), reinterpret_cast<sockaddr*>(&sin), sizeof sin), "bind " + where);
  check(listen(fd.get(), 128), "listen " + where);
  return fd;
}

uint16_t bound_port(int fd) {
  sockaddr_in sin{};
  socklen_t length = sizeof sin;
  check(getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &length), "getsockname of the proxy");
  return ntohs(sin.sin_port);
}

}  // namespace

void Proxy::State::record(ProxyDecision decision) {
  std::lock_guard lock(mutex_);
  ++(decision.allowed ? allowed_ : blocked_);
  if (log_.size() < kMaxLoggedDecisions) log_.push_back(std::move(decision));
}

std::vector<ProxyDecision> Proxy::State::decisions() const {
  std::lock_guard lock(mutex_);
  return log_;
}

uint64_t Proxy::State::allowed_count() const {
  std::lock_guard lock(mutex_);
  return allowed_;
}

uint64_t Proxy::State::blocked_count() const {
  std::lock_guard lock(mutex_);
  return blocked_;
}

void Proxy::State::reap_finished_clients() {
  for (auto it = clients_.begin(); it != clients_.end();) {
    if (!it->done->load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = clients_.erase(it);
  }
}

void Proxy::State::start_client(const std::shared_ptr<State>& self, int fd) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  try {
    clients_.push_back(Client{.thread = std::thread([self, fd, done] {
                                OwnedFd owned(fd);
                                serve_client(*self, fd);
                                done->store(true);
                              }),
                              .done = done});
  } catch (const std::system_error&) {
    close(fd);  // no thread: the client just loses its connection
  }
}

void Proxy::State::accept_loop(const std::shared_ptr<State>& self) {
  while (true) {
    reap_finished_clients();
    pollfd fds[2] = {{.fd = listener.get(), .events = POLLIN, .revents = 0},
                     {.fd = stop_event.get(), .events = POLLIN, .revents = 0}};
    // A timeout, so finished clients are reaped even when nobody connects.
    if (poll(fds, 2, 1000) < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) break;
    if (!(fds[0].revents & POLLIN)) continue;
    const int fd = accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE) poll(nullptr, 0, 100);  // do not spin
      continue;
    }
    if (clients_.size() >= config.max_clients) {
      record({.host = "", .port = 0, .reason = "too many connections", .allowed = false});
      send_refusal(fd, 503, "too many connections", stop_event.get());
      close(fd);
      continue;
    }
    start_client(self, fd);
  }
  for (auto& client : clients_) client.thread.join();
  clients_.clear();
}

Proxy::Proxy(ProxyConfig config) : state_(std::make_shared<State>(std::move(config))) {
  start(listen_on(state_->config.listen_address, state_->config.listen_port));
}

Proxy::Proxy(ProxyConfig config, OwnedFd listener)
    : state_(std::make_shared<State>(std::move(config))) {
  start(std::move(listener));
}

void Proxy::start(OwnedFd listener) {
  state_->listener = std::move(listener);
  state_->port = bound_port(state_->listener.get());
  state_->stop_event = OwnedFd(
      static_cast<int>(check(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK), "eventfd for the proxy")));
  state_->listener_thread = std::thread([state = state_] { state->accept_loop(state); });
}

Proxy::~Proxy() {
  stop();
}

uint16_t Proxy::port() const {
  return state_->port;
}

void Proxy::stop() {
  if (state_->stopped.exchange(true)) return;
  const uint64_t one = 1;
  (void)!write(state_->stop_event.get(), &one, sizeof one);
  if (state_->listener_thread.joinable()) state_->listener_thread.join();
  state_->listener.reset();
}

std::vector<ProxyDecision> Proxy::decisions() const {
  return state_->decisions();
}

std::vector<BlockedConnection> Proxy::blocked() const {
  std::vector<BlockedConnection> out;
  for (const auto& d : state_->decisions()) {
    if (!d.allowed) out.push_back({.host = d.host, .port = d.port, .reason = d.reason});
  }
  return out;
}

uint64_t Proxy::allowed_count() const {
  return state_->allowed_count();
}
uint64_t Proxy::blocked_count() const {
  return state_->blocked_count();
}

}  // namespace sandcell::network
