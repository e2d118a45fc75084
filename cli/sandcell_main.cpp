// `sandcell`: the user-facing executable. Parses arguments with CLI11 and calls the libraries.
#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <iostream>

#include "commands.hpp"
#include "sandcell/runtime/error.hpp"

namespace {

// The sandbox's stdio is built from fds the supervisor opens; if sandcell itself was started
// with 0, 1 or 2 closed, those numbers would be reused and clobbered.
void ensure_standard_fds_open() {
  for (int fd = 0; fd <= 2; ++fd)
    if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY) != fd) _exit(125);
}

}  // namespace

int main(int argc, char** argv) {
  ensure_standard_fds_open();
  // A reader that goes away (`sandcell run ... | head -1`) must not kill the supervisor before
  // it has cleaned up; write errors are handled where they happen.
  signal(SIGPIPE, SIG_IGN);

  CLI::App app{"sandcell: run untrusted code in an isolated, limited Linux sandbox, no daemon"};
  app.set_version_flag("--version", std::string("sandcell ") + SANDCELL_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Examples:\n"
      "  sandcell run --rootfs ./rootfs -- /bin/sh -c 'echo hello'\n"
      "  sandcell run --rootfs ./rootfs --memory 256m --timeout 5 --json -- python3 x.py\n"
      "  sandcell gc            remove what a crashed run left behind\n"
      "Run `sandcell COMMAND --help` for the options of a command.");
  sandcell::cli::Action action;
  sandcell::cli::add_run_command(app, action);
  sandcell::cli::add_gc_command(app, action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "sandcell: " << e.what() << " (see sandcell --help)\n";
    return 125;
  }
  try {
    return action();
  } catch (const sandcell::Error& e) {
    std::cerr << "sandcell: " << e.what() << "\n";
    return 125;
  }
}
