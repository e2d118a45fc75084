#include "netns_thread.hpp"

#include <fcntl.h>
#include <sched.h>

#include <exception>
#include <string>
#include <thread>

#include "owned_fd.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {

void run_in_netns_of(pid_t pid, const std::function<void()>& step) {
  const std::string ns_path = "/proc/" + std::to_string(pid) + "/ns/net";
  const OwnedFd ns(
      static_cast<int>(check(open(ns_path.c_str(), O_RDONLY | O_CLOEXEC), "open " + ns_path)));
  run_in_netns(ns.get(), step);
}

void run_in_netns(int netns_fd, const std::function<void()>& step) {
  std::exception_ptr failure;
  std::thread([&] {
    try {
      check(setns(netns_fd, CLONE_NEWNET), "setns into the sandbox's network namespace");
      step();
    } catch (...) {
      failure = std::current_exception();
    }
  }).join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace sandcell::network
