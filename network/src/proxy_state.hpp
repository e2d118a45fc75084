#pragma once
// What the proxy's listener and client threads share.
#include <atomic>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

#include "owned_fd.hpp"
#include "sandcell/network/proxy.hpp"

namespace sandcell::network {

class Proxy::State {
 public:
  explicit State(ProxyConfig c) : config(std::move(c)) {}

  void record(ProxyDecision decision);
  std::vector<ProxyDecision> decisions() const;
  uint64_t allowed_count() const;
  uint64_t blocked_count() const;

  // Runs on the listener thread until the stop event fires, then joins every client thread.
  void accept_loop(const std::shared_ptr<State>& self);

  const ProxyConfig config;
  OwnedFd listener;
  OwnedFd stop_event;  // eventfd: readable once stop() was called; every wait watches it
  uint16_t port = 0;
  std::thread listener_thread;
  std::atomic<bool> stopped{false};

 private:
  struct Client {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap_finished_clients();
  void start_client(const std::shared_ptr<State>& self, int fd);

  mutable std::mutex mutex_;
  std::vector<ProxyDecision> log_;
  uint64_t allowed_ = 0;
  uint64_t blocked_ = 0;
  std::list<Client> clients_;  // listener thread only
};

// Serves one client connection (one request, then its tunnel or response). Never throws.
void serve_client(Proxy::State& state, int client_fd);
// Writes a complete error response: status line, one-line reason body, "Connection: close".
void send_refusal(int fd, int status, const std::string& reason, int stop_fd);

}  // namespace sandcell::network
