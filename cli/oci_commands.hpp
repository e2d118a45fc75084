#pragma once
// The verbs of sandcell-oci, each added to the CLI11 app by one function (oci_commands.cpp).
#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>

namespace sandcell::cli::oci {

struct Globals {
  std::string root = "/run/sandcell-oci";
  std::string log, log_format = "text";
  bool debug = false, systemd_cgroup = false;
};

// What the chosen subcommand does once parsing succeeded; returns the exit code.
using Action = std::function<int()>;

void add_lifecycle_commands(CLI::App& app, Action& action, const std::shared_ptr<Globals>& globals);
void add_inspection_commands(CLI::App& app, Action& action, const std::shared_ptr<Globals>& globals);
void add_exec_command(CLI::App& app, Action& action, const std::shared_ptr<Globals>& globals);

}  // namespace sandcell::cli::oci
