// Hostile network use under the default `--net none`: host loopback services, the host's abstract
// unix sockets, raw and packet sockets, and the outside world. (The allow-mode proxy and firewall
// cases are in integration/network_policy_test.cpp.)
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "hostile.hpp"

namespace sandcell::test {
namespace {

TEST(HostileNetwork, HostLoopbackServicesAreUnreachable) {
  int udp = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in addr{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
  ASSERT_EQ(bind(udp, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  getsockname(udp, reinterpret_cast<sockaddr*>(&addr), &len);
  std::string port = std::to_string(ntohs(addr.sin_port));
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "/bin/sc-probe udp-send 127.0.0.1 " + port + "; /bin/sc-probe connect 127.0.0.1 " + port});
  // The sandbox's own loopback answers port-unreachable; TCP is denied by Landlock.
  EXPECT_EQ(stdout_of(r), "udp errno=ECONNREFUSED\nconnect errno=EACCES\n");
  EXPECT_EQ(status_of(r), "ok");
  pollfd p{.fd = udp, .events = POLLIN, .revents = 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "a datagram from the sandbox reached the host's loopback";
  close(udp);
}

TEST(HostileNetwork, HostAbstractUnixSocketsAreUnreachable) {
  std::string name = "sandcell-hostile-" + std::to_string(getpid());
  int server = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(server, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(listen(server, 4), 0);
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "unix-connect", name});
  EXPECT_EQ(stdout_of(r), "unix-connect errno=ECONNREFUSED\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_LT(accept(server, nullptr, nullptr), 0) << "the sandbox reached a host abstract socket";
  close(server);
}

TEST(HostileNetwork, RawAndPacketSocketsNeedACapabilityTheSandboxLacks) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "/bin/sc-probe socket raw; /bin/sc-probe socket packet"});
  EXPECT_EQ(stdout_of(r), "socket raw errno=EPERM\nsocket packet errno=EPERM\n");
  EXPECT_TRUE(no_denials(r));  // the kernel refused them (no CAP_NET_RAW); the filter allows both
}

TEST(HostileNetwork, AuditNetlinkCannotBeUsedToWriteTheHostAuditLog) {
  // The socket opens (the filter allows AF_NETLINK), but the kernel refuses the message:
  // no CAP_AUDIT_WRITE, and not the initial user namespace.
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "/bin/sc-probe socket netlink-audit; /bin/sc-probe audit-send"});
  EXPECT_EQ(stdout_of(r), "socket netlink-audit ok\naudit-send errno=EPERM\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_TRUE(no_denials(r));
}

TEST(HostileNetwork, OutsideAddressesAreUnreachable) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "/bin/sc-probe udp-send 192.0.2.1 53; /bin/sc-probe udp-send 169.254.169.254 80"});
  EXPECT_EQ(stdout_of(r), "udp errno=ENETUNREACH\nudp errno=ENETUNREACH\n");
  EXPECT_EQ(status_of(r), "ok");
}

}  // namespace
}  // namespace sandcell::test
