#pragma once
// A child process with its stdin, stdout and stderr on pipes, driven with poll() so a large
// request and a large answer can never deadlock each other.
#include <sys/types.h>

#include <functional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::agent_service {

struct ChildOutcome {
  int exit_code = -1;  // the exit status, or 128+N when signal N ended it
  std::string stderr_text{};
};

// Runs argv (argv[0] is a path), writes `input` to its stdin then closes it, passes each chunk
// of its stdout to `on_stdout` and returns when it has exited. The child gets its own process
// group and default signal dispositions, so a Ctrl-C meant for a server does not abort the
// work that server is still finishing. When `stop` is requested the child gets SIGTERM (sandcell
// then kills its sandbox and reports the interruption), and SIGKILL if it is still there after
// kStopGraceSeconds; run_child still returns its outcome.
ChildOutcome run_child(const std::vector<std::string>& argv, std::string_view input,
                       const std::function<void(std::string_view)>& on_stdout, std::stop_token stop = {});

// run_child in two halves, for a child started before its input is known (the warm pool's
// members): start_child spawns it as run_child does, with its pipes kept open.
struct StartedChild {
  pid_t pid = -1;
  runtime::UniqueFd pidfd, stdin_write, stdout_read, stderr_read;
};
StartedChild start_child(const std::vector<std::string>& argv);
// From here exactly as run_child: writes `input`, pumps the output, waits for the exit.
ChildOutcome finish_child(StartedChild child, std::string_view input,
                          const std::function<void(std::string_view)>& on_stdout, std::stop_token stop = {});
// The exit of a child that has answered, for finish_child to leave: when its output has ended and
// `answered()` says it holds the whole answer, the child (still tearing down) goes to `reap`
// instead of being waited for, and the outcome's exit_code is 0. Otherwise finish_child waits.
struct LeaveExit {
  std::function<bool()> answered;
  std::function<void(StartedChild)> reap;
};
ChildOutcome finish_child(StartedChild child, std::string_view input,
                          const std::function<void(std::string_view)>& on_stdout, std::stop_token stop,
                          const LeaveExit& leave);

}  // namespace sandcell::agent_service
