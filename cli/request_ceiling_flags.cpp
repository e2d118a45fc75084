#include "request_ceiling_flags.hpp"

#include <unistd.h>

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
      "Most disk a request's workspace may ask for (k/m/g; README, Disk limits)");
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

}  // namespace sandcell::cli
