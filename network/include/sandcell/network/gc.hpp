#pragma once
// What a crashed run leaves of its network: sc-<id>h links in the host netns and the elements of
// link sc-<id>h in the sets of `inet sandcell`. Used by `sandcell gc`.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::network {

// Removes the links and firewall elements of every id for which is_live(id) is false, then the
// table if no run has elements left in it. Returns the ids it removed.
std::vector<std::string> collect_network_garbage(
    const std::function<bool(std::string_view id)>& is_live);

// The ids of the sc-<id>h links in the current netns.
std::vector<std::string> sandcell_link_ids();

}  // namespace sandcell::network
