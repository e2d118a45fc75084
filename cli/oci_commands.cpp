// The subcommands of sandcell-oci as runc spells them.
#include "oci_commands.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/oci/config.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::cli::oci {
namespace {

namespace o = sandcell::oci;

void add_create_flags(CLI::App* cmd, o::CreateOptions& options) {
  cmd->add_option("-b,--bundle", options.bundle, "Bundle directory (holds config.json)")->capture_default_str();
  cmd->add_option("--pid-file", options.pid_file, "Write the init's pid here");
  cmd->add_option("--console-socket", options.console_socket, "Unix socket that receives the pty master");
  cmd->add_option("--preserve-fds", options.preserve_fds, "Pass fds 3..3+N-1 to the container");
  cmd->add_flag("--no-pivot", options.no_pivot, "MS_MOVE + chroot instead of pivot_root");
  cmd->add_flag("--no-new-keyring")->description("Accepted: sandcell never creates a session keyring");
}

// Runs a program found on PATH and returns its stdout (bounded to 16 MiB); throws if it fails.
std::string run_and_capture(const std::vector<std::string>& argv) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) < 0) throw Error(errno, "pipe for " + argv[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = posix_spawnp(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(out[1]);
  std::string text;
  char buffer[8192];
  for (ssize_t n; err == 0 && (n = read(out[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > (16u << 20)) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(out[0]);
  if (err != 0) throw Error(err, "run " + argv[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error::invalid(argv[0] + " failed (status " + std::to_string(status) + ")");
  return text;
}

CLI::App* with_id(CLI::App& app, const char* name, const char* help, std::string& id) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("id", id, "Container id")->required();
  return cmd;
}

// runc update's flags, each a linux.resources field laid over --resources.
struct UpdateFlags {
  std::string resources;
  std::map<std::string, std::string> values;  // flag name → its text
};

// "--memory" → {"memory", "limit"} with the kind of value it takes.
struct UpdateField {
  const char* flag;
  const char* section;
  const char* key;
  enum Kind { Size, Number, Text } kind;
  const char* help;
};
constexpr UpdateField kUpdateFields[] = {
    {"--memory", "memory", "limit", UpdateField::Size,
     "Memory limit (bytes, or 512m; -1 unlimited)"},
    {"--memory-reservation", "memory", "reservation", UpdateField::Size, "Memory soft limit"},
    {"--memory-swap", "memory", "swap", UpdateField::Size, "Memory plus swap limit (-1 unlimited)"},
    {"--kernel-memory", "memory", "kernel", UpdateField::Size, "Kernel memory limit (v1)"},
    {"--kernel-memory-tcp", "memory", "kernelTCP", UpdateField::Size,
     "Kernel TCP buffer limit (v1)"},
    {"--cpu-shares", "cpu", "shares", UpdateField::Number,
     "CPU shares (v2: converted to cpu.weight as runc does)"},
    {"--cpu-quota", "cpu", "quota", UpdateField::Number, "CFS quota in microseconds"},
    {"--cpu-period", "cpu", "period", UpdateField::Number, "CFS period in microseconds"},
    {"--cpu-burst", "cpu", "burst", UpdateField::Number, "CFS burst in microseconds"},
    {"--cpu-rt-period", "cpu", "realtimePeriod", UpdateField::Number,
     "Refused: no realtime scheduling"},
    {"--cpu-rt-runtime", "cpu", "realtimeRuntime", UpdateField::Number,
     "Refused: no realtime scheduling"},
    {"--cpuset-cpus", "cpu", "cpus", UpdateField::Text, "CPUs allowed (0-3,5)"},
    {"--cpuset-mems", "cpu", "mems", UpdateField::Text, "Memory nodes allowed"},
    {"--pids-limit", "pids", "limit", UpdateField::Number, "Maximum number of processes"},
    {"--blkio-weight", "blockIO", "weight", UpdateField::Number, "Block IO weight (10-1000)"}};

nlohmann::json update_resources(const UpdateFlags& flags) {
  nlohmann::json resources = nlohmann::json::object();
  if (!flags.resources.empty()) {
    std::ifstream file(flags.resources);
    if (flags.resources != "-" && !file)
      throw Error::invalid("--resources: cannot read " + flags.resources);
    std::istream& in = flags.resources == "-" ? std::cin : file;
    try {
      resources = parse_bounded_json(in);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error::invalid("--resources: " + std::string(e.what()));
    }
  }
  for (const char* flag : {"--l3-cache-schema", "--mem-bw-schema"})
    if (flags.values.contains(flag))
      throw Error::invalid(std::string(flag) +
                           ": Intel RDT (linux.intelRdt) is not supported by sandcell-oci");
  for (const UpdateField& field : kUpdateFields) {
    auto it = flags.values.find(field.flag);
    if (it == flags.values.end()) continue;
    const std::string& text = it->second;
    nlohmann::json value;
    if (field.kind == UpdateField::Text)
      value = text;
    else if (text == "-1")
      value = -1;
    else if (field.kind == UpdateField::Size)
      value = runtime::parse_size(text, field.flag);
    else {
      auto n = parse_number<int64_t>(text);
      if (!n) throw Error::invalid(std::string(field.flag) + ": not a number: '" + text + "'");
      value = *n;
    }
    resources[field.section][field.key] = value;
  }
  return resources;
}

void add_update_command(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  auto flags = std::make_shared<UpdateFlags>();
  CLI::App* update = with_id(app, "update", "Change the container's cgroup resources", *id);
  update->add_option("-r,--resources", flags->resources,
                     "OCI linux.resources JSON file ('-' for stdin)");
  for (const UpdateField& field : kUpdateFields)
    update->add_option_function<std::string>(
        field.flag,
        [flags, name = std::string(field.flag)](const std::string& v) { flags->values[name] = v; },
        field.help);
  for (const char* flag : {"--l3-cache-schema", "--mem-bw-schema"})
    update->add_option_function<std::string>(
        flag, [flags, name = std::string(flag)](const std::string& v) { flags->values[name] = v; },
        "Refused: Intel RDT (linux.intelRdt) is not supported");
  update->callback([=, &action] {
    action = [=] {
      o::update(o::StateStore(g->root), *id, update_resources(*flags));
      return 0;
    };
  });
}

// runc's table: ps(1)'s header, then its lines whose PID column is one of the container's.
void print_ps_table(const std::vector<pid_t>& pids, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ps"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string output = run_and_capture(argv);
  std::istringstream lines(output);
  std::string header;
  std::getline(lines, header);
  std::istringstream columns(header);
  size_t pid_column = 0;
  std::string column;
  while (columns >> column && column != "PID") ++pid_column;
  if (column != "PID") throw Error::invalid("ps: its output has no PID column");
  std::cout << header << "\n";
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string field;
    for (size_t i = 0; i <= pid_column && fields >> field; ++i) {
    }
    auto pid = parse_number<pid_t>(field);
    if (pid && std::find(pids.begin(), pids.end(), *pid) != pids.end()) std::cout << line << "\n";
  }
}

// Go's time.Duration text as runc's --interval takes it: "5s", "100ms", "1m", "1h".
std::chrono::milliseconds parse_interval(const std::string& text) {
  size_t digits = text.find_first_not_of("0123456789");
  auto n = parse_number<int64_t>(text.substr(0, digits));
  std::string unit = digits == std::string::npos ? "" : text.substr(digits);
  static const std::map<std::string, int64_t> kMs = {
      {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}};
  if (!n || *n <= 0 || !kMs.contains(unit) || *n > 86400000 / kMs.at(unit))
    throw Error::invalid("--interval: not a duration like 5s or 100ms: '" + text + "'");
  return std::chrono::milliseconds(*n * kMs.at(unit));
}

void add_events_command(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  auto interval = std::make_shared<std::string>("5s");
  auto stats = std::make_shared<bool>(false);
  CLI::App* events =
      with_id(app, "events", "Print the container's stats and OOM events (JSON lines)", *id);
  events->add_option("--interval", *interval, "Time between stats events")->capture_default_str();
  events->add_flag("--stats", *stats, "Print the stats once and exit");
  events->callback([=, &action] {
    action = [=] {
      o::StateStore store(g->root);
      if (*stats)
        std::cout << o::stats_event(store, *id).dump() << std::endl;
      else
        o::watch_events(store, *id, parse_interval(*interval), std::cout);
      return 0;
    };
  });
}

}  // namespace

void add_lifecycle_commands(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  auto create = std::make_shared<o::CreateOptions>();
  with_id(app, "create", "Create a container; its process waits for `start`", *id)->callback([=, &action] {
    action = [=] {
      o::CreateOptions options = *create;
      options.systemd_cgroup = g->systemd_cgroup;
      o::create(o::StateStore(g->root), *id, options);
      return 0;
    };
  });
  add_create_flags(app.get_subcommand("create"), *create);

  auto detach = std::make_shared<bool>(false);
  CLI::App* run = with_id(app, "run", "Create and start; wait for the process unless --detach", *id);
  add_create_flags(run, *create);
  run->add_flag("-d,--detach", *detach, "Return once the process runs");
  run->callback([=, &action] {
    action = [=] {
      o::CreateOptions options = *create;
      options.systemd_cgroup = g->systemd_cgroup;
      return o::run(o::StateStore(g->root), *id, options, *detach);
    };
  });

  with_id(app, "start", "Start a created container", *id)->callback([=, &action] {
    action = [=] { o::start(o::StateStore(g->root), *id); return 0; };
  });

  auto signal = std::make_shared<std::string>("SIGTERM");
  auto all = std::make_shared<bool>(false);
  CLI::App* kill = with_id(app, "kill", "Send a signal (default SIGTERM) to the container's init", *id);
  kill->add_option("signal", *signal, "Signal name or number");
  kill->add_option("-s,--signal", *signal, "Signal name or number");
  kill->add_flag("-a,--all", *all, "Signal every process of the container");
  kill->callback([=, &action] {
    action = [=] { o::kill(o::StateStore(g->root), *id, o::parse_signal(*signal), *all); return 0; };
  });

  auto force = std::make_shared<bool>(false);
  CLI::App* del = with_id(app, "delete", "Delete a stopped (or, with --force, any) container", *id);
  del->add_flag("-f,--force", *force, "Kill a running container first");
  del->callback([=, &action] { action = [=] { o::remove(o::StateStore(g->root), *id, *force); return 0; }; });

  with_id(app, "pause", "Freeze every process of the container", *id)->callback([=, &action] {
    action = [=] { o::pause(o::StateStore(g->root), *id); return 0; };
  });
  with_id(app, "resume", "Thaw a paused container", *id)->callback([=, &action] {
    action = [=] { o::resume(o::StateStore(g->root), *id); return 0; };
  });
}

void add_inspection_commands(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  with_id(app, "state", "Print the container's OCI state JSON", *id)->callback([=, &action] {
    action = [=] { std::cout << o::state(o::StateStore(g->root), *id).dump(2) << "\n"; return 0; };
  });

  auto format = std::make_shared<std::string>("table");
  auto quiet = std::make_shared<bool>(false);
  CLI::App* list = app.add_subcommand("list", "List containers");
  list->add_option("-f,--format", *format, "table or json")->check(CLI::IsMember({"table", "json"}));
  list->add_flag("-q,--quiet", *quiet, "Ids only");
  list->callback([=, &action] {
    action = [=] {
      auto all = o::list(o::StateStore(g->root));
      if (*format == "json") {
        std::cout << nlohmann::json(all).dump() << "\n";
        return 0;
      }
      if (!*quiet) std::cout << "ID\tPID\tSTATUS\tBUNDLE\tCREATED\n";
      for (const auto& c : all)
        if (*quiet) std::cout << c["id"].get<std::string>() << "\n";
        else std::cout << c["id"].get<std::string>() << "\t" << c["pid"] << "\t" << c["status"].get<std::string>()
                       << "\t" << c["bundle"].get<std::string>() << "\t" << c["created"].get<std::string>() << "\n";
      return 0;
    };
  });

  auto ps_format = std::make_shared<std::string>("table");
  auto ps_args = std::make_shared<std::vector<std::string>>();
  CLI::App* ps =
      with_id(app, "ps", "List the container's processes (runc: `ps ID [-- PS-ARGS]`)", *id);
  ps->add_option("-f,--format", *ps_format, "table or json")->check(CLI::IsMember({"table", "json"}));
  ps->add_option("ps-args", *ps_args, "Arguments for ps(1) (default -ef)");
  ps->callback([=, &action] {
    action = [=] {
      auto pids = o::processes(o::StateStore(g->root), *id);
      if (*ps_format == "json") std::cout << nlohmann::json(pids).dump() << "\n";
      else
        print_ps_table(pids, ps_args->empty() ? std::vector<std::string>{"-ef"} : *ps_args);
      return 0;
    };
  });

  add_update_command(app, action, g);
  add_events_command(app, action, g);

  // runc has them; sandcell-oci has no CRIU support, so a caller hears it plainly.
  for (const char* verb : {"checkpoint", "restore"})
    app.add_subcommand(verb, "Not supported by sandcell-oci")
        ->allow_extras()
        ->callback([&action, verb] {
          action = [verb]() -> int {
            throw Error::invalid(std::string(verb) +
                                 ": not supported by sandcell-oci (no CRIU checkpoint/restore)");
          };
        });

  app.add_subcommand("features", "Print what this runtime implements (JSON)")->callback([&action] {
    action = [] { std::cout << o::features().dump(2) << "\n"; return 0; };
  });
  auto bundle = std::make_shared<std::string>(".");
  CLI::App* spec = app.add_subcommand("spec", "Write a default config.json into the bundle");
  spec->add_option("-b,--bundle", *bundle, "Bundle directory")->capture_default_str();
  spec->add_flag("--rootless")->description("Accepted for runc compatibility");
  spec->callback([=, &action] {
    action = [=] {
      std::string path = *bundle + "/config.json";
      if (std::ifstream(path)) throw Error::invalid(path + " exists already");
      std::ofstream out(path);
      out << o::default_config().dump(2) << "\n";
      if (!out.flush()) throw Error(errno, "write " + path);
      return 0;
    };
  });
}

void add_exec_command(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  auto options = std::make_shared<o::ExecOptions>();
  CLI::App* exec = with_id(app, "exec", "Run a new process in a running container", *id);
  exec->add_option("args", options->args, "Command and arguments (put -- before options of the command)");
  exec->add_option("-p,--process", options->process_file, "OCI process JSON file");
  exec->add_flag("-t,--tty", options->tty, "Allocate a pty (needs --console-socket)");
  exec->add_flag("-d,--detach", options->detach, "Return once the process runs");
  exec->add_option("--pid-file", options->pid_file, "Write the process' pid here");
  exec->add_option("-e,--env", options->env, "K=V added to the environment")->take_all();
  exec->add_option("--cwd", options->cwd, "Working directory");
  exec->add_option("-u,--user", options->user, "uid[:gid]");
  exec->add_option("--console-socket", options->console_socket, "Unix socket that receives the pty master");
  exec->add_option("--preserve-fds", options->preserve_fds, "Pass fds 3..3+N-1 to the process");
  exec->footer("Examples:\n  sandcell-oci exec demo -- ls -l /\n  sandcell-oci exec -d --pid-file p --process proc.json demo");
  exec->callback([=, &action] { action = [=] { return o::exec(o::StateStore(g->root), *id, *options); }; });
}

}  // namespace sandcell::cli::oci
