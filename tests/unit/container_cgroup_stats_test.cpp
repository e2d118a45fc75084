// `docker stats`' figures read from a container's cgroup files: v1 (one directory per
// hierarchy) and v2 (one directory), against fake cgroupfs trees made of plain files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "sandcell/runtime/container.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

class FakeCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "sandcell-cgstats-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string dir(const std::string& name) {
    fs::create_directories(root_ / name);
    return (root_ / name).string();
  }
  // Control files (name, content) into a fake cgroup directory.
  static void put(const std::string& dir, const std::map<std::string, std::string>& files) {
    for (const auto& [file, text] : files) std::ofstream(dir + "/" + file) << text;
  }
  fs::path root_;
};

TEST_F(FakeCgroups, V1ReadsMemoryCpuacctAndPidsFromTheirOwnHierarchies) {
  std::string memory = dir("memory/sandcell/run"), cpu = dir("cpu,cpuacct/sandcell/run"),
              pids = dir("pids/sandcell/run");
  put(memory, {{"memory.usage_in_bytes", "8388608\n"},
           {"memory.limit_in_bytes", "33554432\n"},
           {"memory.stat", "cache 4096\nrss 8192\ntotal_inactive_file 1024\n"}});
  put(cpu, {{"cpuacct.usage", "123456789\n"},
           {"cpuacct.usage_percpu", "100000000 23456789 \n"},
           {"cpuacct.stat", "user 7\nsystem 3\n"}});
  put(pids, {{"pids.current", "4\n"},
           {"pids.max", "20\n"}});
  ContainerCgroupStats s = container_cgroup_stats({memory, cpu, pids});
  EXPECT_EQ(s.memory_usage, 8388608u);
  EXPECT_EQ(s.memory_limit, 33554432u);
  EXPECT_EQ(s.memory_stat.at("total_inactive_file"), 1024u);
  EXPECT_EQ(s.cpu_total_ns, 123456789u);
  EXPECT_EQ(s.cpu_percpu_ns, (std::vector<uint64_t>{100000000, 23456789}));
  const uint64_t tick = 1000000000ull / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  EXPECT_EQ(s.cpu_user_ns, 7 * tick);
  EXPECT_EQ(s.cpu_system_ns, 3 * tick);
  EXPECT_EQ(s.pids_current, 4u);
  EXPECT_EQ(s.pids_limit, 20u);
}

TEST_F(FakeCgroups, V1UnlimitedValuesAreNoLimit) {
  std::string memory = dir("memory/x"), pids = dir("pids/x");
  put(memory, {{"memory.usage_in_bytes", "100\n"},
           {"memory.limit_in_bytes", "9223372036854771712\n"}});
  put(pids, {{"pids.current", "1\n"},
           {"pids.max", "max\n"}});
  ContainerCgroupStats s = container_cgroup_stats({memory, pids});
  EXPECT_EQ(s.memory_usage, 100u);
  EXPECT_FALSE(s.memory_limit);
  EXPECT_FALSE(s.pids_limit);
  EXPECT_FALSE(s.cpu_total_ns);  // no cpuacct directory among the paths
}

TEST_F(FakeCgroups, V2ReadsEverythingFromOneDirectory) {
  std::string run = dir("sandcell/run");
  put(run, {{"memory.current", "5242880\n"},
           {"memory.max", "max\n"},
           {"memory.stat", "anon 4096\ninactive_file 2048\n"},
           {"cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 0\n"},
           {"pids.current", "3\n"},
           {"pids.max", "128\n"},
           {"cgroup.freeze", "0\n"}});
  ContainerCgroupStats s = container_cgroup_stats({run});
  EXPECT_EQ(s.memory_usage, 5242880u);
  EXPECT_FALSE(s.memory_limit);
  EXPECT_EQ(s.memory_stat.at("inactive_file"), 2048u);
  EXPECT_EQ(s.cpu_total_ns, 2500000u);
  EXPECT_EQ(s.cpu_user_ns, 2000000u);
  EXPECT_EQ(s.cpu_system_ns, 500000u);
  EXPECT_TRUE(s.cpu_percpu_ns.empty());
  EXPECT_EQ(s.pids_current, 3u);
  EXPECT_EQ(s.pids_limit, 128u);
}

TEST_F(FakeCgroups, MissingOrGarbledFilesGiveNoFigureRatherThanAnError) {
  std::string run = dir("sandcell/gone");
  put(run, {{"memory.current", "not a number\n"},
           {"cpu.stat", "garbage\n"}});
  ContainerCgroupStats s = container_cgroup_stats({run, (root_ / "does-not-exist").string()});
  EXPECT_FALSE(s.memory_usage);
  EXPECT_FALSE(s.cpu_total_ns);
  EXPECT_FALSE(s.pids_current);
}

}  // namespace
}  // namespace sandcell::runtime
