// IpAddress and Cidr: the strict textual forms, and prefix matching on network-order bytes.
#include <arpa/inet.h>
#include <netinet/in.h>

#include <charconv>
#include <cstring>

#include "sandcell/network/address_policy.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::network {

std::optional<IpAddress> IpAddress::parse(std::string_view text) {
  if (text.size() >= INET6_ADDRSTRLEN) return std::nullopt;
  const std::string s(text);
  IpAddress address;
  if (inet_pton(AF_INET, s.c_str(), address.bytes.data()) == 1) {
    address.family = AF_INET;
    return address;
  }
  if (inet_pton(AF_INET6, s.c_str(), address.bytes.data()) == 1) {
    address.family = AF_INET6;
    return address;
  }
  return std::nullopt;
}

IpAddress IpAddress::v4(uint32_t host_order) {
  IpAddress address{.family = AF_INET};
  const uint32_t net = htonl(host_order);
  std::memcpy(address.bytes.data(), &net, 4);
  return address;
}

std::optional<IpAddress> IpAddress::from_sockaddr(const sockaddr* sa) {
  IpAddress address;
  if (sa->sa_family == AF_INET) {
    address.family = AF_INET;
    std::memcpy(address.bytes.data(), &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, 4);
    return address;
  }
  if (sa->sa_family == AF_INET6) {
    address.family = AF_INET6;
    std::memcpy(address.bytes.data(), &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, 16);
    return address;
  }
  return std::nullopt;
}

std::string IpAddress::to_string() const {
  char text[INET6_ADDRSTRLEN] = {};
  if (family != AF_INET && family != AF_INET6) return "?";
  inet_ntop(family, bytes.data(), text, sizeof text);
  return text;
}

Cidr::Cidr(IpAddress network, unsigned prefix_length)
    : network_(network), prefix_length_(prefix_length) {}

Cidr Cidr::parse(std::string_view text) {
  const auto slash = text.find('/');
  const auto address = IpAddress::parse(text.substr(0, slash));
  if (!address) throw Error::invalid("not an IP range: " + std::string(text));
  const unsigned max = address->family == AF_INET ? 32 : 128;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    const auto digits = text.substr(slash + 1);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), prefix);
    if (ec != std::errc() || end != digits.data() + digits.size() || digits.empty() ||
        prefix > max) {
      throw Error::invalid("not an IP range: " + std::string(text));
    }
  }
  IpAddress masked = *address;
  for (unsigned bit = prefix; bit < max; ++bit) {
    masked.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  if (masked != *address) throw Error::invalid("host bits set in IP range: " + std::string(text));
  return Cidr(*address, prefix);
}

bool Cidr::contains(const IpAddress& address) const {
  if (address.family != network_.family) return false;
  const unsigned full = prefix_length_ / 8;
  if (std::memcmp(address.bytes.data(), network_.bytes.data(), full) != 0) return false;
  const unsigned rest = prefix_length_ % 8;
  if (rest == 0) return true;
  const uint8_t mask = static_cast<uint8_t>(0xff00 >> rest);
  return (address.bytes[full] & mask) == (network_.bytes[full] & mask);
}

// Two prefixes overlap exactly when one contains the other's network address.
bool Cidr::overlaps(const Cidr& other) const {
  return contains(other.network_) || other.contains(network_);
}

std::string Cidr::to_string() const {
  return network_.to_string() + "/" + std::to_string(prefix_length_);
}

}  // namespace sandcell::network
