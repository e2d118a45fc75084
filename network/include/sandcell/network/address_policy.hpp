#pragma once
// Which resolved addresses the proxy (and `--net full`) may connect to: no loopback, private,
// CGNAT, link-local/metadata, multicast, reserved or unspecified addresses, in any of their IPv6
// disguises, unless a `--net-allow-cidr` range opens one.
#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::network {

struct IpAddress {
  int family = 0;                   // AF_INET or AF_INET6
  std::array<uint8_t, 16> bytes{};  // network order; IPv4 uses the first 4

  // Strict textual forms only ("10.0.0.1", "::1"); see normalise_host() for legacy IPv4 forms.
  static std::optional<IpAddress> parse(std::string_view text);
  static IpAddress v4(uint32_t host_order);
  static std::optional<IpAddress> from_sockaddr(const sockaddr* sa);
  std::string to_string() const;
  bool operator==(const IpAddress&) const = default;
};

class Cidr {
 public:
  // "192.168.0.0/16", "fc00::/7"; a bare address is a /32 or /128. Host bits must be zero.
  // Throws Error::invalid.
  static Cidr parse(std::string_view text);
  Cidr(IpAddress network, unsigned prefix_length);
  bool contains(const IpAddress& address) const;
  bool overlaps(const Cidr& other) const;
  const IpAddress& network() const { return network_; }
  unsigned prefix_length() const { return prefix_length_; }
  std::string to_string() const;

 private:
  IpAddress network_;
  unsigned prefix_length_ = 0;
};

// The IPv4 ranges nobody outside the host should be able to reach through sandcell, in a form
// nft_rules can turn into a set: 0/8 10/8 100.64/10 127/8 169.254/16 172.16/12 192.0.0/24
// 192.168/16 198.18/15 224/4 240/4 (which covers 255.255.255.255).
const std::vector<Cidr>& blocked_ipv4_ranges();

// sandcell's own addresses: every veth pair's /30 and the allowlist proxies listening on their
// host ends (veth.hpp). No `--net-allow-cidr` may open any part of it, or one sandbox could
// reach another's proxy and tunnel out under that sandbox's allowlist and record.
const Cidr& sandcell_range();
// Throws Error::invalid when `allowed` overlaps sandcell_range() (or its IPv4-mapped form).
void check_openable(const Cidr& allowed);

class AddressPolicy {
 public:
  AddressPolicy() = default;
  // Throws Error::invalid when a range may not be opened (check_openable).
  explicit AddressPolicy(std::vector<Cidr> allowed);

  // The name of the blocked range the address falls in ("link-local 169.254.0.0/16"), or nullopt
  // when the proxy may connect to it. An allow-cidr range that contains the address (or the IPv4
  // address an IPv4-mapped one stands for) overrides the block.
  std::optional<std::string> blocked_range(const IpAddress& address) const;
  bool is_blocked(const IpAddress& address) const { return blocked_range(address).has_value(); }
  bool is_blocked(const sockaddr* address) const;
  const std::vector<Cidr>& allowed() const { return allowed_; }

 private:
  std::vector<Cidr> allowed_;
};

// Why `address` is the host itself as seen from the calling thread's network namespace ("address
// of this host 203.0.113.5 (eth0)"), or nullopt. Asked afresh on every call (getifaddrs): an
// address added after the proxy started counts too. Besides every interface address: 0.0.0.0/8
// and :: (a connect to them reaches the host), all of 127.0.0.0/8 and ::1, and the IPv4
// addresses inside IPv4-mapped IPv6 ones. Fails closed: when the addresses cannot be listed,
// every address is refused with the reason.
std::optional<std::string> address_of_this_host(const IpAddress& address);
// Every interface address of the calling thread's network namespace, now. Throws Error.
std::vector<IpAddress> addresses_of_this_host();

}  // namespace sandcell::network
