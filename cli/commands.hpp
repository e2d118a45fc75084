#pragma once
// Each verb of `sandcell` registers its options and its action on the CLI11 app.
#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/runtime/spec.hpp"

namespace sandcell::cli {

// The action a parsed verb runs; returns the process exit code.
using Action = std::function<int()>;

// Options every verb sees (given before the verb: `sandcell --root DIR images`).
struct GlobalOptions {
  std::string root;  // image store; empty: $SANDCELL_ROOT or the default (docs/architecture.md)
  std::string store_root() const;
  // `run IMAGE`: fills the Spec from the image; returns what must live as long as the run (the
  // store lease). Set only in sandcell-images, the executable that links the image store.
  std::function<std::shared_ptr<void>(const std::string& image, const std::vector<std::string>& command,
                                      const std::optional<std::string>& user,
                                      const std::optional<std::string>& workdir, runtime::Spec& spec)>
      apply_image;
};
using Globals = std::shared_ptr<GlobalOptions>;

void add_run_command(CLI::App& app, Action& action, const Globals& globals);
// argv with a `--` before the program's words of a `run` command line (see run_command.cpp);
// `run` is the subcommand add_run_command() made, which knows which of its options take a value.
std::vector<std::string> end_run_options(std::vector<std::string> args, const CLI::App& run);
void add_gc_command(CLI::App& app, Action& action, const Globals& globals);
void add_setup_command(CLI::App& app, Action& action);
void add_code_command(CLI::App& app, Action& action, const Globals& globals);
void add_skills_command(CLI::App& app, Action& action, const Globals& globals);
void add_sessions_command(CLI::App& app, Action& action, const Globals& globals);

// JSON as sandcell prints it (indented; invalid UTF-8 in program output replaced, never fatal).
std::string dump(const nlohmann::json& j);
// Writes JSON to path atomically (temp file + rename).
void write_report(const std::string& path, const nlohmann::json& record);
// `build` progress on stderr: step lines bold on a terminal; with quiet, only step lines.
std::function<void(const std::string&)> progress_printer(bool quiet);
void add_build_command(CLI::App& app, Action& action, const Globals& globals);
void add_image_commands(CLI::App& app, Action& action, const Globals& globals);
void add_bootstrap_command(CLI::App& app, Action& action, const Globals& globals);
void add_registry_commands(CLI::App& app, Action& action, const Globals& globals);
// Pulls an image the store lacks (FROM, run IMAGE); returns the name the store has it under.
std::function<std::string(const std::string& image)> image_fetcher(const GlobalOptions& globals, bool quiet);
void add_agent_command(CLI::App& app, Action& action, const Globals& globals);
void add_logs_command(CLI::App& app, Action& action, const Globals& globals);
void add_mcp_command(CLI::App& app, Action& action, const Globals& globals);
void add_serve_command(CLI::App& app, Action& action, const Globals& globals);

// sandcell-images only: sets globals->apply_image.
void enable_image_runs(const Globals& globals);

// main() keeps its argv for the hand-overs below: each execs a sibling executable, installed
// next to this one, on the same command line, which is then parsed again there.
void remember_command_line(char** argv);
// This executable's path as /proc/self/exe named it when remember_command_line ran (before a
// rootless start unshares its mount namespace), or as it names it now; "" when it cannot.
std::string own_executable();
// Replaces this process with `sibling` (a file name next to own_executable()) on the remembered
// command line; if that fails, one line naming the file and `why`, exit 125. Call it before
// anything was made or printed.
[[noreturn]] void hand_over_to(const char* sibling, const char* why);

// The lean `sandcell` handles `run --rootfs` and `gc` itself and hands every other command line
// to sandcell-images, next to it, so a run does not pay for loading the image store.
// Returns only when this command line is the lean binary's own.
void forward_unless_lean(int argc, char** argv);

// The lean binary is linked statically where it can be (cli/CMakeLists.txt): no dynamic loader
// maps and relocates libc at each start (~0.2-0.35 ms of a run here). Without a loader it
// cannot load the network's libraries either (network/src/dynamic_libs.hpp), so what needs them
// (a run with --net allow:/full, gc) goes to `sandcell-net`, the same program linked
// dynamically, installed next to it. False in a static process.
bool can_load_network_libraries();
// hand_over_to("sandcell-net", ...).
[[noreturn]] void hand_over_to_network_twin();

}  // namespace sandcell::cli
