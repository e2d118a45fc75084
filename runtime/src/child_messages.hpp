#pragma once
// The parent's end of the sync socket: reads what the child reports between clone and execve.
#include <optional>

#include "child_plan.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

struct ReceivedMessage {
  ChildMessage message;
  UniqueFd fd;  // the seccomp listener, for ChildMessage::SeccompListener
};

// One message, or nullopt at EOF (the child exec'd the program, or died). Throws Error if the
// socket fails.
std::optional<ReceivedMessage> receive_child_message(int sync_fd);

}  // namespace sandcell::runtime
