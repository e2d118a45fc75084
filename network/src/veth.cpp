// The veth pair of one sandbox (see veth.hpp).
#include "sandcell/network/veth.hpp"

#include <netlink/route/addr.h>
#include <netlink/route/link/veth.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

#include "host_lock.hpp"
#include "netlink.hpp"
#include "netns_thread.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::network {
namespace {

constexpr uint32_t kBase = 0xC6120000;         // 198.18.0.0
constexpr uint32_t kSubnets = (1u << 17) / 4;  // /15 in /30s

bool is_veth_id(std::string_view id) {
  return id.size() == 8 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// The /30s already used by a host end in this netns.
std::set<uint32_t> used_subnets(nl_sock* sock) {
  nl_cache* raw = nullptr;
  netlink::check_nl(rtnl().addr_alloc_cache(sock, &raw), "list addresses");
  netlink::Cache cache(raw);
  std::set<uint32_t> used;
  for (nl_object* o = nl().cache_get_first(raw); o != nullptr; o = nl().cache_get_next(o)) {
    auto* addr = reinterpret_cast<rtnl_addr*>(o);
    nl_addr* local = rtnl().addr_get_local(addr);
    if (rtnl().addr_get_family(addr) != AF_INET || local == nullptr) continue;
    uint32_t net = 0;
    std::memcpy(&net, nl().addr_get_binary_addr(local), 4);
    const uint32_t host = ntohl(net);
    if ((host & 0xFFFE0000) == kBase) used.insert((host - kBase) / 4);
  }
  return used;
}

uint32_t pick_subnet(nl_sock* sock, std::string_view id) {
  const auto used = used_subnets(sock);
  // The run id is hex; its first eight digits spread sandboxes over the range.
  const uint32_t start = parse_number<uint32_t>(id.substr(0, 8), 16).value_or(0) % kSubnets;
  for (uint32_t i = 0; i < kSubnets; ++i) {
    const uint32_t candidate = (start + i) % kSubnets;
    if (!used.contains(candidate)) return candidate;
  }
  throw Error(EADDRNOTAVAIL, "find a free /30 in 198.18.0.0/15 for a sandbox veth");
}

// Best effort: no IPv6 link-local address, router solicitations or DAD on our links. The firewall
// drops IPv6 anyway; this only keeps the links quiet.
void disable_ipv6(const std::string& link_name) {
  std::ofstream("/proc/sys/net/ipv6/conf/" + link_name + "/disable_ipv6") << "1\n";
}

// Runs `step` on a thread of its own; the destructor joins it (also when the links failed).
class Alongside {
 public:
  Alongside(const std::function<void(const VethPair&)>& step, const VethPair& pair) {
    if (step)
      thread_ = std::thread([this, &step, &pair] {
        try {
          step(pair);
        } catch (...) {
          failure_ = std::current_exception();
        }
      });
  }
  ~Alongside() {
    if (thread_.joinable()) thread_.join();
  }
  void finish() {
    if (thread_.joinable()) thread_.join();
    if (failure_) std::rethrow_exception(failure_);
  }

 private:
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace

std::string veth_id_for(std::string_view run_id) {
  uint32_t hash = 2166136261u;
  for (unsigned char c : run_id) hash = (hash ^ c) * 16777619u;
  char text[9];
  std::snprintf(text, sizeof text, "%08x", hash);
  return text;
}

VethPair::VethPair(std::string id, pid_t sandbox_pid,
                   const std::function<void(const VethPair&)>& while_linking)
    : id_(std::move(id)) {
  if (!is_veth_id(id_)) throw Error::invalid("veth id must be 8 lower-case hex digits: " + id_);
  host_name_ = "sc-" + id_ + "h";
  sandbox_name_ = "sc-" + id_ + "c";
  HostNetworkLock lock;
  auto sock = netlink::connect_route();
  const uint32_t subnet = kBase + 4 * pick_subnet(sock.get(), id_);
  host_address_ = IpAddress::v4(subnet + 1);
  sandbox_address_ = IpAddress::v4(subnet + 2);
  Alongside alongside(while_linking, *this);
  create_links(sock.get(), sandbox_pid);
  try {
    alongside.finish();
  } catch (...) {
    delete_link_if_present(host_name_);  // no destructor runs for a pair that was not made
    owned_ = false;
    throw;
  }
}

void VethPair::create_links(nl_sock* sock, pid_t sandbox_pid) {
  netlink::check_nl(
      rtnl().link_veth_add(sock, host_name_.c_str(), sandbox_name_.c_str(), sandbox_pid),
      "create veth " + host_name_ + " with " + sandbox_name_ + " in the netns of pid " +
          std::to_string(sandbox_pid));
  owned_ = true;
  try {
    auto host = netlink::find_link(sock, host_name_);
    if (!host) throw Error(ENODEV, "find " + host_name_ + " after creating it");
    disable_ipv6(host_name_);
    netlink::add_address(sock, rtnl().link_get_ifindex(host.get()), host_address_, 30, host_name_);
    netlink::bring_up(sock, host.get(), host_name_);
    configure_sandbox_end(sandbox_pid);
  } catch (...) {
    delete_link_if_present(host_name_);
    owned_ = false;
    throw;
  }
}

void VethPair::configure_sandbox_end(pid_t sandbox_pid) const {
  run_in_netns_of(sandbox_pid, [&] {
    auto sock = netlink::connect_route();
    if (auto lo = netlink::find_link(sock.get(), "lo"))
      netlink::bring_up(sock.get(), lo.get(), "lo");
    auto link = netlink::find_link(sock.get(), sandbox_name_);
    if (!link)
      throw Error(ENODEV,
                  "find " + sandbox_name_ + " in the netns of pid " + std::to_string(sandbox_pid));
    const int ifindex = rtnl().link_get_ifindex(link.get());
    disable_ipv6(sandbox_name_);
    netlink::add_address(sock.get(), ifindex, sandbox_address_, 30, sandbox_name_);
    netlink::bring_up(sock.get(), link.get(), sandbox_name_);
    netlink::add_default_route(sock.get(), ifindex, host_address_, sandbox_name_);
  });
}

VethPair::VethPair(VethPair&& other) noexcept
    : id_(std::move(other.id_)),
      host_name_(std::move(other.host_name_)),
      sandbox_name_(std::move(other.sandbox_name_)),
      host_address_(other.host_address_),
      sandbox_address_(other.sandbox_address_),
      owned_(std::exchange(other.owned_, false)) {}

VethPair::~VethPair() {
  if (!owned_) return;
  try {
    delete_link_if_present(host_name_);
  } catch (const std::exception&) {
    // Left for `sandcell gc`, which finds sc- links whose run is gone.
  }
}

Cidr VethPair::subnet() const {
  IpAddress network = host_address_;
  network.bytes[3] &= 0xFC;
  return Cidr(network, 30);
}

void delete_link_if_present(const std::string& name) {
  auto sock = netlink::connect_route();
  auto link = netlink::find_link(sock.get(), name);
  if (!link) return;
  const int rc = rtnl().link_delete(sock.get(), link.get());
  if (rc < 0 && rc != -NLE_OBJ_NOTFOUND && rc != -NLE_NODEV)
    netlink::check_nl(rc, "delete link " + name);
}

}  // namespace sandcell::network
