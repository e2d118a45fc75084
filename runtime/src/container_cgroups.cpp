// Cgroup operations on an OCI container after `create` has exited: it is known only by the
// directories recorded in its state.
#include <algorithm>
#include <chrono>

#include "cgroup_files.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/runtime/container.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

// The directory of the v1 freezer, or the v2 directory (it has cgroup.freeze).
std::string freezer_dir(const std::vector<std::string>& paths) {
  for (const std::string& dir : paths)
    if (cgroupfs::exists(dir + "/freezer.state") || cgroupfs::exists(dir + "/cgroup.freeze")) return dir;
  throw Error(ENOTSUP, "no freezer cgroup for this container (pause needs the v1 freezer or cgroup v2)");
}

}  // namespace

std::vector<pid_t> container_pids(const std::vector<std::string>& cgroup_paths) {
  std::vector<pid_t> pids;
  for (const std::string& dir : cgroup_paths)
    for (pid_t pid : cgroupfs::procs(dir))
      if (std::find(pids.begin(), pids.end(), pid) == pids.end()) pids.push_back(pid);
  std::sort(pids.begin(), pids.end());
  return pids;
}

void freeze_container(const std::vector<std::string>& cgroup_paths, bool frozen) {
  const std::string dir = freezer_dir(cgroup_paths);
  if (cgroupfs::exists(dir + "/cgroup.freeze")) {
    cgroupfs::write(dir + "/cgroup.freeze", frozen ? "1" : "0");
    return;
  }
  cgroupfs::write(dir + "/freezer.state", frozen ? "FROZEN" : "THAWED");
  // FREEZING is transient: wait (bounded) so `pause` returns with the container stopped.
  const char* wanted = frozen ? "FROZEN" : "THAWED";
  bool done = cgroupfs::wait_until([&] { return cgroupfs::read(dir + "/freezer.state").starts_with(wanted); },
                                   std::chrono::milliseconds(2000));
  if (!done) throw Error(EBUSY, "freezer of " + dir + " did not reach " + wanted);
}

bool container_frozen(const std::vector<std::string>& cgroup_paths) {
  for (const std::string& dir : cgroup_paths) {
    if (auto state = cgroupfs::read_if_exists(dir + "/freezer.state")) return state->starts_with("FROZEN");
    if (auto v2 = cgroupfs::read_if_exists(dir + "/cgroup.freeze")) return v2->starts_with("1");
  }
  return false;
}

}  // namespace sandcell::runtime
