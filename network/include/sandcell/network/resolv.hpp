#pragma once
// DNS for `--net full`: the sandbox gets the host's resolvers, with a loopback stub such as
// systemd-resolved's 127.0.0.53 (unreachable from another netns) replaced by its upstream servers.
#include <filesystem>
#include <string>
#include <vector>

#include "sandcell/network/address_policy.hpp"

namespace sandcell::network {

struct SandboxDns {
  std::vector<IpAddress> resolvers;  // IPv4 only (full mode NATs IPv4 only); allowed on port 53
  std::string resolv_conf;           // the sandbox's /etc/resolv.conf
};

// The "nameserver" addresses of a resolv.conf (missing file: none).
std::vector<IpAddress> read_nameservers(const std::filesystem::path& resolv_conf);

SandboxDns sandbox_dns(
    const std::filesystem::path& resolv_conf = "/etc/resolv.conf",
    const std::filesystem::path& upstream_conf = "/run/systemd/resolve/resolv.conf");

}  // namespace sandcell::network
