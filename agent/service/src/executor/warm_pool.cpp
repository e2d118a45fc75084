#include "executor/warm_pool.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"

namespace sandcell::agent_service {
namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kRetryAfterFailure = std::chrono::seconds(5);
constexpr int kZygoteAttempts = 3;  // a zygote that fails to start this often in a row: none
constexpr auto kMaxStart = std::chrono::seconds(120);  // not ready by then: stuck, replaced
constexpr size_t kMaxReadyLine = 4096;
// After a member answers, the refill waits this long (or until the member has exited): the
// server is sending that answer, and a start (a process, a sandbox) would share the CPU with it.
constexpr auto kAnswerQuiet = std::chrono::milliseconds(30);

void reap(StartedChild& child) {
  child.stdin_write.reset();  // EOF before a request: the member cancels
  child.stdout_read.reset();
  child.stderr_read.reset();
  while (waitpid(child.pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::map<std::string, int> parse_pool_sizes(const std::string& text) {
  std::map<std::string, int> sizes;
  for (size_t start = 0; start <= text.size();) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos)
      throw Error::invalid("--pool expects SKILL=N[,SKILL=N...], got '" + text + "'");
    const std::string skill = item.substr(0, eq);
    const std::optional<int> n = parse_number<int>(item.substr(eq + 1));
    if (!n || *n < 1 || *n > 64) throw Error::invalid("--pool " + skill + ": between 1 and 64 prepared sandboxes");
    if (!sizes.emplace(skill, *n).second) throw Error::invalid("--pool names " + skill + " twice");
    start = end + 1;
  }
  return sizes;
}

WarmPool::WarmPool(PoolOptions options, MemberArgv member_argv, ZygoteArgv zygote_argv)
    : options_(std::move(options)),
      member_argv_(std::move(member_argv)),
      zygote_argv_(std::move(zygote_argv)),
      forked_skills_(options_.zygotes),
      wake_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
      thread_([this](std::stop_token stop) { maintain(stop); }) {
  if (!wake_) throw Error(errno, "eventfd for the warm pool");
}

WarmPool::~WarmPool() {
  thread_.request_stop();
  uint64_t one = 1;
  ssize_t ignored = write(wake_.get(), &one, sizeof one);
  (void)ignored;
  thread_.join();
  for (Member& m : members_) reap(m.child);
  for (StartedChild& c : ending_) reap(c);
  for (StartedChild& c : exiting_) reap(c);
  // Last: a zygote's sandbox ends only once the sandboxes nested in it are reaped, by the members.
  for (auto& [skill, z] : zygotes_) reap(z.child);
}

void WarmPool::reap_when_exited(StartedChild member) {
  std::lock_guard lock(mutex_);
  exiting_.push_back(std::move(member));
  const Clock::time_point now = Clock::now();
  if (now >= quiet_until_) quiet_until_ = now + kAnswerQuiet;  // a window, never extended: no starving
  uint64_t one = 1;
  ssize_t ignored = write(wake_.get(), &one, sizeof one);  // poll its pidfd, refill
  (void)ignored;
}

std::optional<StartedChild> WarmPool::take(const std::string& skill) {
  std::lock_guard lock(mutex_);
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->skill != skill || !it->ready) continue;
    // No wake-up for the refill here: the replacement's start (a process, a sandbox, the
    // interpreter's imports) would share the CPU with this request. It starts when the member
    // has answered (reap_when_exited), or at the pool thread's next round (within a second).
    StartedChild child = std::move(it->child);
    members_.erase(it);
    if (forked_skills_.contains(skill)) {  // a fork's start is cheap: refill now
      uint64_t one = 1;
      ssize_t ignored = write(wake_.get(), &one, sizeof one);
      (void)ignored;
    }
    return child;
  }
  return std::nullopt;
}

WarmPool::ColdRun::ColdRun(WarmPool& pool) : pool_(pool) {
  std::lock_guard lock(pool_.mutex_);
  ++pool_.cold_runs_;
}

WarmPool::ColdRun::~ColdRun() {
  std::lock_guard lock(pool_.mutex_);
  if (--pool_.cold_runs_ > 0) return;
  uint64_t one = 1;
  ssize_t ignored = write(pool_.wake_.get(), &one, sizeof one);  // refill now
  (void)ignored;
}

size_t WarmPool::cold_runs() const {
  std::lock_guard lock(mutex_);
  return cold_runs_;
}

size_t WarmPool::ready_count(const std::string& skill) const {
  std::lock_guard lock(mutex_);
  size_t n = 0;
  for (const Member& m : members_) n += m.skill == skill && m.ready;
  return n;
}

// One start at a time (a start is an interpreter importing its preloads: a core for a while,
// which the requests running meanwhile must not wait for), within the count per skill and the
// memory bound: the ready members' own memory plus the estimate for the one starting; none while
// a request runs cold for want of a member (ColdRun). Decided under mutex_; the start itself
// (start_member) is not: a spawn costs ~1-3 ms, which a request answering meanwhile
// (reap_when_exited) or taking a member would otherwise wait for.
//
// A zygote's members are another matter: a start is a sandbox and a fork (~15 ms of CPU, not an
// interpreter's ~130), less than the cold run a request takes without one, so they start while
// requests run cold and while members answer, several at a time (each waits for its sandbox,
// mostly), up to the count.
std::optional<std::string> WarmPool::skill_to_start(Clock::time_point now, bool answering) {
  uint64_t memory = 0;
  std::map<std::string, int> count;
  bool starting = false;
  for (const Member& m : members_) {
    starting = starting || (!m.ready && !forked_skills_.contains(m.skill));
    memory += m.memory_bytes;
    ++count[m.skill];
  }
  for (const auto& [skill, size] : options_.sizes) {
    const bool forked = forked_skills_.contains(skill);
    if (!forked && (cold_runs_ > 0 || starting || answering))
      continue;  // ColdRun; one start at a time
    if (count[skill] >= size || !zygote_of(skill)) continue;
    if (auto retry = retry_after_.find(skill); retry != retry_after_.end() && now < retry->second) continue;
    if (memory + memory_estimate_[skill] > options_.memory_bytes) continue;
    return skill;
  }
  return std::nullopt;
}

// Only the pool's thread starts members, so the decision above still holds here.
void WarmPool::start_member(const std::string& skill, Clock::time_point now) {
  try {
    std::optional<std::string> zygote;
    {
      std::lock_guard lock(mutex_);
      zygote = zygote_of(skill);
    }
    if (!zygote) return;  // it ended meanwhile
    StartedChild child = start_child(member_argv_(skill, *zygote));
    std::lock_guard lock(mutex_);
    members_.push_back({.skill = skill,
                        .child = std::move(child),
                        .started = now,
                        .ready = false,
                        .memory_bytes = 0,
                        .line = {}});
  } catch (const Error& e) {
    std::cerr << "sandcell: warm pool: cannot start a " << skill << " sandbox: " << e.what()
              << "\n";
    std::lock_guard lock(mutex_);
    retry_after_[skill] = now + kRetryAfterFailure;
  }
}

std::optional<std::string> WarmPool::zygote_of(const std::string& skill) const {
  if (!forked_skills_.contains(skill)) return "";
  auto it = zygotes_.find(skill);
  if (it == zygotes_.end() || !it->second.ready) return std::nullopt;
  return it->second.dir;
}

// Only the pool's thread starts zygotes; one per skill, after a failure not before retry_after_.
void WarmPool::start_zygote(const std::string& skill, Clock::time_point now) {
  // Ids for every member at once: the ready ones, the one starting, and those taken by requests
  // and still running or tearing down.
  const int size = options_.sizes.at(skill);
  const uint32_t slots = static_cast<uint32_t>(std::min(128, 2 * size + 2));
  try {
    StartedChild child = start_child(zygote_argv_(skill, slots));
    std::lock_guard lock(mutex_);
    zygotes_[skill] = Zygote{.child = std::move(child), .ready = false, .dir = {}, .line = {}};
  } catch (const Error& e) {
    std::cerr << "sandcell: warm pool: cannot start the " << skill << " zygote: " << e.what()
              << "\n";
    std::lock_guard lock(mutex_);
    retry_after_[skill] = now + kRetryAfterFailure;
  }
}

// Its ready line; anything else (its "ended" line, EOF) says it has ended.
bool WarmPool::read_zygote(const std::string& skill, Zygote& z) {
  char buffer[512];
  ssize_t n = read(z.child.stdout_read.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n > 0) z.line.append(buffer, static_cast<size_t>(n));
  const size_t nl = z.line.find('\n');
  if (n > 0 && nl == std::string::npos) return z.line.size() < kMaxReadyLine;
  if (n > 0 && !z.ready) {
    Json said = parse_bounded_json_or_discarded(std::string_view(z.line).substr(0, nl));
    if (nl + 1 == z.line.size() && said.is_object() && said.value("ready", false) &&
        said.contains("zygote") && said["zygote"].is_string()) {
      z.ready = true;
      z.dir = said["zygote"].get<std::string>();
      z.line.clear();
      return true;
    }
  }
  std::cerr << "sandcell: warm pool: the " << skill
            << " zygote ended: " << z.line.substr(0, kMaxReadyLine)
            << (z.line.empty() || z.line.back() != '\n' ? "\n" : "");
  return false;
}

bool WarmPool::read_member(Member& m) {
  char buffer[512];
  ssize_t n = read(m.child.stdout_read.get(), buffer, sizeof buffer);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
  if (n <= 0) return false;
  m.line.append(buffer, static_cast<size_t>(n));
  const size_t nl = m.line.find('\n');
  if (nl == std::string::npos) return m.line.size() < kMaxReadyLine;
  Json said = parse_bounded_json_or_discarded(std::string_view(m.line).substr(0, nl));
  if (m.ready || nl + 1 != m.line.size() || !said.is_object() || !said.value("ready", false)) {
    // Nothing but the ready line comes before a request: anything else is the member's failure.
    std::cerr << "sandcell: warm pool: a " << m.skill << " sandbox ended: " << m.line.substr(0, kMaxReadyLine);
    return false;
  }
  m.ready = true;
  m.line.clear();
  m.memory_bytes = said.value("memory_bytes", uint64_t{0});
  memory_estimate_[m.skill] = m.memory_bytes;
  return true;
}

void WarmPool::maintain(std::stop_token stop) {
  while (!stop.stop_requested()) {
    int timeout_ms = 1000;
    std::optional<std::string> start;
    const Clock::time_point now = Clock::now();
    {
      std::lock_guard lock(mutex_);
      std::erase_if(exiting_, [](StartedChild& c) {
        siginfo_t info{};  // si_pid stays 0 while it runs
        return waitid(P_PID, static_cast<id_t>(c.pid), &info, WEXITED | WNOHANG) == 0 && info.si_pid != 0;
      });
      for (auto it = members_.begin(); it != members_.end();) {
        if (it->ready ? now - it->started > options_.idle : now - it->started > kMaxStart) {
          if (!it->ready) {
            std::cerr << "sandcell: warm pool: a " << it->skill << " sandbox was not ready in time\n";
            retry_after_[it->skill] = now + kRetryAfterFailure;
          }
          ending_.push_back(std::move(it->child));  // replaced below by a fresh one
          it = members_.erase(it);
        } else {
          ++it;
        }
      }
      for (const std::string& skill : forked_skills_)
        if (!zygotes_.contains(skill) &&
            !(retry_after_.contains(skill) && now < retry_after_[skill]))
          zygotes_to_start_.push_back(skill);
      const bool answering = !exiting_.empty() && now < quiet_until_;
      start = skill_to_start(now, answering);
      timeout_ms = answering ? static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(quiet_until_ - now).count()) : 1000;
      if (start && forked_skills_.contains(*start)) timeout_ms = 0;  // another may start at once
    }
    for (StartedChild& c : ending_) reap(c);  // only this thread adds to it
    ending_.clear();
    for (const std::string& skill : zygotes_to_start_)
      start_zygote(skill, now);  // only this thread
    zygotes_to_start_.clear();
    if (start) start_member(*start, now);
    std::vector<pollfd> fds{{wake_.get(), POLLIN, 0}};
    std::vector<pid_t> polled;
    std::vector<std::string> polled_zygotes;
    // fds: the wake-up, the exiting members' pidfds, the members' stdouts, the zygotes' stdouts
    size_t first_member = 1, first_zygote = 1;
    {
      std::lock_guard lock(mutex_);
      for (const StartedChild& c : exiting_) fds.push_back({c.pidfd.get(), POLLIN, 0});
      first_member = fds.size();
      for (const Member& m : members_) {
        fds.push_back({m.child.stdout_read.get(), POLLIN, 0});
        polled.push_back(m.child.pid);
      }
      first_zygote = fds.size();
      for (const auto& [skill, z] : zygotes_) {
        fds.push_back({z.child.stdout_read.get(), POLLIN, 0});
        polled_zygotes.push_back(skill);
      }
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents) {
      uint64_t count;
      ssize_t ignored = read(wake_.get(), &count, sizeof count);
      (void)ignored;
    }
    std::lock_guard lock(mutex_);
    for (size_t i = first_zygote; i < fds.size(); ++i) {
      if (!fds[i].revents) continue;
      auto it = zygotes_.find(polled_zygotes[i - first_zygote]);  // only this thread erases them
      if (it == zygotes_.end()) continue;
      if (read_zygote(it->first, it->second)) {
        if (it->second.ready) zygote_failures_[it->first] = 0;
        continue;
      }
      // One that never got ready, again and again (no user namespace for it here, a skill image
      // without the bootstrap's zygote mode): the skill's members start their own interpreters.
      if (!it->second.ready && ++zygote_failures_[it->first] >= kZygoteAttempts) {
        std::cerr << "sandcell: warm pool: the " << it->first << " zygote did not start "
                  << kZygoteAttempts
                  << " times: its prepared sandboxes start their own interpreters\n";
        forked_skills_.erase(it->first);
      }
      retry_after_[it->first] = Clock::now() + kRetryAfterFailure;
      ending_.push_back(std::move(it->second.child));
      zygotes_.erase(it);
    }
    for (size_t i = first_member; i < first_zygote; ++i) {
      if (!fds[i].revents) continue;
      // Taken meanwhile: its pipe is the taker's now (and the fd number may be another's).
      auto it = std::find_if(members_.begin(), members_.end(),
                             [&](const Member& m) { return m.child.pid == polled[i - first_member]; });
      if (it == members_.end() || read_member(*it)) continue;
      retry_after_[it->skill] = Clock::now() + kRetryAfterFailure;
      ending_.push_back(std::move(it->child));
      members_.erase(it);
    }
  }
}

}  // namespace sandcell::agent_service
