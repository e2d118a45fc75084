#pragma once
// An unprivileged user for the rootless tests, which run as root in CI: created for one test
// program and removed with it (`sandcell-ci-<pid>`, so parallel test programs never share one),
// with /etc/subuid and /etc/subgid ranges, a HOME of its own, and copies of the sandcell binaries
// and the test rootfs in a 0755 directory (the build tree may not be readable for other users).
#include <sys/types.h>

#include <string>
#include <vector>

#include "sandcell_cli.hpp"

namespace sandcell::test {

class RootlessUser {
 public:
  static constexpr unsigned long kSubIdStart = 3'000'000, kSubIdCount = 65536;

  RootlessUser();  // throws std::runtime_error naming the step that failed
  ~RootlessUser();
  RootlessUser(const RootlessUser&) = delete;
  RootlessUser& operator=(const RootlessUser&) = delete;

  // sandcell ARGS... as this user (setpriv --reuid --regid --init-groups), with only HOME and
  // PATH in its environment and `dir()` as its working directory. `prefix` (run as root) comes
  // first: e.g. nsenter into a namespace the test made.
  CliRun sandcell(const std::vector<std::string>& args, const std::string& input = "",
                  const std::vector<std::string>& prefix = {}) const;

  uid_t uid() const { return uid_; }
  const std::string& name() const { return name_; }
  const std::string& dir() const { return dir_; }
  std::string home() const { return dir_ + "/home"; }
  std::string rootfs() const { return dir_ + "/rootfs"; }
  std::string store() const { return home() + "/.local/share/sandcell"; }
  std::string state_dir() const { return "/tmp/sandcell-" + std::to_string(uid_); }
  // What runs left in state_dir(): every entry but the shared scratch mount point, which stays
  // and must be empty (runtime/src/run_state.hpp). Empty when the runs cleaned up.
  std::vector<std::string> leftover_state() const;
  // Processes running as this user or one of its subordinate ids now.
  std::vector<pid_t> processes() const;

 private:
  std::string name_, dir_;
  uid_t uid_ = 0;
  gid_t gid_ = 0;
};

}  // namespace sandcell::test
