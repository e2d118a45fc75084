#pragma once
// Each verb of `sandcell` registers its options and its action on the CLI11 app.
#include <CLI/CLI.hpp>
#include <functional>

namespace sandcell::cli {

// The action a parsed verb runs; returns the process exit code.
using Action = std::function<int()>;

void add_run_command(CLI::App& app, Action& action);
void add_gc_command(CLI::App& app, Action& action);

}  // namespace sandcell::cli
