// The subcommands of sandcell-oci as runc spells them.
#include "oci_commands.hpp"

#include <fstream>
#include <iostream>

#include "sandcell/oci/config.hpp"
#include "sandcell/oci/lifecycle.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/spec.hpp"
#include "sandcell/base/bounded_json.hpp"

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

CLI::App* with_id(CLI::App& app, const char* name, const char* help, std::string& id) {
  CLI::App* cmd = app.add_subcommand(name, help);
  cmd->add_option("id", id, "Container id")->required();
  return cmd;
}

}  // namespace

void add_lifecycle_commands(CLI::App& app, Action& action, const std::shared_ptr<Globals>& g) {
  auto id = std::make_shared<std::string>();
  auto create = std::make_shared<o::CreateOptions>();
  with_id(app, "create", "Create a container; its process waits for `start`", *id)->callback([=, &action] {
    action = [=] { o::create(o::StateStore(g->root), *id, *create); return 0; };
  });
  add_create_flags(app.get_subcommand("create"), *create);

  auto detach = std::make_shared<bool>(false);
  CLI::App* run = with_id(app, "run", "Create and start; wait for the process unless --detach", *id);
  add_create_flags(run, *create);
  run->add_flag("-d,--detach", *detach, "Return once the process runs");
  run->callback([=, &action] { action = [=] { return o::run(o::StateStore(g->root), *id, *create, *detach); }; });

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
  CLI::App* ps = with_id(app, "ps", "List the container's processes", *id);
  ps->add_option("-f,--format", *ps_format, "table or json")->check(CLI::IsMember({"table", "json"}));
  ps->callback([=, &action] {
    action = [=] {
      auto pids = o::processes(o::StateStore(g->root), *id);
      if (*ps_format == "json") std::cout << nlohmann::json(pids).dump() << "\n";
      else for (pid_t pid : pids) std::cout << pid << "\n";
      return 0;
    };
  });

  auto memory = std::make_shared<std::string>(), pids = std::make_shared<std::string>();
  auto quota = std::make_shared<int64_t>(0);
  auto period = std::make_shared<uint64_t>(100000);
  auto resources = std::make_shared<std::string>();
  CLI::App* update = with_id(app, "update", "Change the container's cgroup limits", *id);
  update->add_option("-m,--memory", *memory, "Memory limit (bytes, or 512m)");
  update->add_option("--pids-limit", *pids, "Maximum number of processes");
  update->add_option("--cpu-quota", *quota, "CFS quota in microseconds");
  update->add_option("--cpu-period", *period, "CFS period in microseconds");
  update->add_option("-r,--resources", *resources, "OCI linux.resources JSON file ('-' for stdin)");
  update->callback([=, &action] {
    action = [=] {
      runtime::Limits limits;
      if (!resources->empty()) {
        std::ifstream file(*resources);
        std::istream& in = *resources == "-" ? std::cin : file;
        limits = o::parse_config_resources(parse_bounded_json(in));
      }
      if (!memory->empty()) limits.memory_bytes = runtime::parse_size(*memory, "--memory");
      if (!pids->empty()) limits.pids = runtime::parse_size(*pids, "--pids-limit");
      if (*quota > 0) limits.cpus = static_cast<double>(*quota) / static_cast<double>(*period);
      o::update(o::StateStore(g->root), *id, limits);
      return 0;
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
