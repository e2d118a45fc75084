#include "unknown_command.hpp"

namespace sandcell::cli {

std::optional<UnknownCommand> find_unknown_command(CLI::App& app, int argc, char** argv) {
  CLI::App* current = &app;
  std::string parent;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") return std::nullopt;
    if (arg.size() > 1 && arg[0] == '-') {
      if (arg.find('=') != std::string::npos) continue;  // --root=DIR
      const CLI::Option* option = current->get_option_no_throw(arg);
      if (option == nullptr) return std::nullopt;     // CLI11 names unknown options itself
      if (option->get_items_expected_max() > 0) ++i;  // its value (flags take none)
      continue;
    }
    const std::vector<CLI::App*> named =
        current->get_subcommands([&](CLI::App* command) { return command->check_name(arg); });
    if (!named.empty()) {
      current = named.front();
      parent += (parent.empty() ? "" : " ") + current->get_name();
      continue;
    }
    if (current->get_require_subcommand_min() == 0) return std::nullopt;  // a positional
    return UnknownCommand{.parent = parent, .word = arg};
  }
  return std::nullopt;
}

std::string describe(const UnknownCommand& unknown, const std::string& program) {
  const std::string prefix = unknown.parent.empty() ? "" : unknown.parent + " ";
  return "unknown command '" + prefix + unknown.word + "' (see " + program + " " + prefix +
         "--help)";
}

}  // namespace sandcell::cli
