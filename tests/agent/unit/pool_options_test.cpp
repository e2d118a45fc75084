// `--pool SKILL=N[,...]` (docs/architecture.md, "The warm pool").
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "executor/warm_pool.hpp"
#include "sandcell/agent_service/executor.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent_service {
namespace {

TEST(PoolOptions, ParsesSkillCounts) {
  EXPECT_EQ(parse_pool_sizes("python=4,node=1"), (std::map<std::string, int>{{"node", 1}, {"python", 4}}));
  EXPECT_EQ(parse_pool_sizes("python=64"), (std::map<std::string, int>{{"python", 64}}));
}

TEST(PoolOptions, RefusesWhatIsNotABoundedCount) {
  for (const char* bad : {"", "python", "=4", "python=", "python=0", "python=65", "python=-1", "python=4x",
                          "python=4,", "python=1,python=2", "python=99999999999999999999"})
    EXPECT_THROW(parse_pool_sizes(bad), Error) << bad;
}

// A member as `code --pool-member` behaves before its request: the ready line, then it waits on
// stdin (EOF: cancelled, it exits) with its stdout open (closed, the pool drops it).
std::vector<std::string> fake_member() {
  return {"/bin/sh", "-c", "echo '{\"ready\": true, \"memory_bytes\": 1}'; exec cat"};
}

bool eventually(const std::function<bool()>& condition) {
  for (int i = 0; i < 500; ++i) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// Under more requests than the pool holds, a refill would only take CPU from the cold runs
// (bench/RESULTS.md, "HTTP"): while a request runs cold for want of a member, nothing starts.
TEST(WarmPool, NothingStartsWhileARequestRunsColdThenThePoolRefills) {
  std::atomic<int> starts{0};
  WarmPool pool(PoolOptions{.sizes = {{"x", 1}}}, [&](const std::string&, const std::string&) {
    ++starts;
    return fake_member();
  });
  ASSERT_TRUE(eventually([&] { return pool.ready_count("x") == 1; }));
  std::optional<StartedChild> taken;
  {
    WarmPool::ColdRun cold(pool);  // before the take: no round may refill in between
    EXPECT_EQ(pool.cold_runs(), 1u);
    taken = pool.take("x");
    ASSERT_TRUE(taken);
    EXPECT_FALSE(pool.take("x")) << "one member, taken";
    // The pool's thread makes a round at least once a second and at every wake-up.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    EXPECT_EQ(starts, 1) << "a member started while a request ran cold";
  }
  EXPECT_EQ(pool.cold_runs(), 0u);
  EXPECT_TRUE(eventually([&] { return pool.ready_count("x") == 1; })) << "no refill after the cold run";
  EXPECT_EQ(starts, 2);
  taken->stdin_write.reset();  // the taken member is the test's: cancel and reap it
  EXPECT_EQ(waitpid(taken->pid, nullptr, 0), taken->pid);
}

// A zygote as `code --pool-zygote` behaves: its ready line naming its directory, then it runs
// until its stdin closes. `exit_after`: it ends by itself after that many seconds.
std::vector<std::string> fake_zygote(const std::string& dir, int exit_after = 0) {
  const std::string then =
      exit_after > 0 ? "sleep " + std::to_string(exit_after) + "; echo '{\"ended\": \"x\"}'"
                     : "exec cat";
  return {"/bin/sh", "-c", "echo '{\"ready\": true, \"zygote\": \"" + dir + "\"}'; " + then};
}

// With a zygote (PoolOptions::zygotes) the members start once it is ready, are told its directory,
// start while a request runs cold (a fork is cheaper than that cold run) and, several at once, up
// to the count; a zygote that ends is replaced, by a new one whose directory the next members get.
TEST(WarmPool, AZygotesMembersStartOnceItIsReadyAndAreToldWhereItIs) {
  std::atomic<int> zygotes{0};
  std::mutex mutex;
  std::vector<std::string> told;
  WarmPool pool(
      PoolOptions{.sizes = {{"x", 3}}, .zygotes = {"x"}},
      [&](const std::string& skill, const std::string& zygote) {
        std::lock_guard lock(mutex);
        EXPECT_EQ(skill, "x");
        told.push_back(zygote);
        return fake_member();
      },
      [&](const std::string& skill, uint32_t slots) {
        EXPECT_EQ(skill, "x");
        EXPECT_EQ(slots, 8u);  // members twice over, and two
        const int n = ++zygotes;
        return fake_zygote("/z/" + std::to_string(n), n == 1 ? 3 : 0);
      });
  ASSERT_TRUE(eventually([&] { return pool.ready_count("x") == 3; }));
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(told, (std::vector<std::string>{"/z/1", "/z/1", "/z/1"}));
  }
  std::optional<StartedChild> taken;
  {
    WarmPool::ColdRun cold(pool);
    taken = pool.take("x");
    ASSERT_TRUE(taken);
    EXPECT_TRUE(eventually([&] { return pool.ready_count("x") == 3; }))
        << "no refill while a request ran cold";
  }
  taken->stdin_write.reset();
  EXPECT_EQ(waitpid(taken->pid, nullptr, 0), taken->pid);
  // The first zygote ends after 3 s; the pool starts another (5 s after a failure).
  ASSERT_TRUE(eventually([&] { return zygotes == 2; })) << "the zygote that ended was not replaced";
  for (int i = 0; i < 3; ++i) {
    std::optional<StartedChild> member;
    ASSERT_TRUE(eventually([&] { return (member = pool.take("x")).has_value(); }));
    member->stdin_write.reset();
    waitpid(member->pid, nullptr, 0);
  }
  ASSERT_TRUE(eventually([&] {
    std::lock_guard lock(mutex);
    return !told.empty() && told.back() == "/z/2";
  })) << "the new members were not told the new zygote: "
      << told.size();
}

// A zygote that never gets ready (no user namespace for it on this host, say), three times in a
// row: the skill's members start their own interpreters instead (5 s between the attempts).
TEST(WarmPool, AZygoteThatNeverStartsIsGivenUpForPlainMembers) {
  std::atomic<int> attempts{0};
  std::mutex mutex;
  std::vector<std::string> told;
  WarmPool pool(
      PoolOptions{.sizes = {{"x", 1}}, .zygotes = {"x"}},
      [&](const std::string&, const std::string& zygote) {
        std::lock_guard lock(mutex);
        told.push_back(zygote);
        return fake_member();
      },
      [&](const std::string&, uint32_t) {
        ++attempts;
        return std::vector<std::string>{"/bin/sh", "-c",
                                        "echo 'sandcell: no user namespace' >&2; exit 125"};
      });
  for (int i = 0; i < 40 && pool.ready_count("x") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(pool.ready_count("x"), 1u) << "no member after the zygote was given up";
  EXPECT_EQ(attempts, 3);
  std::lock_guard lock(mutex);
  EXPECT_EQ(told, (std::vector<std::string>{""}));
}

}  // namespace
}  // namespace sandcell::agent_service
