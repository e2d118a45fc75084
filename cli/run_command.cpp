// `sandcell run`: CLI flags → runtime::Spec → run_sandbox() → output, report, exit code.
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "limit_flags.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::cli {
namespace {

using runtime::Spec;

struct RunFlags {
  std::string rootfs;
  std::optional<std::string> memory, pids, cpus, timeout, cpu_time, output_limit, disk;
  std::vector<std::string> env, mounts, tmpfs, cap_add, command;
  std::optional<std::string> workdir, user, hostname;
  std::string net = "none";
  std::string net_allow_file, net_hosts, net_transport = "auto", net_resolv_conf;
  std::vector<std::string> net_allow_cidrs;
  std::string seccomp = "default";
  std::string userns = "host";
  bool no_denial_report = false;
  std::string report;
  bool json = false;
};

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t pos; (pos = text.find(sep, start)) != std::string::npos; start = pos + 1)
    parts.push_back(text.substr(start, pos - start));
  parts.push_back(text.substr(start));
  return parts;
}

uint32_t parse_id(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || text.size() > 9)
    throw Error::invalid(what + " must be numeric (user names need an image's /etc/passwd): '" + text + "'");
  return parse_number<uint32_t>(text).value();
}

void apply_limits(const RunFlags& f, runtime::Limits& limits) {
  if (f.memory) limits.memory_bytes = runtime::parse_size(*f.memory, "--memory");
  if (f.pids) limits.pids = static_cast<uint64_t>(runtime::parse_positive_number(*f.pids, "--pids"));
  if (f.cpus) limits.cpus = runtime::parse_positive_number(*f.cpus, "--cpus");
  if (f.timeout) limits.wall_s = runtime::parse_positive_number(*f.timeout, "--timeout");
  if (f.cpu_time) limits.cpu_s = runtime::parse_positive_number(*f.cpu_time, "--cpu-time");
  if (f.output_limit) limits.output_bytes = runtime::parse_size(*f.output_limit, "--output-limit");
  if (f.disk) limits.disk_bytes = runtime::parse_size(*f.disk, "--disk");
}

void apply_mounts(const RunFlags& f, Spec& spec) {
  for (const std::string& m : f.mounts) {
    auto parts = split(m, ':');
    if (parts.size() < 2 || parts.size() > 3 || parts[0].empty())
      throw Error::invalid("--mount expects SRC:DST[:ro,idmap], got '" + m + "'");
    runtime::BindMount bind{.source = parts[0], .destination = parts[1]};
    for (const std::string& option :
         parts.size() == 3 ? split(parts[2], ',') : std::vector<std::string>{}) {
      if (option == "ro")
        bind.read_only = true;
      else if (option == "idmap")
        bind.idmap = true;
      else
        throw Error::invalid("--mount expects SRC:DST[:ro,idmap], got '" + m + "'");
    }
    spec.bind_mounts.push_back(bind);
  }
  for (const std::string& t : f.tmpfs) {
    auto parts = split(t, ':');
    if (parts.size() > 2) throw Error::invalid("--tmpfs expects DST[:SIZE], got '" + t + "'");
    runtime::TmpfsMount mount{.destination = parts[0]};
    if (parts.size() == 2) mount.size_bytes = runtime::parse_size(parts[1], "--tmpfs size");
    spec.tmpfs_mounts.push_back(mount);
  }
}

void apply_process(const RunFlags& f, Spec& spec) {
  if (!f.rootfs.empty()) spec.args = f.command;
  for (const std::string& kv : f.env) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) throw Error::invalid("--env expects K=V, got '" + kv + "'");
  }
  if (!f.rootfs.empty()) runtime::merge_env(spec.env, f.env);  // an image run: after apply_image
  if (f.workdir) spec.cwd = *f.workdir;
  if (f.user && !f.rootfs.empty()) {  // an image run resolves --user from the image instead
    auto parts = split(*f.user, ':');
    if (parts.size() > 2) throw Error::invalid("--user expects UID[:GID], got '" + *f.user + "'");
    spec.uid = parse_id(parts[0], "--user UID");
    spec.gid = parts.size() == 2 ? parse_id(parts[1], "--user GID") : spec.uid;
  }
  if (f.hostname) spec.hostname = *f.hostname;
  spec.capabilities = f.cap_add;
  if (f.userns == "auto") spec.user_namespace = runtime::UserNamespace::Auto;
}

// --net none | allow:HOST[,HOST...] | full, and the flags that refine it. The runtime checks
// that they fit together and parses the hosts and ranges.
void apply_network(const RunFlags& f, Spec& spec) {
  runtime::set_network_arg(f.net, !f.net_allow_file.empty(), spec);
  spec.network_policy.allow_file = f.net_allow_file;
  spec.network_policy.hosts_file = f.net_hosts;
  spec.network_policy.allow_cidrs = f.net_allow_cidrs;
  spec.network_policy.transport = runtime::parse_network_transport(f.net_transport);
  spec.network_policy.resolv_conf = f.net_resolv_conf;
}

std::string capability_name(std::string name) {
  for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name.rfind("CAP_", 0) == 0 ? name : "CAP_" + name;
}

// The profile is read (or compiled) by the runtime while the sandbox's child sets up its mounts,
// not before the clone (Spec::seccomp): a cached profile costs ~0.2 ms per start.
void apply_seccomp(const RunFlags& f, Spec& spec) {
  seccomp::ProfileContext context;
  for (const std::string& cap : spec.capabilities) context.capabilities.push_back(capability_name(cap));
  spec.seccomp = seccomp::cached_profile(f.seccomp, std::move(context), {.report_denials = !f.no_denial_report});
}

// `sandcell run IMAGE [CMD...]`: the first word is the image.
std::shared_ptr<void> apply_image(const RunFlags& f, const GlobalOptions& g, Spec& spec) {
  if (!f.rootfs.empty()) return nullptr;
  if (!g.apply_image) throw Error::invalid("this sandcell binary cannot run images; give --rootfs DIR");
  std::vector<std::string> command(f.command.begin() + 1, f.command.end());
  return g.apply_image(f.command.at(0), command, f.user, f.workdir, spec);
}

// --env given on the command line wins over the image's Env.
void apply_process_after_image(const RunFlags& f, Spec& spec) {
  if (!f.rootfs.empty()) return;
  runtime::merge_env(spec.env, f.env);
}

Spec spec_from_flags(const RunFlags& f) {
  Spec spec = runtime::default_spec();
  if (!f.rootfs.empty()) spec.rootfs_layers = {f.rootfs};
  apply_limits(f, spec.limits);
  // The tmpfs upper is all `run` writes outside its bind mounts (README "Disk limits").
  if (spec.limits.disk_bytes) spec.rootfs_upper_bytes = *spec.limits.disk_bytes;
  apply_mounts(f, spec);
  apply_process(f, spec);
  apply_network(f, spec);
  return spec;
}

void write_all(int fd, std::span<const char> data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the reader went away: keep running, drop the output
    data = data.subspan(static_cast<size_t>(n));
  }
}

int run(const RunFlags& flags, const GlobalOptions& globals) {
  Spec spec = spec_from_flags(flags);
  if (spec.network != runtime::NetworkMode::None && !can_load_network_libraries())
    hand_over_to_network_twin();  // a static `sandcell`: the network's libraries need a loader
  std::shared_ptr<void> lease = apply_image(flags, globals, spec);
  apply_process_after_image(flags, spec);
  apply_seccomp(flags, spec);
  std::string captured[2];
  runtime::RunOptions options;
  options.output = [&](runtime::Stream stream, std::span<const char> data) {
    int index = stream == runtime::Stream::Stdout ? 0 : 1;
    if (flags.json) captured[index].append(data.data(), data.size());
    else write_all(index + 1, data);
  };
  runtime::Result result = runtime::run_sandbox(spec, options);
  if (flags.json) {
    result.stdout_text = std::move(captured[0]);
    result.stderr_text = std::move(captured[1]);
  }
  if (flags.json || !flags.report.empty()) {  // building the record costs ~0.05 ms of a start
    const nlohmann::json record = runtime::to_json(result);
    if (!flags.report.empty()) write_report(flags.report, record);
    if (flags.json) std::cout << dump(record) << std::endl;
  }
  if (flags.json) return runtime::exit_code_for(result);
  if (result.status == runtime::Status::RuntimeError)
    std::cerr << "sandcell: " << result.error << "\n";
  else if (result.status != runtime::Status::Ok && result.status != runtime::Status::ExitNonzero &&
           result.status != runtime::Status::Signaled)
    std::cerr << "sandcell: stopped: " << runtime::to_string(result.status) << "\n";
  return runtime::exit_code_for(result);
}

}  // namespace

std::string dump(const nlohmann::json& j) {
  // The program's output may be any bytes: invalid UTF-8 is replaced, never fatal.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_report(const std::string& path, const nlohmann::json& record) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << dump(record) << "\n";
    if (!out.flush()) throw Error(errno ? errno : EIO, "write report " + tmp);
  }
  check(rename(tmp.c_str(), path.c_str()), "rename report to " + path);
}

std::vector<std::string> end_run_options(std::vector<std::string> args, const CLI::App& run) {
  // `sandcell run IMAGE sh -c x`: the words from IMAGE (or CMD) on belong to the program, as with
  // `docker run`; CLI11 would read `-c` as an option of ours, so a `--` goes in front of them.
  // Which options take a value is CLI11's to say: a list kept here would drift from the options.
  size_t i = 0;  // past the global options (`--root DIR`, `--root=DIR`) to the command word
  while (i < args.size() && args[i].rfind("--root", 0) == 0) i += args[i] == "--root" ? 2 : 1;
  if (i >= args.size() || args[i] != "run") return args;  // another command's words are its own
  for (++i; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") break;
    if (arg.rfind("-", 0) == 0) {
      if (arg.find('=') != std::string::npos) continue;  // --memory=1g
      const CLI::Option* option = run.get_option_no_throw(arg);
      // Unknown: named now, before a guess about its value turns the rest into nonsense.
      if (option == nullptr) throw CLI::ExtrasError("run", {arg});
      if (option->get_items_expected_max() > 0) ++i;  // skip its value (flags take none)
      continue;
    }
    args.insert(args.begin() + static_cast<long>(i), "--");
    break;
  }
  return args;
}

void add_run_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<RunFlags>();
  auto* run_cmd = app.add_subcommand(
      "run", "Run a command in a fresh sandbox and report what happened.\n"
             "  sandcell run [OPTIONS] --rootfs DIR -- CMD [ARG...]\n"
             "  sandcell run [OPTIONS] IMAGE [CMD [ARG...]]   (an image in the store)");
  run_cmd->add_option("--rootfs", f->rootfs, "Root filesystem directory (never modified: the run "
                      "sees it through an overlay whose writes are thrown away)");
  add_limit_flags(
      run_cmd,
      LimitFlagTargets<std::string, std::string>{
          f->memory, f->pids, f->cpus, f->timeout, f->cpu_time, f->output_limit, f->disk, f->net,
          f->net_allow_file, f->net_hosts, f->net_allow_cidrs, f->seccomp, f->userns},
      {.memory = "512m",
       .pids = "128",
       .cpus = "1",
       .timeout = "30",
       .cpu_time = "none",
       .output_limit = "1m",
       .disk = "1g: the tmpfs upper, charged to --memory",
       .net = "none",
       .seccomp = "default",
       .userns = "host"});
  run_cmd->add_option("--env", f->env, "Environment variable K=V (repeatable)")->allow_extra_args(false);
  run_cmd->add_option("--workdir", f->workdir, "Working directory inside the sandbox [/]");
  run_cmd->add_option("--user", f->user, "UID[:GID] to run as (names too, with an image) [0:0, or the image's USER; never capabilities]");
  run_cmd->add_option("--hostname", f->hostname, "Hostname inside the sandbox [sandcell]");
  run_cmd
      ->add_option("--mount", f->mounts,
                   "Bind mount SRC:DST[:ro,idmap] (repeatable; idmap: with --userns auto, the "
                   "sandbox's ids are the host's on it)")
      ->allow_extra_args(false);
  run_cmd->add_option("--tmpfs", f->tmpfs, "tmpfs at DST[:SIZE] (repeatable; size default 64m)")->allow_extra_args(false);
  run_cmd->add_option("--net-transport", f->net_transport, "How allow:/full reach the outside: socket "
                      "(allow: the proxy's socket only, no link), veth (veth + nftables, root), slirp "
                      "(full: slirp4netns), auto (allow: socket; full: veth as root, slirp rootless) [auto]");
  run_cmd->add_option("--net-resolv-conf", f->net_resolv_conf, "full: the resolv.conf whose resolvers the "
                      "sandbox gets and may reach on port 53 [/etc/resolv.conf]");
  run_cmd->add_option("--cap-add", f->cap_add, "Keep this capability, e.g. NET_BIND_SERVICE (all are dropped by default)")->allow_extra_args(false);
  run_cmd->add_flag("--no-denial-report", f->no_denial_report,
                    "Let the kernel answer denied syscalls without counting them in the record");
  run_cmd->add_option("--report", f->report, "Write the result record (JSON) to FILE");
  run_cmd->add_flag("--json", f->json, "Print the result record on stdout, with stdout/stderr captured as fields");
  run_cmd->add_option("command", f->command, "IMAGE [CMD [ARG...]], or with --rootfs: CMD [ARG...]. "
                      "Options end at the first word that is not one (or at --)")->required();
  run_cmd->footer(
      "Exit code: the program's own; 128+N if a signal N ended it; 125 if sandcell failed or the\n"
      "input was invalid; 126 if the command is not executable; 127 if it was not found.\n"
      "Statuses in the record: ok exit_nonzero signaled timeout_wall timeout_cpu oom pids_limit\n"
      "output_limit runtime_error.\n"
      "Environment: SANDCELL_STATE=DIR keeps run state there (default /run/sandcell).\n"
      "SANDCELL_NETNS_POOL=0: a --net none run as root makes its network namespace itself and\n"
      "leaves none made ahead for the next run under DIR/netns/ (`sandcell gc` removes those).");
  run_cmd->callback([&action, f, globals] { action = [f, globals] { return run(*f, *globals); }; });
}

}  // namespace sandcell::cli
