// Network garbage of crashed runs (see gc.hpp). Only names sandcell makes are considered:
// links "sc-<8 hex>h" and the elements of link "sc-<8 hex>h" in the sets of `inet sandcell`.
#include "sandcell/network/gc.hpp"

#include <netlink/route/link.h>

#include <algorithm>
#include <set>

#include "netlink.hpp"
#include "sandcell/network/nft_rules.hpp"
#include "sandcell/network/veth.hpp"

namespace sandcell::network {
namespace {

bool is_hex8(std::string_view s) {
  return s.size() == 8 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// "sc-1234abcdh" → "1234abcd"; "sc-1234abcd-input" → "1234abcd"; else "".
std::string id_in(std::string_view name, std::string_view suffix_start) {
  if (!name.starts_with("sc-") || name.size() < 3 + 8 + suffix_start.size()) return "";
  const auto id = name.substr(3, 8);
  if (!is_hex8(id) || !name.substr(11).starts_with(suffix_start)) return "";
  return std::string(id);
}

}  // namespace

std::vector<std::string> sandcell_link_ids() {
  auto sock = netlink::connect_route();
  const auto cache = netlink::link_cache(sock.get());
  std::vector<std::string> ids;
  for (nl_object* o = nl().cache_get_first(cache.get()); o != nullptr; o = nl().cache_get_next(o)) {
    const char* name = rtnl().link_get_name(reinterpret_cast<rtnl_link*>(o));
    const std::string_view n = name != nullptr ? name : "";
    if (n.size() == 12 && n.back() == 'h') {
      if (auto id = id_in(n, "h"); !id.empty()) ids.push_back(id);
    }
  }
  return ids;
}

std::vector<std::string> collect_network_garbage(
    const std::function<bool(std::string_view id)>& is_live) {
  std::set<std::string> dead;
  for (const auto& id : sandcell_link_ids()) {
    if (!is_live(id)) dead.insert(id);
  }
  for (const auto& id : firewall_ids()) {
    if (!is_live(id)) dead.insert(id);
  }
  for (const auto& id : dead) {
    delete_link_if_present("sc-" + id + "h");
    remove_firewall(id);
  }
  remove_idle_sandcell_table();
  return {dead.begin(), dead.end()};
}

}  // namespace sandcell::network
