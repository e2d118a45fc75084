#include "fd_passing.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace sandcell::runtime {

ssize_t send_with_fds(int socket, std::span<const iovec> data, std::span<const int> fds) {
  if (fds.size() > kMaxPassedFds) {
    errno = E2BIG;
    return -1;
  }
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
  msghdr header{};
  header.msg_iov = const_cast<iovec*>(data.data());
  header.msg_iovlen = data.size();
  if (!fds.empty()) {
    header.msg_control = control;
    header.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* message = CMSG_FIRSTHDR(&header);
    message->cmsg_level = SOL_SOCKET;
    message->cmsg_type = SCM_RIGHTS;
    message->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    memcpy(CMSG_DATA(message), fds.data(), sizeof(int) * fds.size());
  }
  return sendmsg(socket, &header, MSG_NOSIGNAL);
}

}  // namespace sandcell::runtime
