#pragma once
// Non-blocking socket I/O for the proxy's client threads: every wait also watches the proxy's stop
// eventfd and an idle deadline, so stop() and silent peers never leave a thread blocked.
#include <chrono>
#include <cstddef>
#include <optional>
#include <string_view>

#include "sandcell/network/address_policy.hpp"

namespace sandcell::network {

struct IoLimits {
  int stop_fd = -1;
  std::chrono::milliseconds idle{std::chrono::seconds(60)};
};

// Bytes received (0 at EOF), or nullopt on error, timeout or stop.
std::optional<size_t> receive_some(int fd, char* buffer, size_t size, const IoLimits& limits);
bool send_all(int fd, std::string_view data, const IoLimits& limits);
// A connected non-blocking TCP socket to address:port, or -1 (errno set).
int connect_to(const IpAddress& address, uint16_t port, std::chrono::milliseconds timeout,
               int stop_fd);
// Copies both directions until both have closed, on error, idle timeout or stop.
void relay(int client, int upstream, const IoLimits& limits);
// Copies upstream → client until upstream closes (a forwarded plain-HTTP response).
void relay_response(int upstream, int client, const IoLimits& limits);

}  // namespace sandcell::network
