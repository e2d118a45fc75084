#include "child_messages.hpp"

#include <sys/socket.h>

#include <cstring>

#include "sandcell/runtime/error.hpp"

namespace sandcell::runtime {

std::optional<ReceivedMessage> receive_child_message(int sync_fd) {
  ReceivedMessage received;
  iovec data{.iov_base = &received.message, .iov_len = sizeof received.message};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  ssize_t n = recvmsg(sync_fd, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  // A child that exits with our "go" unread resets the connection. The kernel reports the reset
  // before the messages the child sent first, and clears it: read again to get them.
  if (n < 0 && errno == ECONNRESET) n = recvmsg(sync_fd, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    received.message.kind = -1;  // nothing yet; callers poll first, so this is rare
    return received;
  }
  if (n < 0) throw Error(errno, "receive from the sandbox child");
  if (n == 0) return std::nullopt;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int fd = -1;
    memcpy(&fd, CMSG_DATA(c), sizeof fd);
    received.fd.reset(fd);
  }
  if (n != sizeof received.message) throw Error(EPROTO, "short message from the sandbox child");
  return received;
}

}  // namespace sandcell::runtime
