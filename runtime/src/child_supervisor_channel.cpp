// The child's side of the sync socket: waiting for "go" (and the fds that come with it), and
// handing an fd to the supervisor. No allocation (see child_plan.hpp).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "child_steps.hpp"
#include "sandcell/runtime/fd_passing.hpp"

namespace sandcell::runtime {

size_t receive_from_supervisor(const ChildPlan& plan, int* fds, size_t max, const char* what,
                               const iovec* extra, size_t extra_count, size_t* extra_bytes,
                               char* tag) {
  char first = 0;
  iovec data[4] = {{.iov_base = tag != nullptr ? tag : &first, .iov_len = 1}};
  if (extra_count > 3) {
    errno = EINVAL;
    child_fail(plan, "%s (too many buffers)", what);
  }
  for (size_t i = 0; i < extra_count; ++i) data[i + 1] = extra[i];
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxIdmappedLayers)];
  static_assert(2 * kMaxCgroupTasksFds + 1 <= kMaxIdmappedLayers,
                "the control buffer fits the larger");
  msghdr header{};
  header.msg_iov = data;
  header.msg_iovlen = 1 + extra_count;
  header.msg_control = control;
  header.msg_controllen = CMSG_SPACE(sizeof(int) * max);
  ssize_t n = recvmsg(plan.sync_fd, &header, MSG_CMSG_CLOEXEC);
  if (n == 0) _exit(125);  // the supervisor is gone: run nothing
  if (n < 0) child_fail(plan, "%s", what);
  if (header.msg_flags & MSG_TRUNC) {
    errno = EMSGSIZE;
    child_fail(plan, "%s (longer than expected)", what);
  }
  if (extra_bytes != nullptr) *extra_bytes = static_cast<size_t>(n) - 1;
  size_t count = 0;
  cmsghdr* sent = CMSG_FIRSTHDR(&header);
  if (sent != nullptr && sent->cmsg_level == SOL_SOCKET && sent->cmsg_type == SCM_RIGHTS) {
    count = (sent->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    memcpy(fds, CMSG_DATA(sent), count * sizeof(int));
  }
  if (header.msg_flags & MSG_CTRUNC) {
    errno = EPROTO;
    child_fail(plan, "%s (more files than expected)", what);
  }
  return count;
}

GoMessage wait_for_go(const ChildPlan& plan) {
  // Static, not on the stack: 32 KB the child touches only as far as a program fills it.
  static SeccompHeader header;
  static sock_filter filter[BPF_MAXINSNS];
  const iovec extra[] = {{.iov_base = &header, .iov_len = sizeof header},
                         {.iov_base = filter, .iov_len = sizeof filter}};
  size_t extra_bytes = 0;
  char tag = kGoTag;
  int fds[2 * kMaxCgroupTasksFds + 1];
  size_t count = receive_from_supervisor(plan, fds, 2 * kMaxCgroupTasksFds + 1,
                                         "wait for the go-ahead", extra, 2, &extra_bytes, &tag);
  GoMessage go;
  // kGoLeaveAndLimitTag: `pids.max` last.
  if (tag == kGoLeaveAndLimitTag && count > 0) go.pids_max_fd = fds[--count];
  // kGoAndLeaveTag (and kGoLeaveAndLimitTag): as many parents' `tasks` files as the ones to
  // join, after them.
  const size_t leave = tag == kGoAndLeaveTag || tag == kGoLeaveAndLimitTag ? count / 2 : 0;
  if ((leave > 0 && count % 2 != 0) || count - leave > kMaxCgroupTasksFds ||
      (tag == kGoLeaveAndLimitTag && (leave == 0 || go.pids_max_fd < 0))) {
    errno = EPROTO;
    child_fail(plan, "receive the cgroup files (%zu)", count);
  }
  go.cgroup_tasks_count = count - leave;
  memcpy(go.cgroup_tasks_fds, fds, go.cgroup_tasks_count * sizeof(int));
  go.parent_tasks_count = leave;
  memcpy(go.parent_tasks_fds, fds + go.cgroup_tasks_count, leave * sizeof(int));
  if (extra_bytes == 0) return go;
  if (extra_bytes < sizeof header || header.count > BPF_MAXINSNS ||
      extra_bytes != sizeof header + header.count * sizeof(sock_filter)) {
    errno = EPROTO;
    child_fail(plan, "receive the seccomp program (%zu bytes)", extra_bytes);
  }
  go.seccomp = &header;
  go.seccomp_filter = filter;
  return go;
}

void send_fd_to_parent(const ChildPlan& plan, ChildMessage::Kind kind, int fd, const char* what) {
  ChildMessage message{.kind = kind};
  iovec data{.iov_base = &message, .iov_len = sizeof message};
  if (send_with_fds(plan.sync_fd, {&data, 1}, {&fd, 1}) < 0) child_fail(plan, "send %s", what);
}

}  // namespace sandcell::runtime
