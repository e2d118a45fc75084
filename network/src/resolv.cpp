// DNS for `--net full` (see resolv.hpp). A loopback nameserver in /etc/resolv.conf is a local stub
// (systemd-resolved's 127.0.0.53, dnsmasq's 127.0.0.1) that the sandbox's netns cannot reach;
// its upstream servers are what the stub itself asks.
#include "sandcell/network/resolv.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace sandcell::network {
namespace {

bool is_loopback(const IpAddress& a) {
  static const Cidr v4 = Cidr::parse("127.0.0.0/8");
  static const Cidr v6 = Cidr::parse("::1/128");
  return v4.contains(a) || v6.contains(a);
}

// "search" and "domain" lines, which a sandbox resolver should keep.
std::string search_lines(const std::filesystem::path& resolv_conf) {
  std::ifstream in(resolv_conf);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string keyword;
    words >> keyword;
    if (keyword == "search" || keyword == "domain") out += line + "\n";
  }
  return out;
}

}  // namespace

std::vector<IpAddress> read_nameservers(const std::filesystem::path& resolv_conf) {
  std::ifstream in(resolv_conf);
  std::vector<IpAddress> out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line.substr(0, line.find_first_of("#;")));
    std::string keyword;
    std::string address;
    if (!(words >> keyword >> address) || keyword != "nameserver") continue;
    if (auto ip = IpAddress::parse(address)) out.push_back(*ip);
  }
  return out;
}

SandboxDns sandbox_dns(const std::filesystem::path& resolv_conf,
                       const std::filesystem::path& upstream_conf) {
  std::vector<IpAddress> servers;
  for (const auto& server : read_nameservers(resolv_conf)) {
    if (!is_loopback(server)) {
      servers.push_back(server);
      continue;
    }
    for (const auto& upstream : read_nameservers(upstream_conf)) {
      if (!is_loopback(upstream)) servers.push_back(upstream);
    }
  }
  SandboxDns dns;
  for (const auto& server : servers) {
    if (server.family != AF_INET) continue;
    if (std::find(dns.resolvers.begin(), dns.resolvers.end(), server) != dns.resolvers.end())
      continue;
    dns.resolvers.push_back(server);
    dns.resolv_conf += "nameserver " + server.to_string() + "\n";
  }
  dns.resolv_conf += search_lines(resolv_conf);
  return dns;
}

}  // namespace sandcell::network
