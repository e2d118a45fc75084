#pragma once
// Waiting on a container without polling: a thread that follows a container's log, waits for
// its exit, its start or its removal sleeps in poll(2) until something that may answer it
// happens:
//   - the container's directory changes (inotify on it: the log appended or rotated, the exit
//     file written, state.json replaced, a reader's lock file closed, the directory removed);
//   - its supervisor ends (a pidfd: readable once the process is gone, also after a SIGKILL
//     that left it no time to write anything; the waiter then records the lost supervisor's
//     end itself, note_lost_supervisor, so that it and every other waiter see an exit);
//   - the server stops (end_all_streams writes one eventfd that every waiter polls).
// No wake-up is lost: the watch is armed in the constructor, before the caller first checks
// its condition, so a change after a check is queued for the next wait(). A wake is a hint to
// check again, never an answer (several files share the one watch).
#include <sys/types.h>

#include <chrono>
#include <optional>

#include "container_store.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {

class ContainerWake {
 public:
  // What wakes the waiter. Everything: also each append to the log (a follower). Changes: the
  // rest, for a waiter on the exit, the state or a reader's lock, to which an append answers
  // nothing: a `docker wait` beside a container writing as fast as it could woke for each write
  // and took a third of a core (session 31). The exit file is written and closed
  // (IN_CLOSE_WRITE), state.json replaced by a rename (IN_MOVED_TO).
  enum class Watch { Everything, Changes };
  explicit ContainerWake(ContainerDir container, Watch watch = Watch::Everything);

  // Call before each check of the caller's condition: watches the supervisor state.json names
  // as running (again after a restart), and when the watched one is gone without having
  // recorded its end, records it (exit file, state, `die`), so that the check sees the exit.
  void look_at_supervisor();

  // Sleeps until something may have changed, the server stops, or `timeout` passes (nullopt:
  // no timeout). Without inotify (fs.inotify.max_user_instances reached, or the directory is
  // gone) it sleeps at most kFallbackPoll: slower, never wrong.
  void wait(std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  static constexpr std::chrono::milliseconds kFallbackPoll{20};

 private:
  void drain_inotify();
  void watch_recorded_supervisor();

  ContainerDir container_;
  runtime::UniqueFd inotify_, pidfd_;
  bool state_changed_ = true;  // state.json may name a supervisor not watched yet
  pid_t watched_pid_ = 0;
  unsigned long long watched_start_ = 0;
  bool gone_ = false;          // the watched supervisor is gone; its end not yet looked at
};

// The eventfd end_all_streams writes once; it stays readable (-1 if none could be made: then
// the stopping flag is seen at the next wake).
int server_stopping_fd();
void wake_all_waiters();

}  // namespace sandcell::dockerapi
