#pragma once
// The operator's ceilings on what a request may ask (agent/request_ceilings.hpp) as flags:
// `sandcell code` has none unless given (its user is the operator); `serve`, `mcp` and `agent`
// take requests from others and start with safe ones, which they pass to every run.
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "sandcell/agent/request_ceilings.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::cli {

// Adds --max-memory, --max-timeout, --max-pids, --max-cpus, --max-output, --max-disk and
// --allowed-net. With server_defaults, `ceilings` is first set to the defaults a server runs with.
void add_ceiling_flags(CLI::App* cmd, agent::RequestCeilings& ceilings, bool server_defaults);

// The same ceilings as `sandcell code` flags, for the executor's command line.
std::vector<std::string> ceiling_args(const agent::RequestCeilings& ceilings);

// A server's workspaces (README "Disk limits"): `--disk`, the bound of a request that asks for
// none, and the bounds on sessions (`--sessions-max`, `--sessions-max-bytes`), which every
// `sandcell code` the server starts applies.
struct WorkspaceFlags {
  std::optional<std::string> disk, sessions_max, sessions_max_bytes;
};
void add_workspace_flags(CLI::App* cmd, WorkspaceFlags& flags);
// Throws Error::invalid on a bad size or count, or a --disk over --max-disk (every request that
// asks for no disk would be refused).
void check_workspace_flags(const WorkspaceFlags& flags, const agent::RequestCeilings& ceilings);
// What a server's executor runs `sandcell code` with: the ceilings, the session bounds, and
// --disk for requests without one; `pool`: the warm pool's (none: every request cold).
agent_service::SubprocessExecutorOptions executor_options(const std::string& sandcell_bin,
                                                          const std::string& root,
                                                          const agent::RequestCeilings& ceilings,
                                                          const WorkspaceFlags& workspace,
                                                          agent_service::PoolOptions pool = {});

}  // namespace sandcell::cli
