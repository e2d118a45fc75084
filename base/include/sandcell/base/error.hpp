#pragma once
// The one error type of sandcell: an errno plus the step that failed, so a message reads
// "mount /proc on /run/sandcell/x/root/proc: Operation not permitted".
#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

namespace sandcell {

class Error : public std::system_error {
 public:
  Error(int err, std::string step)
      : std::system_error(err, std::generic_category(), step), step_(std::move(step)) {}

  // An error in the caller's input (a bad size, a missing file): what() is the message alone.
  static Error invalid(std::string message) {
    Error e(EINVAL, std::move(message));
    e.input_error_ = true;
    return e;
  }

  // Input naming something that is not there (an image not in the store): as invalid(), with
  // ENOENT, so a caller can tell "missing" (pull it, say how to build it) from "broken".
  static Error not_found(std::string message) {
    Error e(ENOENT, std::move(message));
    e.input_error_ = true;
    return e;
  }
  bool not_found() const { return input_error_ && code().value() == ENOENT; }
  const std::string& step() const { return step_; }
  bool input_error() const { return input_error_; }
  const char* what() const noexcept override {
    return input_error_ ? step_.c_str() : std::system_error::what();
  }

 private:
  std::string step_;
  bool input_error_ = false;
};

// Returns ret, or throws Error(errno, step) when a syscall-style return value is negative.
inline long check(long ret, const std::string& step) {
  if (ret < 0) throw Error(errno, step);
  return ret;
}

}  // namespace sandcell
