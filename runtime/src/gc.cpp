// collect_garbage(): what `sandcell gc` runs. A supervisor killed with SIGKILL takes its sandbox
// with it (PDEATHSIG kills pid 1, the kernel the rest of the pid namespace) and its mounts lived
// only in the sandbox's mount namespace; what can remain are cgroup directories, run state, the
// claim of a `--userns=auto` run on its id range (userns_pool.hpp) and, for `--net
// allow:`/`full`, the run's chains in the nftables table `sandcell` (its veth dies with the
// sandbox's netns, unless something kept that alive). gc also empties the pool of network
// namespaces runs make ahead for each other (netns_pool.hpp): a cache, not a leftover, but gc
// is how a host is made to hold nothing of sandcell.
#include "sandcell/network/gc.hpp"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "netns_pool.hpp"
#include "run_state.hpp"
#include "sandcell/network/veth.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "userns_pool.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

bool run_is_live(const std::string& run_id) {
  pid_t supervisor = supervisor_of_run_id(run_id);
  return supervisor > 0 && supervisor_alive(supervisor);
}

std::vector<std::string> cgroups_in_state(const fs::path& dir) {
  std::ifstream in(dir / "state.json");
  auto state = parse_bounded_json_or_discarded(in);
  if (state.is_discarded() || !state.contains("cgroups")) return {};
  return state["cgroups"].get<std::vector<std::string>>();
}

void collect_run_states(const std::string& state_root, std::vector<std::string>& removed) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_root, ec)) {
    std::string id = entry.path().filename();
    // Only run directories are judged: not the userns pool, not the shared scratch mount point.
    if (supervisor_of_run_id(id) < 0 || run_is_live(id)) continue;
    for (const std::string& cgroup : cgroups_in_state(entry.path()))
      if (fs::exists(cgroup) && remove_cgroup_dir(cgroup)) removed.push_back("cgroup " + cgroup);
    remove_state_dir(entry.path());
    removed.push_back("run state " + entry.path().string());
  }
}

void collect_cgroups(std::vector<std::string>& removed) {
  CgroupHost host = probe_cgroups();
  std::vector<std::string> parents;
  for (const auto& [controller, root] : host.v1_roots)
    parents.push_back(root + "/" + kCgroupParent);
  if (!host.v2_root.empty()) parents.push_back(host.v2_root + "/" + kCgroupParent);
  for (const std::string& parent : parents) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
      std::string id = entry.path().filename();
      // Only names of the run-id form are ours to judge; a live supervisor still owns its cgroup.
      if (!entry.is_directory() || supervisor_of_run_id(id) < 0 || run_is_live(id)) continue;
      if (remove_cgroup_dir(entry.path())) removed.push_back("cgroup " + entry.path().string());
    }
  }
}

// A run's network is named by veth_id_for(run id), which cannot be turned back into a run id:
// the live ids are those of the live runs in the state root. Removing a live run's chains would
// open its firewall, so runs are judged before any state directory is removed.
std::set<std::string> live_network_ids(const std::string& state_root) {
  std::set<std::string> live;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(state_root, ec)) {
    std::string id = entry.path().filename();
    if (run_is_live(id)) live.insert(network::veth_id_for(id));
  }
  return live;
}

void collect_networks(const std::set<std::string>& live, std::vector<std::string>& removed) {
  auto dead = network::collect_network_garbage(
      [&](std::string_view id) { return live.contains(std::string(id)); });
  for (const std::string& id : dead) removed.push_back("network sc-" + id);
}

}  // namespace

std::vector<std::string> collect_garbage(const std::string& state_root) {
  std::vector<std::string> removed;
  const std::string root = state_root.empty() ? default_state_root() : state_root;
  const std::set<std::string> live_networks = live_network_ids(root);
  collect_run_states(root, removed);
  for (std::string& line : collect_userns_claims(root, run_is_live))
    removed.push_back(std::move(line));
  for (std::string& line : collect_netns_pool(root, run_is_live))
    removed.push_back(std::move(line));
  // Rootless runs make no host cgroups (a delegated subtree goes with the user's own cgroup), no
  // veths and no nft elements; those of root's runs are not the user's to judge.
  if (rootless()) return removed;
  collect_cgroups(removed);
  collect_networks(live_networks, removed);
  return removed;
}

}  // namespace sandcell::runtime
