#pragma once
// The allowlist proxy of `--net allow:...` (docs/architecture.md, "Network policy"). It runs in the
// supervisor, listening on the host end of the sandbox's veth, and is the only thing the sandbox
// can reach. Per connection it serves exactly one request:
//   CONNECT host:port            → checks, connects, "200 Connection established", then a tunnel
//   GET http://host[:port]/path  → checks, connects, forwards the request in origin-form with
//                                  Host rewritten and "Connection: close", relays the response
//   anything else                → 400
// The check: the host is normalised and matched against the allowlist (IP literals only when
// listed), resolved by the proxy's own resolver, and refused when ANY resolved address is in a
// blocked range (a name that resolves to a public and a metadata address is refused, not
// filtered). The proxy then connects to exactly the address it checked; there is no second
// resolution. Ports: an entry opens its own (HOST:PORT, HOST:LOW-HIGH) or, bare, 443 to CONNECT
// and 80 to plain HTTP (host_policy.hpp). The proxy runs in the host's network namespace, so no
// address of the host itself is ever a destination, whatever --net-allow-cidr opens: asked at
// every request (address_of_this_host), so an allowed name pointed at the host's public address
// cannot reach sshd or anything else listening there.
#include <netinet/in.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/network/host_policy.hpp"
#include "sandcell/network/resolver.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::network {

struct ProxyConfig {
  std::string listen_address = "127.0.0.1";  // IPv4: the host end of the veth in a real run
  uint16_t listen_port = 0;                  // 0: the kernel picks one; see Proxy::port()
  Allowlist allowlist;
  AddressPolicy address_policy;
  // The host's own addresses, checked on every resolved address after address_policy. Unit tests
  // whose upstream listens on loopback give a narrower one.
  std::function<std::optional<std::string>(const IpAddress&)> host_address = address_of_this_host;
  Resolver resolver = Resolver::system();
  size_t max_clients = 64;  // further connections get 503 and are closed
  size_t max_header_bytes = 16 * 1024;
  std::chrono::milliseconds idle_timeout{std::chrono::seconds(60)};
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
};

// One decision about one request.
struct ProxyDecision {
  std::string host;  // as normalised, or as requested when it could not be normalised
  uint16_t port = 0;
  std::string reason;  // "allowed", "not in allowlist", "ip literal", "bad host: ...", ...
  bool allowed = false;
};

// A refused request, as the result record lists it (the runtime copies these into
// events.blocked_connections).
struct BlockedConnection {
  std::string host;
  uint16_t port = 0;
  std::string reason;
};

class Proxy {
 public:
  // Binds, listens and starts serving before it returns. Throws Error.
  explicit Proxy(ProxyConfig config);
  // Serves on a socket that already listens (config.listen_address/port are ignored): the
  // socket transport's listener, made inside the sandbox's netns. Takes ownership. Throws Error.
  Proxy(ProxyConfig config, runtime::UniqueFd listener);
  ~Proxy();
  Proxy(const Proxy&) = delete;
  Proxy& operator=(const Proxy&) = delete;

  uint16_t port() const;
  // Closes the listener and every client connection and joins all threads. Idempotent.
  void stop();

  // The log keeps the first 4096 decisions; the counters count all of them.
  std::vector<ProxyDecision> decisions() const;
  std::vector<BlockedConnection> blocked() const;
  uint64_t allowed_count() const;
  uint64_t blocked_count() const;

  class State;  // shared with the client threads

 private:
  void start(runtime::UniqueFd listener);
  std::shared_ptr<State> state_;
};

}  // namespace sandcell::network
