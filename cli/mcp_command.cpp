// `sandcell mcp`: an MCP server on stdio (agent/service/mcp_server).
#include "commands.hpp"
#include "pool_flags.hpp"
#include "request_ceiling_flags.hpp"
#include "sandcell/agent_service/mcp_server.hpp"

namespace sandcell::cli {

void add_mcp_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* cmd = app.add_subcommand("mcp", "Serve sandcell's tools (run_code, sessions, files) to an MCP client on stdio");
  auto options = std::make_shared<agent_service::McpServerOptions>();
  auto bin = std::make_shared<std::string>();
  auto ceilings = std::make_shared<agent::RequestCeilings>();
  auto workspace = std::make_shared<WorkspaceFlags>();
  options->version = SANDCELL_VERSION;
  cmd->add_option("--skill", options->default_skill, "Language when a call names none")->capture_default_str();
  cmd->add_option("--max-parallel", options->max_parallel_calls, "Tool calls running at once")->capture_default_str()->check(CLI::PositiveNumber);
  add_ceiling_flags(cmd, *ceilings, true);
  add_workspace_flags(cmd, *workspace);
  auto pool = std::make_shared<PoolFlags>();
  add_pool_flags(cmd, *pool);
  cmd->add_option(
      "--sandcell-bin", *bin,
      "The sandcell executable that runs code [$SANDCELL_BIN, sandcell-images next to this one]");
  cmd->footer(
      "Client configuration (Claude Desktop, Claude Code, Cursor...):\n"
      "  {\"mcpServers\": {\"sandcell\": {\"command\": \"sandcell\", \"args\": [\"mcp\"]}}}\n"
      "Protocol: JSON-RPC 2.0, one message per line on stdin/stdout, logs on stderr;\n"
      "versions 2024-11-05 to 2025-11-25 (initialize) and 2026-07-28 (server/discover, _meta).");
  cmd->callback([&action, options, bin, ceilings, workspace, globals, pool] {
    action = [options, bin, ceilings, workspace, globals, pool] {
      agent::check_ceilings(*ceilings);  // a bad one fails here, not at the first call
      check_workspace_flags(*workspace, *ceilings);
      options->allowed_net = ceilings->net.value_or("full");
      auto executor = agent_service::make_subprocess_executor(
          executor_options(*bin, globals->root, *ceilings, *workspace, pool_options(*pool)));
      return agent_service::serve_mcp_stdio(*executor, *options);
    };
  });
}

}  // namespace sandcell::cli
