#include "child_messages.hpp"

#include <linux/filter.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/fd_passing.hpp"
#include "sandcell_confine.h"

namespace sandcell::runtime {

std::optional<ReceivedMessage> receive_child_message(int sync_fd) {
  ReceivedMessage received;
  int fd = -1;
  ssize_t n =
      receive_with_fd(sync_fd, &received.message, sizeof received.message, MSG_DONTWAIT, &fd);
  // A child that exits with our "go" unread resets the connection. The kernel reports the reset
  // before the messages the child sent first, and clears it: read again to get them.
  if (n < 0 && errno == ECONNRESET)
    n = receive_with_fd(sync_fd, &received.message, sizeof received.message, MSG_DONTWAIT, &fd);
  received.fd.reset(fd);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    received.message.kind = -1;  // nothing yet; callers poll first, so this is rare
    return received;
  }
  if (n < 0) throw Error(errno, "receive from the sandbox child");
  if (n == 0) return std::nullopt;
  if (n != sizeof received.message) throw Error(EPROTO, "short message from the sandbox child");
  return received;
}

std::optional<ReceivedMessage> receive_outside_report(int report_fd) {
  sandcell_confine_report report{};
  int fd = -1;
  const ssize_t n = receive_with_fd(report_fd, &report, sizeof report, MSG_DONTWAIT, &fd);
  ReceivedMessage received;
  received.fd.reset(fd);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    received.message.kind = -1;
    return received;
  }
  if (n < 0 && errno == ECONNRESET) return std::nullopt;  // it exited with a message unread
  if (n < 0) throw Error(errno, "receive from the program's confinement");
  if (n == 0) return std::nullopt;
  if (report.tag == 'L') {
    received.message.kind = ChildMessage::SeccompListener;
  } else {
    // 'E', or anything else: the confinement did not complete.
    received.message.kind = ChildMessage::SetupFailed;
    received.message.err = n == sizeof report ? report.err : EPROTO;
    const size_t length = n == sizeof report ? strnlen(report.step, sizeof report.step) : 0;
    snprintf(received.message.step, sizeof received.message.step, "confine the program: %.*s",
             static_cast<int>(length), length ? report.step : "an unreadable report");
  }
  return received;
}

namespace {

UniqueFd wait_for_fd(int sync_fd, int signal_fd, ChildMessage::Kind wanted, const char* what) {
  while (true) {
    pollfd fds[2] = {{.fd = sync_fd, .events = POLLIN, .revents = 0},
                     {.fd = signal_fd, .events = POLLIN, .revents = 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      throw Error(errno, std::string("wait for the sandbox's ") + what);
    }
    if (fds[1].revents & POLLIN) throw Error(EINTR, "interrupted while the sandbox was starting");
    // Peek first: anything but the listener (a failure, or EOF) is the supervisor loop's to read.
    ChildMessage::Kind kind = ChildMessage::SetupFailed;
    ssize_t n = recv(sync_fd, &kind, sizeof kind, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n != sizeof kind || kind != wanted) return {};
    std::optional<ReceivedMessage> received = receive_child_message(sync_fd);
    if (!received || !received->fd) throw Error(EPROTO, std::string(what) + " message without an fd");
    return std::move(received->fd);
  }
}

}  // namespace

UniqueFd wait_for_proxy_listener(int sync_fd, int signal_fd) {
  return wait_for_fd(sync_fd, signal_fd, ChildMessage::ProxyListener, "proxy listener");
}

UniqueFd wait_for_terminal(int sync_fd, int signal_fd) {
  return wait_for_fd(sync_fd, signal_fd, ChildMessage::Terminal, "pty master");
}

void send_go(int sync_fd, const std::vector<UniqueFd>& cgroup_tasks, const SeccompProgram* program,
             const std::vector<UniqueFd>& parent_tasks, const UniqueFd& pids_max) {
  if (!parent_tasks.empty() && parent_tasks.size() != cgroup_tasks.size())
    throw Error(EINVAL, "a parent cgroup for each hierarchy the child joins");
  const bool limit = pids_max && !parent_tasks.empty();
  char go = parent_tasks.empty() ? kGoTag : limit ? kGoLeaveAndLimitTag : kGoAndLeaveTag;
  SeccompHeader header;
  iovec data[3] = {{.iov_base = &go, .iov_len = 1}};
  size_t data_count = 1;
  if (program != nullptr) {
    if (program->instructions.size() > BPF_MAXINSNS)
      throw Error(E2BIG, "the seccomp program " + program->name + " has " +
                             std::to_string(program->instructions.size()) +
                             " instructions; the kernel takes at most " +
                             std::to_string(BPF_MAXINSNS));
    header.flags = program->flags;
    header.count = static_cast<uint32_t>(program->instructions.size());
    snprintf(header.name, sizeof header.name, "%s", program->name.c_str());
    data[1] = {.iov_base = &header, .iov_len = sizeof header};
    data[2] = {.iov_base = const_cast<sock_filter*>(program->instructions.data()),
               .iov_len = header.count * sizeof(sock_filter)};
    data_count = 3;
  }
  if (cgroup_tasks.size() > kMaxCgroupTasksFds)
    throw Error(E2BIG, "more cgroup hierarchies than the child takes");
  int fds[kMaxCgroupTasksFds * 2 + 1];
  size_t count = 0;
  for (const auto* list : {&cgroup_tasks, &parent_tasks})
    for (const UniqueFd& tasks : *list) fds[count++] = tasks.get();
  if (limit) fds[count++] = pids_max.get();
  // A child that failed a setup step has said why on the socket and exited: nobody is left to
  // tell, and supervise() reads its message and status.
  if (send_with_fds(sync_fd, {data, data_count}, {fds, count}) < 0 && errno != EPIPE)
    throw Error(errno, "tell the child to go");
}

}  // namespace sandcell::runtime
