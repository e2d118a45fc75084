// Child-side network and UTS steps: the network namespace, loopback, the socket transport's
// proxy listener, the hostname. No allocation (see child_plan.hpp).
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "child_steps.hpp"

namespace sandcell::runtime {

void set_hostname(const ChildPlan& plan) {
  if (sethostname(plan.hostname.data(), plan.hostname.size()) < 0)
    child_fail(plan, "sethostname %s", plan.hostname.c_str());
}

bool enter_network_namespace(const ChildPlan& plan) {
  if (!plan.unshare_network) return false;
  if (plan.pooled_netns_fd >= 0) {
    // The supervisor checked it is a network namespace; if entering fails all the same, the
    // child's own is as good, only slower.
    bool entered = setns(plan.pooled_netns_fd, CLONE_NEWNET) == 0;
    close(plan.pooled_netns_fd);
    if (entered) return true;
  }
  if (unshare(CLONE_NEWNET) < 0)
    child_fail(plan, "unshare(CLONE_NEWNET) for the sandbox's network namespace");
  return false;
}

bool set_loopback_up() {
  // A new network namespace has only `lo`, and it starts down.
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return false;
  ifreq request{};
  snprintf(request.ifr_name, sizeof request.ifr_name, "lo");
  request.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
  bool up = ioctl(sock, SIOCSIFFLAGS, &request) == 0;
  int saved = errno;
  close(sock);
  errno = saved;
  return up;
}

void bring_up_loopback(const ChildPlan& plan) {
  if (plan.host_network) return;  // the host's lo is already up, and not ours to touch
  if (!set_loopback_up()) child_fail(plan, "bring up lo");
}

// Socket transport (`--net allow:`): a socket belongs to the netns it was made in, so a listener
// made here and accepted on by the supervisor's proxy is the sandbox's only way out, with no
// link and no route. The program cannot take the port over: the socket holds it (no
// SO_REUSEPORT), and the child's own copy is closed before anything of the program runs.
void open_proxy_listener(const ChildPlan& plan) {
  if (plan.proxy_listener_port == 0) return;
  int sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) child_fail(plan, "socket for the proxy listener");
  sockaddr_in address{.sin_family = AF_INET,
                      .sin_port = htons(plan.proxy_listener_port),
                      .sin_addr = {htonl(INADDR_LOOPBACK)},
                      .sin_zero = {}};
  if (bind(sock, reinterpret_cast<sockaddr*>(&address), sizeof address) < 0)
    child_fail(plan, "bind the proxy listener to 127.0.0.1:%u", plan.proxy_listener_port);
  if (listen(sock, 128) < 0) child_fail(plan, "listen on 127.0.0.1:%u", plan.proxy_listener_port);
  send_fd_to_parent(plan, ChildMessage::ProxyListener, sock, "the proxy listener");
  close(sock);
}

}  // namespace sandcell::runtime
