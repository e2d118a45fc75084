#include "hooks.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Waits for the hook with a deadline; SIGKILL when it passes.
int wait_hook(pid_t pid, std::optional<int> timeout_s, const std::string& name) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s.value_or(0));
  int status = 0;
  while (true) {
    pid_t done = waitpid(pid, &status, timeout_s ? WNOHANG : 0);
    if (done == pid) return status;
    if (done < 0 && errno != EINTR) throw Error(errno, "wait for hook " + name);
    if (timeout_s && std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      throw Error(ETIMEDOUT, "hook " + name + " timed out after " + std::to_string(*timeout_s) + "s");
    }
    if (timeout_s) poll(nullptr, 0, 10);
  }
}

void run_hook(const Hook& hook, const std::string& name, const std::string& state) {
  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path} : hook.args;
  std::vector<std::string> env = hook.env;
  std::vector<char*> argv = pointers(args), envp = pointers(env);
  int in[2];
  check(pipe2(in, O_CLOEXEC), "pipe for hook " + name);
  pid_t pid = fork();
  if (pid == 0) {
    // A clean slate: `run` blocks the signals it forwards, and SIGPIPE is ignored below; both
    // would survive execve.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);
    dup2(in[0], 0);
    execve(hook.path.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  if (pid < 0) {
    close(in[1]);
    throw Error(errno, "fork for hook " + name);
  }
  // The state is small (well below a pipe buffer); a hook that does not read it still runs.
  signal(SIGPIPE, SIG_IGN);
  ssize_t ignored = write(in[1], state.data(), state.size());
  (void)ignored;
  close(in[1]);
  int status = wait_hook(pid, hook.timeout_s, name);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(ECANCELED, "hook " + name + " (" + hook.path + ") failed with status " +
                               std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
}

}  // namespace

void run_hooks(const std::vector<Hook>& hooks, const std::string& phase, const std::string& state_json) {
  for (size_t i = 0; i < hooks.size(); ++i)
    run_hook(hooks[i], phase + "[" + std::to_string(i) + "]", state_json);
}

void run_hooks_warning_on_failure(const std::vector<Hook>& hooks, const std::string& phase,
                                  const std::string& state_json) {
  for (size_t i = 0; i < hooks.size(); ++i) {
    try {
      run_hook(hooks[i], phase + "[" + std::to_string(i) + "]", state_json);
    } catch (const Error& e) {
      fprintf(stderr, "sandcell-oci: warning: %s\n", e.what());
    }
  }
}

}  // namespace sandcell::oci
