#include "request_ceiling_flags.hpp"

#include <unistd.h>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::cli {

void add_ceiling_flags(CLI::App* cmd, agent::RequestCeilings& c, bool server_defaults) {
  if (server_defaults)
    c = {.memory = "2g",
         .timeout = "300",
         .pids = "1024",
         .cpus = std::to_string(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN))),
         .output = "16m",
         .net = "none",
         .disk = "1g"};
  const char* none = server_defaults ? "" : " [no limit]";
  auto add = [&](const char* flag, std::optional<std::string>& value, const std::string& help) {
    auto* opt = cmd->add_option(flag, value, help + none);
    if (server_defaults) opt->default_str(*value);
  };
  add("--max-memory", c.memory, "Most memory a request may ask for (k/m/g)");
  add("--max-timeout", c.timeout, "Longest wall-clock limit a request may ask for, in seconds");
  add("--max-pids", c.pids, "Most processes + threads a request may ask for");
  add("--max-cpus", c.cpus, "Most CPU bandwidth a request may ask for, in cores");
  add("--max-output", c.output, "Most output per stream a request may have kept (k/m/g)");
  add("--max-disk", c.disk,
      "Most disk a request's workspace (--docker-api: a container's writable layer, "
      "StorageOpt size, and a volume, `volume create --opt size=`) may ask for (k/m/g; README, "
      "Disk limits)");
  add("--allowed-net", c.net,
      "Widest network a request may ask for: none, allow:HOST[,HOST...], full");
}

std::vector<std::string> ceiling_args(const agent::RequestCeilings& c) {
  std::vector<std::string> args;
  for (auto [flag, value] : {std::pair{"--max-memory", c.memory},
                             {"--max-timeout", c.timeout},
                             {"--max-pids", c.pids},
                             {"--max-cpus", c.cpus},
                             {"--max-output", c.output},
                             {"--max-disk", c.disk},
                             {"--allowed-net", c.net}})
    if (value) args.insert(args.end(), {flag, *value});
  return args;
}

void add_workspace_flags(CLI::App* cmd, WorkspaceFlags& f) {
  cmd->add_option("--disk", f.disk,
                  "Workspace bound of a request that asks for none (--docker-api: of a container "
                  "created without StorageOpt size, and of a volume created without --opt size) "
                  "(k/m/g), at most --max-disk "
                  "[1g, lowered to --max-disk]");
  cmd->add_option("--sessions-max", f.sessions_max,
                  "At most this many sessions; a new one removes the least recently used idle "
                  "ones, or is refused [64]");
  cmd->add_option("--sessions-max-bytes", f.sessions_max_bytes,
                  "The sessions' disk bounds together at most this (k/m/g) [16g]");
}

void check_workspace_flags(const WorkspaceFlags& f, const agent::RequestCeilings& ceilings) {
  if (f.sessions_max) runtime::parse_positive_number(*f.sessions_max, "--sessions-max");
  if (f.sessions_max_bytes) runtime::parse_size(*f.sessions_max_bytes, "--sessions-max-bytes");
  if (!f.disk) return;
  const uint64_t disk = runtime::parse_size(*f.disk, "--disk");
  if (ceilings.disk && disk > runtime::parse_size(*ceilings.disk, "--max-disk"))
    throw Error::invalid("--disk " + *f.disk + " is over --max-disk " + *ceilings.disk);
}

agent_service::SubprocessExecutorOptions executor_options(const std::string& sandcell_bin,
                                                          const std::string& root,
                                                          const agent::RequestCeilings& ceilings,
                                                          const WorkspaceFlags& workspace,
                                                          agent_service::PoolOptions pool) {
  agent_service::SubprocessExecutorOptions options{
      .sandcell_bin = sandcell_bin, .root = root, .code_flags = ceiling_args(ceilings),
      .default_disk = workspace.disk, .pool = std::move(pool)};
  for (auto [flag, value] : {std::pair{"--sessions-max", workspace.sessions_max},
                             {"--sessions-max-bytes", workspace.sessions_max_bytes}})
    if (value) options.code_flags.insert(options.code_flags.end(), {flag, *value});
  return options;
}

}  // namespace sandcell::cli
