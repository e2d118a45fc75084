#pragma once
// Runs the real `sandcell` executable the way a user would and collects what it printed.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace sandcell::test {

struct CliRun {
  int exit_code = -1;     // exit status of sandcell, 128+N if a signal N killed it
  std::string out, err;   // sandcell's own stdout and stderr
  long max_rss_kb = 0;    // peak RSS of sandcell (or its largest waited-for child)
  nlohmann::json record;  // the parsed stdout when it is JSON, else null
};

// Any program (argv[0] an absolute path), with `input` on its stdin.
CliRun run_program(const std::vector<std::string>& argv, const std::string& input = "");

// sandcell ARGS..., with `input` on its stdin.
CliRun run_sandcell(const std::vector<std::string>& args, const std::string& input = "");

// sandcell run --json --rootfs <test rootfs> FLAGS... -- COMMAND...
CliRun run_in_sandbox(const std::vector<std::string>& flags, const std::vector<std::string>& command,
                      const std::string& input = "");

// Starts sandcell in the background (stdout/stderr to /dev/null); returns its pid.
pid_t spawn_sandcell(const std::vector<std::string>& args);
// The same for any program (argv[0] a path).
pid_t spawn_program(const std::vector<std::string>& argv);

// `sh -c command` with stderr joined to stdout; prefixed "FAILED: " when it exits non-zero
// (outside tools the tests compare against: skopeo, podman, umoci).
std::string shell_output(const std::string& command);

std::string test_rootfs();
std::string sandcell_binary();

// Processes on the host whose command line starts with `prefix` (other than the caller).
std::vector<pid_t> processes_matching(const std::string& prefix);

// Directories under every sandcell cgroup parent on the host.
std::vector<std::string> sandcell_cgroups();

// True on a host whose only cgroup hierarchy is v2 (tests/vm's guest); false on a hybrid or v1
// host like the development machine.
bool pure_cgroup_v2_host();

}  // namespace sandcell::test
