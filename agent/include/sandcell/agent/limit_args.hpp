#pragma once
// Limits and network as a user writes them (`--memory 256m`, `"timeout": 5`), from flags, a
// skill.json or a JSON request, turned into the runtime's Spec in one place.
#include <optional>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::agent {

struct LimitArgs {
  std::optional<std::string> memory{}, pids{}, cpus{}, timeout{}, cpu_time{}, output_limit{},
      disk{};
};

// `over` wins where it is set.
LimitArgs merge(const LimitArgs& base, const LimitArgs& over);

// Parses each set value (runtime::parse_size / parse_positive_number) into `limits`; throws
// Error::invalid naming the flag.
void apply_limit_args(const LimitArgs& args, runtime::Limits& limits);

// The network side of a run: `net` as `--net` takes it, and the operator's refinements.
struct NetworkArgs {
  std::string net = "none";
  std::string allow_file{}, hosts_file{};
  std::vector<std::string> allow_cidrs{};
};
void apply_network_args(const NetworkArgs& args, runtime::Spec& spec);

}  // namespace sandcell::agent
