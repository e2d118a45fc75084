// ThreadElsewhere (sandcell/base/thread_elsewhere.hpp): the work's value or exception comes back,
// the thread starts on a CPU other than its creator's, and then has the creator's whole mask.
#include "sandcell/base/thread_elsewhere.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>

namespace sandcell {
namespace {

TEST(ThreadElsewhere, ReturnsTheWorksValueAndRethrowsWhatItThrew) {
  ThreadElsewhere<std::string> value([] { return std::string("made"); });
  EXPECT_EQ(value.get(), "made");
  ThreadElsewhere<int> failing([]() -> int { throw std::runtime_error("no disk"); });
  EXPECT_THROW(
      {
        try {
          failing.get();
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "no disk");
          throw;
        }
      },
      std::runtime_error);
}

TEST(ThreadElsewhere, ItsDestructorWaitsForTheWorkAndDestroysAnUnclaimedValue) {
  auto destroyed = std::make_shared<std::atomic<bool>>(false);
  struct Marker {
    std::shared_ptr<std::atomic<bool>> flag;
    ~Marker() { *flag = true; }
  };
  {
    ThreadElsewhere<std::unique_ptr<Marker>> never_claimed(
        [destroyed] { return std::unique_ptr<Marker>(new Marker{destroyed}); });
  }
  EXPECT_TRUE(*destroyed);
}

TEST(ThreadElsewhere, StartsOnAnotherCpuAndThenHasTheCreatorsMask) {
  cpu_set_t creator{};
  ASSERT_EQ(sched_getaffinity(0, sizeof creator, &creator), 0);
  cpu_set_t seen{};
  ThreadElsewhere<int> thread([&seen] { return sched_getaffinity(0, sizeof seen, &seen); });
  ASSERT_EQ(thread.get(), 0);
  EXPECT_TRUE(CPU_EQUAL(&seen, &creator)) << "the thread kept a narrower mask";
  ASSERT_GE(thread.creator_cpu(), 0);
  ASSERT_GE(thread.started_on(), 0);
  if (CPU_COUNT(&creator) < 2)
    GTEST_SKIP() << "this process may run on one CPU only: there is no other CPU to start on";
  EXPECT_NE(thread.started_on(), thread.creator_cpu());
}

}  // namespace
}  // namespace sandcell
