#pragma once
// Protocol versions, error codes and result shapes of MCP (modelcontextprotocol.io/specification).
#include <optional>
#include <string>
#include <vector>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service::mcp {

// Versions with the initialize handshake, newest first.
inline const std::vector<std::string> kHandshakeVersions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
// Stateless versions: no handshake, every request carries its version in _meta.
inline const std::vector<std::string> kStatelessVersions = {"2026-07-28"};

inline constexpr const char* kMetaProtocolVersion = "io.modelcontextprotocol/protocolVersion";
inline constexpr const char* kMetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities";
inline constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kUnsupportedProtocolVersion = -32022;  // 2026-07-28

// Every version we answer to, stateless first: what server/discover and -32022 advertise, so a
// client that speaks both eras learns it may fall back to initialize.
std::vector<std::string> supported_versions();

// initialize: the client's version when we speak it, else our newest handshake version.
std::string negotiate(const std::string& requested);

// A JSON-RPC failure to send back as the error object.
struct RpcError {
  int code{};
  std::string message{};
  Json data{};
  Json to_json() const;
};

// Checks the _meta of a stateless request: nullopt when it may proceed.
std::optional<RpcError> check_stateless_meta(const Json& meta);

}  // namespace sandcell::agent_service::mcp
