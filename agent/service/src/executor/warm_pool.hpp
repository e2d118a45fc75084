#pragma once
// The warm pool (docs/architecture.md, "The warm pool"): per skill, `sandcell code --pool-member
// SKILL` processes started ahead, each a prepared sandbox whose interpreter waits for one request.
// A member taken out of the pool is the caller's (StartedChild: finish_child hands it the
// request); the pool refills in the background, one start at a time, within the count per skill
// and the memory bound.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "executor/child_process.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

class WarmPool {
 public:
  // A member's command line; `zygote`: the directory of the skill's zygote whose fork its
  // program is to be (PoolOptions::zygotes), empty for the others.
  using MemberArgv =
      std::function<std::vector<std::string>(const std::string& skill, const std::string& zygote)>;
  // A zygote's (`sandcell code --pool-zygote SKILL --zygote-slots N`): it says
  // {"ready": true, "zygote": DIR} and runs until its stdin closes.
  using ZygoteArgv =
      std::function<std::vector<std::string>(const std::string& skill, uint32_t slots)>;
  WarmPool(PoolOptions options, MemberArgv member_argv, ZygoteArgv zygote_argv = {});
  // Cancels every member (closes its stdin: it kills its sandbox and cleans up) and reaps it,
  // then each zygote.
  ~WarmPool();
  WarmPool(const WarmPool&) = delete;
  WarmPool& operator=(const WarmPool&) = delete;

  bool pools(const std::string& skill) const { return options_.sizes.count(skill) != 0; }
  // The longest-waiting ready member of `skill`, now the caller's; nullopt when none is ready
  // (the caller runs the request cold rather than wait).
  std::optional<StartedChild> take(const std::string& skill);
  // How many members of `skill` are ready now (tests, the status line).
  size_t ready_count(const std::string& skill) const;
  // While one exists, the pool starts no member: a request found the pool of its skill empty and
  // runs cold. Under more load than the pool can hold, a start (an interpreter importing its
  // preloads: numpy is ~5x the CPU of a cold `print(1)`) would only take CPU from the cold runs
  // (measured: 0.78x the requests/s of no pool at concurrency 8); the pool refills once no
  // request waits on a cold run. Starts already under way go on.
  class ColdRun {
   public:
    explicit ColdRun(WarmPool& pool);
    ~ColdRun();
    ColdRun(const ColdRun&) = delete;
    ColdRun& operator=(const ColdRun&) = delete;

   private:
    WarmPool& pool_;
  };
  // How many requests run cold because the pool was empty (tests).
  size_t cold_runs() const;
  // A taken member that has answered and is tearing its sandbox down: reaped once it exits
  // (the pool's thread watches its pidfd), or by the destructor, which waits for it. Its
  // replacement starts once it has exited, or 30 ms after the answer, whichever comes first.
  void reap_when_exited(StartedChild member);

 private:
  struct Member {
    std::string skill;
    StartedChild child;
    std::chrono::steady_clock::time_point started;
    bool ready = false;
    uint64_t memory_bytes = 0;
    std::string line;  // its stdout so far, before the ready line ends
  };

  // A skill's zygote (PoolOptions::zygotes): its members start once it is ready; when it ends,
  // they fail (their sandboxes were nested in it), and another is started.
  struct Zygote {
    StartedChild child;
    bool ready = false;
    std::string dir;
    std::string line;
  };

  void maintain(std::stop_token stop);
  // The zygote a member of `skill` is to fork from: "" without one (or not ready: nullopt).
  std::optional<std::string> zygote_of(const std::string& skill) const;
  void start_zygote(const std::string& skill, std::chrono::steady_clock::time_point now);
  bool read_zygote(const std::string& skill, Zygote& z);
  std::optional<std::string> skill_to_start(std::chrono::steady_clock::time_point now,
                                            bool answering);
  void start_member(const std::string& skill, std::chrono::steady_clock::time_point now);
  // Reads what `m` printed; false when it is to be dropped (failed, exited or garbage).
  bool read_member(Member& m);

  const PoolOptions options_;
  const MemberArgv member_argv_;
  const ZygoteArgv zygote_argv_;
  std::map<std::string, Zygote> zygotes_;      // under mutex_
  std::set<std::string> forked_skills_;        // options_.zygotes but those given up; under mutex_
  std::map<std::string, int> zygote_failures_;  // in a row, before ready; under mutex_
  std::vector<std::string> zygotes_to_start_;  // decided under mutex_, started outside it
  mutable std::mutex mutex_;
  std::list<Member> members_;
  std::vector<StartedChild> ending_;  // cancelled, to be reaped outside the lock
  std::vector<StartedChild> exiting_;  // answered, reaped when their pidfd says so; under mutex_
  std::map<std::string, uint64_t> memory_estimate_;  // per skill: the last ready member's
  std::map<std::string, std::chrono::steady_clock::time_point> retry_after_;  // after a failure
  std::chrono::steady_clock::time_point quiet_until_{};  // no refill before, while a member is exiting
  size_t cold_runs_ = 0;  // ColdRun guards alive: no start while > 0; under mutex_
  runtime::UniqueFd wake_;  // eventfd: a taken member answered (refill), or the pool ends
  std::jthread thread_;     // last: starts once the rest exists
};

}  // namespace sandcell::agent_service
