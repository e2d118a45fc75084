// `sandcell`: the user-facing executable. Parses arguments with CLI11 and calls the libraries.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <initializer_list>
#include <iostream>
#include <string>
#include <string_view>

#include "commands.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/base/timeline.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "spec_terms.hpp"
#include "unknown_command.hpp"

namespace {

// The sandbox's stdio is built from fds the supervisor opens; if sandcell itself was started
// with 0, 1 or 2 closed, those numbers would be reused and clobbered.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd)
      _exit(125);
}

// The lean binary's commands (run, gc, setup) have removed whatever they made outside this
// process by now (the runtime's RAII); what is left is memory, which the kernel frees faster
// than the destructors of the CLI and the static objects would (~0.1 ms of every run).
// sandcell-images returns normally (its stores and clients clean up in destructors), and so do
// sanitizer builds, so LeakSanitizer still looks.
int finish(int code) {
#if SANDCELL_WITH_IMAGES || defined(SANDCELL_ASAN)
  return code;
#else
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(code);
#endif
}

using sandcell::cli::Action;
using sandcell::cli::Globals;

// The commands, in groups as their files add them, with the words that name them. CLI11 makes
// every option of every command it is given before it parses: ~0.5 ms for sandcell-images'
// fourteen groups on our CI VM (bench/README.md, "Session 15"), paid by each `sandcell code` and
// `run IMAGE`. So a command line that names its command gets only that command's group; any
// other (--help, --version, a typo, no command at all) gets every group, and if the group
// chosen turns out not to add the word, the others are added too: a stale list here costs
// time, never a command.
struct CommandGroup {
  std::initializer_list<std::string_view> names;
  void (*add)(CLI::App&, Action&, const Globals&);
};

const CommandGroup kCommandGroups[] = {
    {{"run"}, sandcell::cli::add_run_command},
    {{"gc"},
     [](CLI::App& app, Action& action, const Globals& globals) {
       sandcell::cli::add_gc_command(app, action, globals);
     }},
    {{"setup"},
     [](CLI::App& app, Action& action, const Globals&) {
       sandcell::cli::add_setup_command(app, action);
     }},
#if SANDCELL_WITH_IMAGES
    {{"build"}, sandcell::cli::add_build_command},
    {{"images", "inspect", "tag", "rmi", "prune", "save", "load", "import"},
     sandcell::cli::add_image_commands},
    {{"bootstrap"}, sandcell::cli::add_bootstrap_command},
    {{"pull", "push", "login", "logout"}, sandcell::cli::add_registry_commands},
    {{"code"}, sandcell::cli::add_code_command},
    {{"skills"}, sandcell::cli::add_skills_command},
    {{"sessions"}, sandcell::cli::add_sessions_command},
    {{"agent"}, sandcell::cli::add_agent_command},
    {{"logs"}, sandcell::cli::add_logs_command},
    {{"mcp"}, sandcell::cli::add_mcp_command},
    {{"serve"}, sandcell::cli::add_serve_command},
#endif
};

CLI::App* subcommand(CLI::App& app, const std::string& name) {
  std::vector<CLI::App*> found =
      app.get_subcommands([&](CLI::App* command) { return command->check_name(name); });
  return found.empty() ? nullptr : found.front();
}

// The word that names the command: the first one that is neither one of the app's own options
// (`--root DIR`) nor the value of one. Empty when there is none, or an option CLI11 does not
// know comes first (the full parse reports it).
std::string named_command(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return "";
    if (arg.size() < 2 || arg[0] != '-') return arg;
    if (arg.find('=') != std::string::npos) continue;  // --root=DIR
    const CLI::Option* option = app.get_option_no_throw(arg);
    if (option == nullptr) return "";
    if (option->get_items_expected_max() > 0) ++i;  // its value (flags take none)
  }
  return "";
}

void add_commands(CLI::App& app, Action& action, const Globals& globals, const std::string& named) {
  const CommandGroup* chosen = nullptr;
  for (const CommandGroup& group : kCommandGroups)
    if (std::find(group.names.begin(), group.names.end(), named) != group.names.end())
      chosen = &group;
  if (chosen != nullptr) {
    chosen->add(app, action, globals);
    if (subcommand(app, named) != nullptr) return;
  }
  for (const CommandGroup& group : kCommandGroups)
    if (&group != chosen) group.add(app, action, globals);
}

}  // namespace

int main(int argc, char** argv) {
  sandcell::runtime::note_command_line(argc, argv);  // for the sandboxes' inits to hide
  ensure_standard_fds_open();
  sandcell::timeline::start();  // SANDCELL_TIMELINE (bench/timeline.py); after fds 0-2 exist
  sandcell::timeline::mark("main");
  sandcell::cli::remember_command_line(argv);  // for a hand-over to a sibling after the parse
#if !SANDCELL_WITH_IMAGES
  sandcell::cli::forward_unless_lean(argc, argv);
#endif
  // Before anything can start a thread: unshare(CLONE_NEWUSER) refuses multi-threaded callers.
  sandcell::runtime::enter_rootless_namespace();
  // A reader that goes away (`sandcell run ... | head -1`) must not kill the supervisor before
  // it has cleaned up; write errors are handled where they happen.
  signal(SIGPIPE, SIG_IGN);

  // Named, so that usage lines read `sandcell serve [OPTIONS]` whichever executable parses.
  CLI::App app{"sandcell: run untrusted code in an isolated, limited Linux sandbox, no daemon",
               "sandcell"};
  app.set_version_flag("--version", std::string("sandcell ") + SANDCELL_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  sandcell run --rootfs ./rootfs -- /bin/sh -c 'echo hello'\n"
      "  sandcell bootstrap debian:bookworm-slim --suite bookworm --variant minbase\n"
      "  sandcell build -t hello:1 ./dir && sandcell run hello:1\n"
      "  sandcell pull alpine:3.20 && sandcell push app:1 localhost:5000/app:1\n"
      "  sandcell run --rootfs ./rootfs --memory 256m --timeout 5 --json -- python3 x.py\n"
      "  sandcell skills build python && echo 'print(6*7)' | sandcell code --skill python\n"
      "  sandcell gc            remove what a crashed run left behind\n"
      "Run `sandcell COMMAND --help` for the options of a command.");
  auto globals = std::make_shared<sandcell::cli::GlobalOptions>();
  app.add_option("--root", globals->root,
                 "Image store directory [$SANDCELL_ROOT, /var/lib/sandcell as root, "
                 "$XDG_DATA_HOME/sandcell otherwise]");
  sandcell::cli::Action action;
#if SANDCELL_WITH_IMAGES
  sandcell::cli::enable_image_runs(globals);
#endif
  add_commands(app, action, globals, named_command(app, argc, argv));
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (CLI::App* run = subcommand(app, "run")) args = sandcell::cli::end_run_options(args, *run);
    std::reverse(args.begin(), args.end());  // CLI11 takes the vector form last-first
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Only a failed parse looks for the word that is no command: not on every run's way.
    if (auto unknown = sandcell::cli::find_unknown_command(app, argc, argv))
      std::cerr << "sandcell: " << describe(*unknown, "sandcell") << "\n";
    else
      std::cerr << "sandcell: " << e.what() << " (see sandcell --help)\n";
    return 125;
  }
  int code = 125;
  try {
    code = action();
  } catch (const sandcell::Error& e) {
    std::cerr << "sandcell: " << sandcell::cli::in_flag_terms(e.what()) << "\n";
  } catch (const std::exception& e) {
    // A library's own error (std::filesystem, nlohmann::json) is reported, never an abort.
    std::cerr << "sandcell: " << e.what() << "\n";
  }
  return finish(code);
}
