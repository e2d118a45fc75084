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

class AddressPolicy {
 public:
  explicit AddressPolicy(std::vector<Cidr> allowed = {}) : allowed_(std::move(allowed)) {}

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

}  // namespace sandcell::network
