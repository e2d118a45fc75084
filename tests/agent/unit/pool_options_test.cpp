// `--pool SKILL=N[,...]` (docs/architecture.md, "The warm pool").
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sandcell::agent_service
