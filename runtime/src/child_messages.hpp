#pragma once
// The parent's end of the sync socket: reads what the child reports between clone and execve.
#include <optional>

#include "child_plan.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

struct ReceivedMessage {
  ChildMessage message;
  UniqueFd fd;  // for ChildMessage::SeccompListener and ChildMessage::ProxyListener
};

// One message, or nullopt at EOF (the child exec'd the program, or died). Throws Error if the
// socket fails.
std::optional<ReceivedMessage> receive_child_message(int sync_fd);

// Socket transport, before "go": waits until the child sends its proxy listener and returns it.
// Returns an empty fd when the child failed or died first: its message stays in the socket for
// the supervisor loop to report. Throws Error if sandcell is interrupted (`signal_fd` readable).
UniqueFd wait_for_proxy_listener(int sync_fd, int signal_fd);

}  // namespace sandcell::runtime
