// `events`: the container's statistics and OOM kills, as runc's events command prints them.
#include <thread>

#include "cgroup_stats.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/oci/lifecycle.hpp"

namespace sandcell::oci {
namespace {

ContainerState load_live(const StateStore& store, const std::string& id) {
  ContainerState s = store.load(id);
  if (current_status(s) == Status::Stopped)
    throw Error::invalid("container " + id + " is not running");
  return s;
}

}  // namespace

nlohmann::json stats_event(const StateStore& store, const std::string& id) {
  ContainerState s = load_live(store, id);
  return {{"type", "stats"}, {"id", id}, {"data", cgroup_stats(s.cgroup_paths)}};
}

void watch_events(const StateStore& store, const std::string& id,
                  std::chrono::milliseconds interval, std::ostream& out) {
  if (interval.count() <= 0) throw Error::invalid("--interval: must be positive");
  ContainerState s = load_live(store, id);
  const std::chrono::milliseconds kOomPoll(100);
  uint64_t ooms = oom_kills(s.cgroup_paths);
  auto next_stats = std::chrono::steady_clock::now();
  while (true) {
    bool stopped =
        current_status(s) == Status::Stopped;  // before the count: an OOM that ended it is seen
    if (uint64_t now = oom_kills(s.cgroup_paths); now > ooms) {
      ooms = now;
      out << nlohmann::json{{"type", "oom"}, {"id", id}}.dump() << std::endl;
    }
    if (stopped) return;
    if (std::chrono::steady_clock::now() >= next_stats) {
      out << nlohmann::json{{"type", "stats"}, {"id", id}, {"data", cgroup_stats(s.cgroup_paths)}}
                 .dump()
          << std::endl;
      next_stats += interval;
    }
    if (!out) return;  // the reader went away
    std::this_thread::sleep_for(std::min(kOomPoll, interval));
  }
}

}  // namespace sandcell::oci
