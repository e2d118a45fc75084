#pragma once
// Answers the seccomp filter's user notifications (SECCOMP_RET_USER_NOTIF) on behalf of the
// kernel: each one is a call the profile denies; it is counted by name and failed with the
// profile's errno. This is how the result record learns what the code tried.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

class DeniedSyscallLog {
 public:
  DeniedSyscallLog(UniqueFd listener, const SeccompNotifyPlan& plan);

  int fd() const { return listener_.get(); }
  // Answers every pending notification. Returns true when a call came through a foreign ABI
  // and the plan says the sandbox must then be killed.
  bool answer_pending();
  std::vector<DeniedSyscall> denied() const;
  // A pooled run's hand-over: what was denied before it is not the program's.
  void restart() { counts_.clear(); }
  const std::string& kill_reason() const { return kill_reason_; }

 private:
  bool answer_one();

  UniqueFd listener_;
  const SeccompNotifyPlan& plan_;
  std::vector<char> request_, response_;  // sized by SECCOMP_GET_NOTIF_SIZES
  std::map<std::string, uint64_t> counts_;
  std::string kill_reason_;
};

}  // namespace sandcell::runtime
