#pragma once
// The tools sandcell offers over MCP and how their results become MCP content: text for
// output, image content for PNG artifacts, isError for failures.
#include <optional>
#include <string>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service::mcp {

// `allowed_net`: the operator's network ceiling (none, allow:HOSTS, full), which run_code's
// `net` may not exceed.
Json tool_list(const std::string& allowed_net);

// A CallToolResult ({"content": [...], "isError": bool}), or nullopt for an unknown tool (a
// protocol error for the caller to answer); bad arguments come back as isError results. `stop`
// cancels a running run_code (notifications/cancelled).
std::optional<Json> call_tool(Executor& executor, const std::string& default_skill,
                              const std::string& name, const Json& arguments,
                              std::stop_token stop = {});

}  // namespace sandcell::agent_service::mcp
