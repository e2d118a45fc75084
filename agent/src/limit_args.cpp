#include "sandcell/agent/limit_args.hpp"

#include "sandcell/base/error.hpp"

namespace sandcell::agent {

LimitArgs merge(const LimitArgs& base, const LimitArgs& over) {
  return {.memory = over.memory ? over.memory : base.memory,
          .pids = over.pids ? over.pids : base.pids,
          .cpus = over.cpus ? over.cpus : base.cpus,
          .timeout = over.timeout ? over.timeout : base.timeout,
          .cpu_time = over.cpu_time ? over.cpu_time : base.cpu_time,
          .output_limit = over.output_limit ? over.output_limit : base.output_limit,
          .disk = over.disk ? over.disk : base.disk};
}

void apply_limit_args(const LimitArgs& a, runtime::Limits& limits) {
  if (a.memory) limits.memory_bytes = runtime::parse_size(*a.memory, "--memory");
  if (a.pids) limits.pids = static_cast<uint64_t>(runtime::parse_positive_number(*a.pids, "--pids"));
  if (a.cpus) limits.cpus = runtime::parse_positive_number(*a.cpus, "--cpus");
  if (a.timeout) limits.wall_s = runtime::parse_positive_number(*a.timeout, "--timeout");
  if (a.cpu_time) limits.cpu_s = runtime::parse_positive_number(*a.cpu_time, "--cpu-time");
  if (a.output_limit) limits.output_bytes = runtime::parse_size(*a.output_limit, "--output-limit");
  if (a.disk) limits.disk_bytes = runtime::parse_size(*a.disk, "--disk");
}

void apply_network_args(const NetworkArgs& args, runtime::Spec& spec) {
  runtime::set_network_arg(args.net, !args.allow_file.empty(), spec);
  spec.network_policy.allow_file = args.allow_file;
  spec.network_policy.hosts_file = args.hosts_file;
  spec.network_policy.allow_cidrs = args.allow_cidrs;
}

}  // namespace sandcell::agent
