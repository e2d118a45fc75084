#include "sandcell/runtime/fd_passing.hpp"

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

ssize_t receive_with_fd(int socket, void* data, size_t size, int flags, int* fd) {
  *fd = -1;
  iovec buffer{.iov_base = data, .iov_len = size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr header{};
  header.msg_iov = &buffer;
  header.msg_iovlen = 1;
  header.msg_control = control;
  header.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(socket, &header, flags | MSG_CMSG_CLOEXEC);
  if (n < 0) return n;
  for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(sizeof(int)))
      memcpy(fd, CMSG_DATA(c), sizeof(int));
  return n;
}

}  // namespace sandcell::runtime
