// Naming an unknown command. CLI11 answers `sandcell frob` and `sandcell skills frob` with "A
// subcommand is required", which does not say which word was wrong.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

namespace sandcell::cli {

struct UnknownCommand {
  std::string parent;  // the commands before it ("" at the top, "skills"...)
  std::string word;    // what was typed where a command of `parent` must stand
};

// Follows argv down app's subcommands (skipping options and their values, as CLI11 would) to
// the first word that names none of them where one is required. Nothing for a command line
// CLI11 itself explains better: an unknown option, a missing command, positional arguments.
std::optional<UnknownCommand> find_unknown_command(CLI::App& app, int argc, char** argv);

// "unknown command 'skills frob' (see sandcell skills --help)"
std::string describe(const UnknownCommand& unknown, const std::string& program);

}  // namespace sandcell::cli
