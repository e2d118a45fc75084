#pragma once
// The 13 limit and confinement flags `run` and `code` share, declared once with one help text
// each: the limits (--memory, --pids, --cpus, --timeout, --cpu-time, --output-limit, --disk), the
// network
// (--net, --net-allow-file, --net-hosts, --net-allow-cidr), --seccomp and --userns. A command
// says where the values go and what its defaults are, which differ (`code` takes most of them
// from the skill).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandcell::cli {

// Each flag's default, shown in brackets at the end of its help text.
struct LimitFlagDefaults {
  std::string memory, pids, cpus, timeout, cpu_time, output_limit, disk, net, seccomp, userns;
};

// Where the values go. Net and Userns: std::string (holding the command's default) or
// std::optional<std::string> (unset: the command decides).
template <typename Net, typename Userns>
struct LimitFlagTargets {
  std::optional<std::string>& memory;
  std::optional<std::string>& pids;
  std::optional<std::string>& cpus;
  std::optional<std::string>& timeout;
  std::optional<std::string>& cpu_time;
  std::optional<std::string>& output_limit;
  std::optional<std::string>& disk;
  Net& net;
  std::string& net_allow_file;
  std::string& net_hosts;
  std::vector<std::string>& net_allow_cidrs;
  std::string& seccomp;
  Userns& userns;
};

template <typename Net, typename Userns>
void add_limit_flags(CLI::App* cmd, const LimitFlagTargets<Net, Userns>& to, const LimitFlagDefaults& d) {
  auto with = [](const char* help, const std::string& fallback) { return help + (" [" + fallback + "]"); };
  cmd->add_option("--memory", to.memory, with("Memory limit, swap off (k/m/g suffixes)", d.memory));
  cmd->add_option("--pids", to.pids, with("Maximum number of processes and threads", d.pids));
  cmd->add_option("--cpus", to.cpus, with("CPU bandwidth in cores, e.g. 0.5", d.cpus));
  cmd->add_option("--timeout", to.timeout, with("Wall-clock limit in seconds", d.timeout));
  cmd->add_option("--cpu-time", to.cpu_time, with("CPU-time limit in seconds, whole process tree", d.cpu_time));
  cmd->add_option("--output-limit", to.output_limit,
                  with("Bytes kept per output stream; more stops the run", d.output_limit));
  cmd->add_option(
      "--disk", to.disk,
      with("What the sandbox may write to disk (k/m/g/t); past it writes fail with ENOSPC "
           "(README, Disk limits)",
           d.disk));
  cmd->add_option("--net", to.net,
                  with("Network policy: none (loopback only), allow:ENTRY[,ENTRY...] (only these hosts, "
                       "through sandcell's proxy), or full (NAT, without private and metadata ranges). An "
                       "entry is HOST (CONNECT to 443 and plain HTTP to 80 only), HOST:PORT, HOST:LOW-HIGH, "
                       "*.DOMAIN[:PORT] for subdomains, or [IPv6]:PORT; e.g. "
                       "allow:pypi.org,*.pythonhosted.org,git.example.com:22",
                       d.net));
  cmd->add_option("--net-allow-file", to.net_allow_file, "More allow: entries, one per line ('#' comments)");
  cmd->add_option("--net-hosts", to.net_hosts,
                  "Hosts file (ADDRESS NAME...) the proxy resolves names from instead of DNS");
  cmd->add_option("--net-allow-cidr", to.net_allow_cidrs,
                  "Open a blocked range (private, CGNAT, link-local...) to allow: and full, e.g. "
                  "10.1.2.0/24 (repeatable; never the host's own addresses or 198.18.0.0/15)")
      ->allow_extra_args(false);
  cmd->add_option("--seccomp", to.seccomp,
                  with("seccomp profile: default (Docker's allowlist, stricter), code (for generated "
                       "code: also no ptrace, raw sockets; other ABIs kill), builtin (deny list), "
                       "unconfined, or a Docker/OCI JSON FILE",
                       d.seccomp));
  cmd->add_option("--userns", to.userns,
                  with("host, or auto: a user namespace of its own whose ids 0-65535 are a range of "
                       "unprivileged host ids no other sandbox holds (bind mounts marked idmap, and "
                       "/workspace, keep their owners)",
                       d.userns))
      ->check(CLI::IsMember({"host", "auto"}));
}

}  // namespace sandcell::cli
