#pragma once
// The proxy's decision about one request: allowlist (host and port), then the proxy's own
// resolution, then the address policy and the host's own addresses on every resolved address.
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/network/proxy.hpp"

namespace sandcell::network {

struct Verdict {
  bool allowed = false;
  int status = 403;                  // the HTTP status of a refusal
  std::string host;                  // normalised when it could be
  std::string reason;                // "allowed", "not in allowlist", ...
  std::vector<IpAddress> addresses;  // checked addresses, to connect to in order
};

// `connect`: a CONNECT tunnel, else a plain HTTP request (the two default ports differ).
Verdict check_destination(const ProxyConfig& config, std::string_view requested_host,
                          uint16_t port, bool connect);

}  // namespace sandcell::network
