#pragma once
// The operator's ceilings on what a request may ask (agent/request_ceilings.hpp) as flags:
// `sandcell code` has none unless given (its user is the operator); `serve`, `mcp` and `agent`
// take requests from others and start with safe ones, which they pass to every run.
#include <memory>
#include <string>
#include <vector>

#include "commands.hpp"
#include "sandcell/agent/request_ceilings.hpp"

namespace sandcell::cli {

// Adds --max-memory, --max-timeout, --max-pids, --max-cpus, --max-output, --max-disk and
// --allowed-net. With server_defaults, `ceilings` is first set to the defaults a server runs with.
void add_ceiling_flags(CLI::App* cmd, agent::RequestCeilings& ceilings, bool server_defaults);

// The same ceilings as `sandcell code` flags, for the executor's command line.
std::vector<std::string> ceiling_args(const agent::RequestCeilings& ceilings);

}  // namespace sandcell::cli
