// The blocked ranges. IPv6 forms that carry an IPv4 address (mapped, compatible, SIIT-translated,
// NAT64, 6to4) are judged by that IPv4 address, because that is where a packet to them can end
// up; Teredo and the local-use NAT64 prefix are refused whole. The documentation ranges
// (192.0.2/24, 198.51.100/24, 203.0.113/24, 2001:db8::/32) are NOT blocked: they are never routed
// on the internet, so reaching them is harmless, and tests build their "internet" out of them.
#include "sandcell/network/address_policy.hpp"

#include <netinet/in.h>

#include <cstring>

#include "sandcell/base/error.hpp"

namespace sandcell::network {
namespace {

struct NamedRange {
  Cidr range;
  const char* name = "";
};

const std::vector<NamedRange>& ipv4_ranges() {
  static const std::vector<NamedRange> ranges = {
      {Cidr::parse("0.0.0.0/8"), "this-network"},
      {Cidr::parse("10.0.0.0/8"), "private"},
      {Cidr::parse("100.64.0.0/10"), "CGNAT"},
      {Cidr::parse("127.0.0.0/8"), "loopback"},
      {Cidr::parse("169.254.0.0/16"), "link-local/metadata"},
      {Cidr::parse("172.16.0.0/12"), "private"},
      {Cidr::parse("192.0.0.0/24"), "IETF protocol assignments"},
      {Cidr::parse("192.168.0.0/16"), "private"},
      {Cidr::parse("198.18.0.0/15"), "benchmarking (sandcell veths)"},
      {Cidr::parse("224.0.0.0/4"), "multicast"},
      {Cidr::parse("240.0.0.0/4"), "reserved/broadcast"},
  };
  return ranges;
}

const std::vector<NamedRange>& ipv6_ranges() {
  static const std::vector<NamedRange> ranges = {
      {Cidr::parse("::/128"), "unspecified"},    {Cidr::parse("::1/128"), "loopback"},
      {Cidr::parse("::/96"), "IPv4-compatible"}, {Cidr::parse("64:ff9b:1::/48"), "local-use NAT64"},
      {Cidr::parse("100::/64"), "discard"},      {Cidr::parse("2001::/32"), "Teredo"},
      {Cidr::parse("fc00::/7"), "unique-local"}, {Cidr::parse("fe80::/10"), "link-local"},
      {Cidr::parse("fec0::/10"), "site-local"},  {Cidr::parse("ff00::/8"), "multicast"},
  };
  return ranges;
}

IpAddress embedded_v4(const IpAddress& v6, size_t offset) {
  IpAddress v4{.family = AF_INET};
  std::memcpy(v4.bytes.data(), v6.bytes.data() + offset, 4);
  return v4;
}

// The IPv4 address an IPv6 address stands for, and what kind of embedding it is.
std::optional<std::pair<IpAddress, const char*>> ipv4_inside(const IpAddress& v6) {
  static const Cidr mapped = Cidr::parse("::ffff:0:0/96");
  static const Cidr translated = Cidr::parse("::ffff:0:0:0/96");
  static const Cidr compatible = Cidr::parse("::/96");
  static const Cidr nat64 = Cidr::parse("64:ff9b::/96");
  static const Cidr six_to_four = Cidr::parse("2002::/16");
  if (mapped.contains(v6)) return std::pair{embedded_v4(v6, 12), "IPv4-mapped"};
  if (translated.contains(v6)) return std::pair{embedded_v4(v6, 12), "IPv4-translated"};
  if (nat64.contains(v6)) return std::pair{embedded_v4(v6, 12), "NAT64"};
  if (six_to_four.contains(v6)) return std::pair{embedded_v4(v6, 2), "6to4"};
  if (compatible.contains(v6) && !Cidr::parse("::/127").contains(v6)) {
    return std::pair{embedded_v4(v6, 12), "IPv4-compatible"};
  }
  return std::nullopt;
}

std::optional<std::string> blocked_in(const std::vector<NamedRange>& ranges, const IpAddress& a) {
  for (const auto& r : ranges) {
    if (r.range.contains(a)) return std::string(r.name) + " " + r.range.to_string();
  }
  return std::nullopt;
}

}  // namespace

const Cidr& sandcell_range() {
  static const Cidr range = Cidr::parse("198.18.0.0/15");
  return range;
}

void check_openable(const Cidr& allowed) {
  static const Cidr mapped = Cidr::parse("::ffff:198.18.0.0/111");
  if (allowed.overlaps(sandcell_range()) || allowed.overlaps(mapped))
    throw Error::invalid(allowed.to_string() + " overlaps " + sandcell_range().to_string() +
                         ", sandcell's own veth and proxy addresses, which no sandbox may "
                         "reach: open a range outside it");
}

AddressPolicy::AddressPolicy(std::vector<Cidr> allowed) : allowed_(std::move(allowed)) {
  for (const Cidr& cidr : allowed_) check_openable(cidr);
}

const std::vector<Cidr>& blocked_ipv4_ranges() {
  static const std::vector<Cidr> ranges = [] {
    std::vector<Cidr> out;
    for (const auto& r : ipv4_ranges()) out.push_back(r.range);
    return out;
  }();
  return ranges;
}

std::optional<std::string> AddressPolicy::blocked_range(const IpAddress& address) const {
  const auto inside = address.family == AF_INET6 ? ipv4_inside(address) : std::nullopt;
  // Never opened (the constructor refuses such ranges; this holds whatever it was given).
  if (sandcell_range().contains(address)) return blocked_in(ipv4_ranges(), address);
  if (inside && sandcell_range().contains(inside->first))
    return inside->second + (" " + *blocked_in(ipv4_ranges(), inside->first));
  for (const auto& cidr : allowed_) {
    if (cidr.contains(address)) return std::nullopt;
    if (inside && std::string_view(inside->second) == "IPv4-mapped" &&
        cidr.contains(inside->first)) {
      return std::nullopt;
    }
  }
  if (address.family == AF_INET) return blocked_in(ipv4_ranges(), address);
  if (address.family != AF_INET6) return "not an IP address";
  if (inside) {
    if (auto why = blocked_in(ipv4_ranges(), inside->first)) return inside->second + (" " + *why);
  }
  return blocked_in(ipv6_ranges(), address);
}

bool AddressPolicy::is_blocked(const sockaddr* address) const {
  const auto ip = IpAddress::from_sockaddr(address);
  return !ip || is_blocked(*ip);
}

}  // namespace sandcell::network
