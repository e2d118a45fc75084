#include "mcp/mcp_protocol.hpp"

#include <algorithm>

namespace sandcell::agent_service::mcp {

std::vector<std::string> supported_versions() {
  std::vector<std::string> all = kStatelessVersions;
  all.insert(all.end(), kHandshakeVersions.begin(), kHandshakeVersions.end());
  return all;
}

std::string negotiate(const std::string& requested) {
  // The handshake does not exist in the stateless era: a client that sent initialize speaks a
  // handshake version, so never answer with a stateless one.
  bool known = std::find(kHandshakeVersions.begin(), kHandshakeVersions.end(), requested) != kHandshakeVersions.end();
  return known ? requested : kHandshakeVersions.front();
}

Json RpcError::to_json() const {
  Json error{{"code", code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return error;
}

std::optional<RpcError> check_stateless_meta(const Json& meta) {
  const Json version = meta.value(kMetaProtocolVersion, Json());
  if (!version.is_string())
    return RpcError{kInvalidParams, std::string("_meta.") + kMetaProtocolVersion + " must be a string", nullptr};
  bool supported = std::find(kStatelessVersions.begin(), kStatelessVersions.end(), version.get<std::string>()) !=
                   kStatelessVersions.end();
  if (!supported)
    return RpcError{kUnsupportedProtocolVersion, "Unsupported protocol version: " + version.get<std::string>(),
                    Json{{"supported", supported_versions()}, {"requested", version}}};
  if (!meta.contains(kMetaClientCapabilities) || !meta[kMetaClientCapabilities].is_object())
    return RpcError{kInvalidParams, std::string("_meta.") + kMetaClientCapabilities + " is required (an object)", nullptr};
  return std::nullopt;
}

}  // namespace sandcell::agent_service::mcp
