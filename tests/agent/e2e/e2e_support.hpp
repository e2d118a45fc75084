#pragma once
// What the end-to-end tests of the agent layer share: the real sandcell binary, the store with
// the skill images (fixture skill_images), and a long-lived child such as `sandcell serve`.
#include <signal.h>
#include <sys/types.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "executor/child_process.hpp"

namespace sandcell::test {

std::string sandcell_bin();
// The image store the skill_images fixture built the skills into ($SANDCELL_TEST_STORE).
std::string skill_store();
// sandcell --root STORE ARGS..., with `input` on stdin.
struct Finished {
  int exit_code;
  std::string out, err;
};
Finished run_sandcell_with_store(const std::vector<std::string>& args, const std::string& input = "");

// A background child with stderr in a file; SIGKILLed and reaped if still running at the end.
class Background {
 public:
  explicit Background(const std::vector<std::string>& argv);
  ~Background();
  pid_t pid() const { return pid_; }
  int signal_and_wait(int sig);  // exit status
  std::string stderr_text() const;

 private:
  pid_t pid_ = -1;
  std::filesystem::path err_;
};

int free_tcp_port();
// Children of `pid` (all threads), from /proc/PID/task/*/children.
std::vector<pid_t> children_of(pid_t pid);
int open_fd_count(pid_t pid);

}  // namespace sandcell::test
