// `sandcell-oci`: a runc-compatible OCI runtime CLI (podman/conmon, containerd-shim, Kubernetes
// through containerd). Thin: CLI11 parses, the oci library acts.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "oci_commands.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/oci/sealed_exe.hpp"
#include "sandcell/oci/state.hpp"
#include "unknown_command.hpp"

namespace {

using sandcell::cli::oci::Globals;

// conmon and containerd read errors from --log (one JSON object per line with
// --log-format json), and show stderr too.
void report_error(const Globals& globals, const std::string& message) {
  std::cerr << "sandcell-oci: " << message << "\n";
  if (globals.log.empty()) return;
  std::ofstream log(globals.log, std::ios::app);
  if (globals.log_format == "json")
    log << nlohmann::json{{"level", "error"}, {"msg", message}, {"time", sandcell::oci::rfc3339_now()}}.dump() << "\n";
  else
    log << "level=error msg=\"" << message << "\"\n";
}

void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) _exit(125);
}

// Verbs that put a process into a container run from a sealed copy (CVE-2019-5736).
bool enters_container(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "create" || arg == "run" || arg == "exec") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv, char** envp) {
  ensure_standard_fds_open();
  if (enters_container(argc, argv)) {
    try {
      sandcell::oci::reexec_from_sealed_copy(argv, envp);
    } catch (const std::exception& e) {
      std::cerr << "sandcell-oci: " << e.what() << "\n";
      return 125;
    }
  }
  signal(SIGPIPE, SIG_IGN);
  CLI::App app{"sandcell-oci: an OCI runtime (runc-compatible CLI) backed by the sandcell engine"};
  app.set_version_flag("-v,--version", std::string("sandcell-oci version ") + SANDCELL_VERSION +
                                           "\nspec: 1.0.2");
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  sandcell-oci spec && sandcell-oci run -b . demo\n"
      "  sandcell-oci create -b ./bundle demo && sandcell-oci start demo && sandcell-oci state demo\n"
      "  sandcell-oci kill demo KILL && sandcell-oci delete demo\n"
      "  podman --runtime $(command -v sandcell-oci) --cgroup-manager cgroupfs run --rm IMAGE echo hi\n"
      "  sandcell-oci --systemd-cgroup run -b ./bundle demo  (cgroupsPath \"system.slice:sandcell:demo\")\n"
      "  ctr run --rm --runc-binary $(command -v sandcell-oci) IMAGE ID echo hi");
  auto globals = std::make_shared<Globals>();
  app.add_option("--root", globals->root, "State directory of containers")->capture_default_str();
  app.add_option("--log", globals->log, "Also append errors to this file");
  app.add_option("--log-format", globals->log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--debug", globals->debug, "Accepted for runc compatibility");
  app.add_flag("--systemd-cgroup", globals->systemd_cgroup,
               "systemd's cgroup driver: each container a transient scope (Delegate=yes) that "
               "systemd makes over D-Bus; linux.cgroupsPath is slice:prefix:name");
  std::string ignored;
  app.add_option("--criu", ignored, "Accepted for runc compatibility (checkpoint is not supported)");
  app.add_option("--rootless", ignored, "Accepted for runc compatibility");
  sandcell::cli::oci::Action action;
  sandcell::cli::oci::add_lifecycle_commands(app, action, globals);
  sandcell::cli::oci::add_inspection_commands(app, action, globals);
  sandcell::cli::oci::add_exec_command(app, action, globals);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (auto unknown = sandcell::cli::find_unknown_command(app, argc, argv)) {
      std::cerr << "sandcell-oci: " << describe(*unknown, "sandcell-oci") << "\n";
      return 125;
    }
    int code = app.exit(e);
    return e.get_exit_code() == 0 ? code : 125;
  }
  try {
    return action();
  } catch (const std::exception& e) {
    report_error(*globals, e.what());
    return 125;
  }
}
