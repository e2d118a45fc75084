// Cgroup layer without root: mount table parsing, and the control files the v1 / v2 code writes
// and reads, against a fake cgroupfs made of plain files in a temp directory.
#include "sandcell/runtime/cgroup.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "sandcell-cgroup-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) throw Error(errno, "mkdtemp " + tmpl);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

// Designated initialisers would trip -Wmissing-field-initializers on GCC 12.
Limits limits(std::optional<uint64_t> memory, std::optional<uint64_t> pids,
              std::optional<double> cpus) {
  Limits l;
  l.memory_bytes = memory;
  l.pids = pids;
  l.cpus = cpus;
  return l;
}

std::string get(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The mount table of our hybrid CI host: every v1 controller on its own hierarchy, a unified
// mount with hugetlb only, plus a shared: optional field and a name= hierarchy.
std::string hybrid_mountinfo(const std::string& unified) {
  return "23 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n"
         "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
         "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
         "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
         "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
         "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
         "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
         "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
         "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
         "41 31 0:38 / " +
         unified + " rw,relatime - cgroup2 cgroup2 rw\n";
}

TEST(CgroupProbe, ProbeCgroups_HybridHost_ChoosesV1) {
  TempDir tmp;
  put(tmp.path() + "/unified/cgroup.controllers", "hugetlb\n");
  put(tmp.path() + "/mountinfo", hybrid_mountinfo(tmp.path() + "/unified"));

  const CgroupHost host = probe_cgroups(tmp.path() + "/mountinfo");

  EXPECT_EQ(host.mode, CgroupHost::Mode::V1);
  EXPECT_EQ(host.v2_root, tmp.path() + "/unified");
  EXPECT_EQ(host.v1_roots.at("memory"), "/sys/fs/cgroup/memory");
  EXPECT_EQ(host.v1_roots.at("pids"), "/sys/fs/cgroup/pids");
  EXPECT_EQ(host.v1_roots.at("cpu"), "/sys/fs/cgroup/cpu");
  EXPECT_EQ(host.v1_roots.at("cpuacct"), "/sys/fs/cgroup/cpuacct");
  EXPECT_EQ(host.v1_roots.at("freezer"), "/sys/fs/cgroup/freezer");
  EXPECT_FALSE(host.v1_roots.contains("name=systemd"));
  EXPECT_FALSE(host.v1_roots.contains("rw"));
}

TEST(CgroupProbe, ProbeCgroups_PureV2WithMemoryPidsCpu_ChoosesV2) {
  TempDir tmp;
  put(tmp.path() + "/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
  put(tmp.path() + "/mountinfo",
      "22 1 0:20 / /proc rw - proc proc rw\n"
      "25 22 0:23 / " +
          tmp.path() + " rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n");

  const CgroupHost host = probe_cgroups(tmp.path() + "/mountinfo");

  EXPECT_EQ(host.mode, CgroupHost::Mode::V2);
  EXPECT_EQ(host.v2_root, tmp.path());
  EXPECT_TRUE(host.v1_roots.empty());
}

TEST(CgroupProbe, ProbeCgroups_UnifiedLacksMemoryAndNoV1_ChoosesNone) {
  TempDir tmp;
  put(tmp.path() + "/cgroup.controllers", "cpu io pids\n");
  put(tmp.path() + "/mountinfo", "25 22 0:23 / " + tmp.path() + " rw - cgroup2 cgroup2 rw\n");

  EXPECT_EQ(probe_cgroups(tmp.path() + "/mountinfo").mode, CgroupHost::Mode::None);
}

TEST(CgroupProbe, ProbeCgroups_NoCgroupMounts_ChoosesNone) {
  TempDir tmp;
  put(tmp.path() + "/mountinfo",
      "22 1 0:20 / /proc rw - proc proc rw\n"
      "garbage line\n");

  const CgroupHost host = probe_cgroups(tmp.path() + "/mountinfo");

  EXPECT_EQ(host.mode, CgroupHost::Mode::None);
  EXPECT_TRUE(host.v2_root.empty());
  EXPECT_TRUE(host.v1_roots.empty());
}

TEST(CgroupProbe, ProbeCgroups_CoMountedCpuCpuacct_MapsBothToOneMountPoint) {
  TempDir tmp;
  put(tmp.path() + "/mountinfo",
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
      "39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n");

  const CgroupHost host = probe_cgroups(tmp.path() + "/mountinfo");

  EXPECT_EQ(host.mode, CgroupHost::Mode::V1);
  EXPECT_EQ(host.v1_roots.at("cpu"), "/sys/fs/cgroup/cpu,cpuacct");
  EXPECT_EQ(host.v1_roots.at("cpuacct"), "/sys/fs/cgroup/cpu,cpuacct");
}

TEST(CgroupProbe, ProbeCgroups_EscapedMountPoint_IsUnescaped) {
  TempDir tmp;
  put(tmp.path() + "/mountinfo",
      "35 31 0:32 / /cg\\040mem rw - cgroup cgroup rw,memory\n"
      "39 31 0:36 / /cg\\040pids rw - cgroup cgroup rw,pids\n");

  EXPECT_EQ(probe_cgroups(tmp.path() + "/mountinfo").v1_roots.at("memory"), "/cg mem");
}

TEST(CgroupProbe, ProbeCgroups_MissingMountinfo_ThrowsNamingThePath) {
  try {
    probe_cgroups("/nonexistent/mountinfo");
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/mountinfo"), std::string::npos);
  }
}

// A fake unified root whose run directory already holds the control files the code writes.
struct FakeV2Tree {
  TempDir tmp;
  std::string root = tmp.path();
  std::string run = root + "/sandcell/run1";

  explicit FakeV2Tree(const std::string& controllers = "cpu memory pids\n") {
    for (const auto& dir : {root, root + "/sandcell"}) {
      put(dir + "/cgroup.controllers", controllers);
      put(dir + "/cgroup.subtree_control", "");
    }
    put(run + "/cgroup.procs", "");
  }
};

TEST(CgroupV2Fake, Apply_WritesMemorySwapPidsAndCpuMax) {
  FakeV2Tree tree;
  for (const char* name : {"memory.max", "memory.swap.max", "pids.max", "cpu.max"}) {
    put(tree.run + "/" + name, "max\n");
  }
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  const auto enforced = cgroup->apply(limits(512ull << 20, 64, 1.5));

  EXPECT_EQ(get(tree.run + "/memory.max"), "536870912");
  EXPECT_EQ(get(tree.run + "/memory.swap.max"), "0");
  EXPECT_EQ(get(tree.run + "/pids.max"), "64");
  EXPECT_EQ(get(tree.run + "/cpu.max"), "150000 100000");
  EXPECT_EQ(enforced.at("memory_bytes"), Enforcement::CgroupV2);
  EXPECT_EQ(enforced.at("pids"), Enforcement::CgroupV2);
  EXPECT_EQ(enforced.at("cpus"), Enforcement::CgroupV2);
}

// Docker's --cpu-shares on v2: cpu.weight with runc's conversion, 1 + ((shares - 2) * 9999) /
// 262142.
TEST(CgroupV2Fake, Apply_CpuSharesBecomeCpuWeightAsRuncConvertsThem) {
  for (const auto& [shares, weight] : std::vector<std::pair<uint64_t, std::string>>{
           {2, "1"}, {512, "20"}, {1024, "39"}, {262144, "10000"}}) {
    FakeV2Tree tree;
    put(tree.run + "/cpu.weight", "100\n");
    auto cgroup = create_cgroup_v2(tree.root, "run1");
    Limits asked;
    asked.cpu_shares = shares;
    const auto enforced = cgroup->apply(asked);
    EXPECT_EQ(get(tree.run + "/cpu.weight"), weight) << shares;
    EXPECT_EQ(enforced.at("cpu_shares"), Enforcement::CgroupV2);
  }
}

TEST(CgroupV2Fake, Apply_WithoutCpuWeightFile_DoesNotClaimCpuShares) {
  FakeV2Tree tree;
  auto cgroup = create_cgroup_v2(tree.root, "run1");
  Limits asked;
  asked.cpu_shares = 512;
  EXPECT_EQ(cgroup->apply(asked).count("cpu_shares"), 0u);
}

TEST(CgroupV2Fake, Apply_WithoutSwapFile_StillEnforcesMemory) {
  FakeV2Tree tree;
  put(tree.run + "/memory.max", "max\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  const auto enforced = cgroup->apply(limits(1ull << 30, {}, {}));

  EXPECT_EQ(get(tree.run + "/memory.max"), "1073741824");
  EXPECT_FALSE(fs::exists(tree.run + "/memory.swap.max"));
  EXPECT_EQ(enforced.size(), 1u);
  EXPECT_EQ(enforced.at("memory_bytes"), Enforcement::CgroupV2);
}

TEST(CgroupV2Fake, Create_EnablesOnlyOfferedControllers) {
  FakeV2Tree tree("memory hugetlb\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_EQ(get(tree.root + "/cgroup.subtree_control"), "+memory");
  EXPECT_EQ(get(tree.root + "/sandcell/cgroup.subtree_control"), "+memory");
}

TEST(CgroupV2Fake, Create_ControllersAlreadyEnabled_AreNotWrittenAgain) {
  FakeV2Tree tree;
  put(tree.root + "/cgroup.subtree_control", "cpu memory pids\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_EQ(get(tree.root + "/cgroup.subtree_control"), "cpu memory pids\n");
}

TEST(CgroupV2Fake, HugetlbOnlyTree_EnablesNothingAndEnforcesNothing) {
  FakeV2Tree tree("hugetlb\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  const auto enforced = cgroup->apply(limits(64ull << 20, 16, 0.5));

  EXPECT_TRUE(enforced.empty());
  EXPECT_EQ(get(tree.root + "/cgroup.subtree_control"), "");
  EXPECT_EQ(get(tree.root + "/sandcell/cgroup.subtree_control"), "");
}

TEST(CgroupV2Fake, Usage_ReadsCpuStatPeakOomKillAndPidsMax) {
  FakeV2Tree tree;
  put(tree.run + "/cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
  put(tree.run + "/memory.peak", "1048576\n");
  put(tree.run + "/memory.current", "4096\n");
  // "oom 5" comes before "oom_kill 2": only the exact key counts.
  put(tree.run + "/memory.events", "low 0\nhigh 0\nmax 3\noom 5\noom_kill 2\noom_group_kill 0\n");
  put(tree.run + "/pids.events", "max 7\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  const CgroupUsage usage = cgroup->usage();

  EXPECT_EQ(usage.cpu_ns, 2500000u);
  EXPECT_EQ(usage.peak_memory_bytes, 1048576u);
  EXPECT_EQ(usage.oom_kills, 2u);
  EXPECT_EQ(usage.pids_limit_hits, 7u);
}

TEST(CgroupV2Fake, CpuNs_ReadsCpuStatAlone) {
  FakeV2Tree tree;
  put(tree.run + "/cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_EQ(cgroup->cpu_ns(), 2500000u);
}

// A pooled program's word that it is done (kProgramDoneSignal): cgroup.freeze, then
// cgroup.events until "frozen 1", bounded.
TEST(CgroupV2Fake, FreezeWithin_WritesCgroupFreezeAndWaitsForFrozen) {
  FakeV2Tree tree;
  put(tree.run + "/cgroup.freeze", "0\n");
  put(tree.run + "/cgroup.events", "populated 1\nfrozen 1\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_TRUE(cgroup->freeze_within(std::chrono::milliseconds(50)));
  EXPECT_EQ(get(tree.run + "/cgroup.freeze"), "1");
}

TEST(CgroupV2Fake, FreezeWithin_NotFrozenInTime_IsFalse) {
  FakeV2Tree tree;
  put(tree.run + "/cgroup.freeze", "0\n");
  put(tree.run + "/cgroup.events", "populated 1\nfrozen 0\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_FALSE(cgroup->freeze_within(std::chrono::milliseconds(20)));
  EXPECT_EQ(get(tree.run + "/cgroup.freeze"), "1");  // left freezing: kill_all() ends it
}

TEST(CgroupV2Fake, FreezeWithin_WithoutCgroupFreeze_IsFalseAndWritesNothing) {
  FakeV2Tree tree;
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_FALSE(cgroup->freeze_within(std::chrono::milliseconds(20)));
  EXPECT_FALSE(fs::exists(tree.run + "/cgroup.freeze"));
}

TEST(CgroupV2Fake, Usage_WithoutMemoryPeak_FallsBackToMemoryCurrent) {
  FakeV2Tree tree;
  put(tree.run + "/memory.current", "8192\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_EQ(cgroup->usage().peak_memory_bytes, 8192u);
}

TEST(CgroupV2Fake, Usage_MissingFiles_AreZero) {
  FakeV2Tree tree;
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  const CgroupUsage usage = cgroup->usage();

  EXPECT_EQ(usage.cpu_ns, 0u);
  EXPECT_EQ(usage.peak_memory_bytes, 0u);
  EXPECT_EQ(usage.oom_kills, 0u);
  EXPECT_EQ(usage.pids_limit_hits, 0u);
}

TEST(CgroupV2Fake, Create_ReportsRunDirectoryAndCloneFd) {
  FakeV2Tree tree;
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  EXPECT_EQ(cgroup->mode(), CgroupHost::Mode::V2);
  EXPECT_EQ(cgroup->paths(), std::vector<std::string>{tree.run});
  EXPECT_GE(cgroup->clone_into_fd(), 0);
}

TEST(CgroupV2Fake, Create_RunIdThatIsNotOneName_IsRejected) {
  FakeV2Tree tree;
  for (const char* bad : {"", ".", "..", "a/b", "../x"}) {
    EXPECT_THROW(create_cgroup_v2(tree.root, bad), Error) << bad;
  }
  EXPECT_FALSE(fs::exists(tree.root + "/x"));
}

TEST(CgroupV2Fake, Limits_TinyCpuRequest_RoundsUpToKernelMinimumQuota) {
  FakeV2Tree tree;
  put(tree.run + "/cpu.max", "max 100000\n");
  auto cgroup = create_cgroup_v2(tree.root, "run1");

  cgroup->apply(limits({}, {}, 0.001));

  EXPECT_EQ(get(tree.run + "/cpu.max"), "1000 100000");
}

// A fake v1 host: each controller on its own "mount", with cpu and cpuacct co-mounted.
struct FakeV1Tree {
  TempDir tmp;
  CgroupHost host{.mode = CgroupHost::Mode::V1,
                  .v2_root = {},
                  .v1_roots = {{"memory", tmp.path() + "/memory"},
                               {"pids", tmp.path() + "/pids"},
                               {"cpu", tmp.path() + "/cpu,cpuacct"},
                               {"cpuacct", tmp.path() + "/cpu,cpuacct"},
                               {"freezer", tmp.path() + "/freezer"}}};
  std::string memory = tmp.path() + "/memory/sandcell/run1";
  std::string pids = tmp.path() + "/pids/sandcell/run1";
  std::string cpu = tmp.path() + "/cpu,cpuacct/sandcell/run1";

  FakeV1Tree() {
    for (const auto& [controller, mount] : host.v1_roots) fs::create_directories(mount);
  }
};

TEST(CgroupV1Fake, Create_CoMountedCpuCpuacct_MakesOneDirectoryPerMount) {
  FakeV1Tree tree;
  {
    auto cgroup = create_cgroup(tree.host, "run1");

    EXPECT_EQ(cgroup->mode(), CgroupHost::Mode::V1);
    EXPECT_EQ(cgroup->paths().size(), 4u);
    EXPECT_TRUE(fs::is_directory(tree.cpu));
    EXPECT_EQ(cgroup->clone_into_fd(), -1);
  }
  // Destruction removes the run directories but leaves the shared sandcell parents.
  EXPECT_FALSE(fs::exists(tree.cpu));
  EXPECT_FALSE(fs::exists(tree.memory));
  EXPECT_TRUE(fs::is_directory(tree.tmp.path() + "/memory/sandcell"));
}

TEST(CgroupV1Fake, Apply_WritesMemoryMemswPidsAndCfsQuota) {
  FakeV1Tree tree;
  const std::string unlimited = "9223372036854771712\n";
  put(tree.memory + "/memory.limit_in_bytes", unlimited);
  put(tree.memory + "/memory.memsw.limit_in_bytes", unlimited);
  put(tree.memory + "/memory.swappiness", "60\n");
  put(tree.pids + "/pids.max", "max\n");
  put(tree.cpu + "/cpu.cfs_period_us", "100000\n");
  put(tree.cpu + "/cpu.cfs_quota_us", "-1\n");
  auto cgroup = create_cgroup(tree.host, "run1");

  const auto enforced = cgroup->apply(limits(64ull << 20, 16, 0.5));

  EXPECT_EQ(get(tree.memory + "/memory.limit_in_bytes"), "67108864");
  EXPECT_EQ(get(tree.memory + "/memory.memsw.limit_in_bytes"), "67108864");
  EXPECT_EQ(get(tree.memory + "/memory.swappiness"), "0");
  EXPECT_EQ(get(tree.pids + "/pids.max"), "16");
  EXPECT_EQ(get(tree.cpu + "/cpu.cfs_period_us"), "100000");
  EXPECT_EQ(get(tree.cpu + "/cpu.cfs_quota_us"), "50000");
  EXPECT_EQ(enforced.at("memory_bytes"), Enforcement::CgroupV1);
  EXPECT_EQ(enforced.at("pids"), Enforcement::CgroupV1);
  EXPECT_EQ(enforced.at("cpus"), Enforcement::CgroupV1);
}

TEST(CgroupV1Fake, Apply_CpuSharesAreWrittenToCpuShares) {
  FakeV1Tree tree;
  put(tree.cpu + "/cpu.shares", "1024\n");
  auto cgroup = create_cgroup(tree.host, "run1");
  Limits asked;
  asked.cpu_shares = 512;
  const auto enforced = cgroup->apply(asked);
  EXPECT_EQ(get(tree.cpu + "/cpu.shares"), "512");
  EXPECT_EQ(enforced.at("cpu_shares"), Enforcement::CgroupV1);
}

TEST(CgroupV1Fake, Apply_MissingControlFiles_EnforcesNothing) {
  FakeV1Tree tree;
  auto cgroup = create_cgroup(tree.host, "run1");

  EXPECT_TRUE(cgroup->apply(limits(64ull << 20, 16, 0.5)).empty());
}

TEST(CgroupV1Fake, Usage_ReadsCpuacctMaxUsageOomControlAndPidsEvents) {
  FakeV1Tree tree;
  put(tree.cpu + "/cpuacct.usage", "123456789\n");
  put(tree.memory + "/memory.max_usage_in_bytes", "67108864\n");
  put(tree.memory + "/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
  put(tree.pids + "/pids.events", "max 5\n");
  auto cgroup = create_cgroup(tree.host, "run1");

  const CgroupUsage usage = cgroup->usage();

  EXPECT_EQ(usage.cpu_ns, 123456789u);
  EXPECT_EQ(usage.peak_memory_bytes, 67108864u);
  EXPECT_EQ(usage.oom_kills, 3u);
  EXPECT_EQ(usage.pids_limit_hits, 5u);
}

// A sandbox (pid namespace: no freezer; no --cpu-time: no live CPU counter) makes only what it
// uses; cpuacct co-mounted with cpu comes free and is still read.
TEST(CgroupV1Fake, Create_WithoutFreezerAndCpuUsage_SkipsThoseHierarchies) {
  FakeV1Tree tree;
  tree.host.v1_roots["cpu"] = tree.tmp.path() + "/cpu";
  tree.host.v1_roots["cpuacct"] = tree.tmp.path() + "/cpuacct";
  for (const auto& [controller, mount] : tree.host.v1_roots) fs::create_directories(mount);
  auto cgroup = create_cgroup(tree.host, "run1", {.freezer = false, .cpu_usage = false});

  const std::vector<std::string> expected = {tree.memory, tree.pids,
                                             tree.tmp.path() + "/cpu/sandcell/run1"};
  EXPECT_EQ(cgroup->paths(), expected);
  EXPECT_FALSE(fs::exists(tree.tmp.path() + "/freezer/sandcell/run1"));
  EXPECT_FALSE(fs::exists(tree.tmp.path() + "/cpuacct/sandcell/run1"));
  for (const std::string& dir : expected) put(dir + "/tasks", "");
  EXPECT_EQ(cgroup->open_self_attach_files().size(), 3u);
  EXPECT_EQ(cgroup->usage().cpu_ns, 0u);  // the caller falls back to rusage
}

TEST(CgroupV1Fake, Create_WithoutCpuUsage_StillReadsACoMountedCpuacct) {
  FakeV1Tree tree;
  auto cgroup = create_cgroup(tree.host, "run1", {.freezer = false, .cpu_usage = false});
  put(tree.cpu + "/cpuacct.usage", "2000000\n");

  EXPECT_EQ(cgroup->paths().size(), 3u);
  EXPECT_EQ(cgroup->usage().cpu_ns, 2000000u);
}

// A sandbox's init leaves by its parents' `tasks` files: one per run directory, in the same
// order as open_self_attach_files(), so the child pairs them by position.
TEST(CgroupV1Fake, ParentAttachFiles_AreTheSandcellParentsInTheOrderOfTheRunDirectories) {
  FakeV1Tree tree;
  auto cgroup = create_cgroup(tree.host, "run1", {.freezer = false});
  for (const std::string& dir : cgroup->paths()) {
    put(dir + "/tasks", "");
    put(fs::path(dir).parent_path().string() + "/tasks", "");
  }

  std::vector<UniqueFd> parents = cgroup->open_parent_attach_files();

  ASSERT_EQ(parents.size(), cgroup->open_self_attach_files().size());
  for (size_t i = 0; i < parents.size(); ++i) {
    const std::string parent = fs::path(cgroup->paths()[i]).parent_path().string();
    ASSERT_EQ(write(parents[i].get(), "7", 1), 1);
    EXPECT_EQ(get(parent + "/tasks"), "7") << parent;
  }
}

// Early removal never kills or waits: a busy cgroup (here a directory with a file the fake
// rmdir cannot remove) stays, and the full remove() still works afterwards.
TEST(CgroupV1Fake, RemoveIfEmpty_LeavesABusyCgroupAndRemovesAnEmptyOne) {
  FakeV1Tree tree;
  auto cgroup = create_cgroup(tree.host, "run1", {.freezer = false});
  put(tree.pids + "/busy", "");

  EXPECT_FALSE(cgroup->remove_if_empty());
  EXPECT_TRUE(fs::is_directory(tree.pids));

  fs::remove(tree.pids + "/busy");
  EXPECT_TRUE(cgroup->remove_if_empty());
  for (const std::string& dir : {tree.memory, tree.pids, tree.cpu}) EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(cgroup->remove_if_empty());  // idempotent
  EXPECT_NO_THROW(cgroup->remove());
}

TEST(CgroupNoneTest, None_AppliesNothingAndReportsZeros) {
  auto cgroup = create_cgroup(CgroupHost{}, "run1");

  EXPECT_EQ(cgroup->mode(), CgroupHost::Mode::None);
  EXPECT_TRUE(cgroup->apply(limits(1 << 20, 4, {})).empty());
  EXPECT_TRUE(cgroup->paths().empty());
  EXPECT_EQ(cgroup->clone_into_fd(), -1);
  EXPECT_EQ(cgroup->usage().cpu_ns, 0u);
  EXPECT_NO_THROW(cgroup->kill_all());
  EXPECT_NO_THROW(cgroup->remove());
}

TEST(RemoveCgroupDir, PathsOutsideASandcellParent_AreRefused) {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/sandcell/run1");
  fs::create_directories(tmp.path() + "/other/run1");

  EXPECT_FALSE(remove_cgroup_dir(tmp.path() + "/other/run1"));
  EXPECT_FALSE(remove_cgroup_dir(tmp.path() + "/sandcell"));
  EXPECT_FALSE(remove_cgroup_dir(tmp.path() + "/sandcell/"));
  EXPECT_FALSE(remove_cgroup_dir(tmp.path() + "/sandcell/../other/run1"));
  EXPECT_FALSE(remove_cgroup_dir(tmp.path() + "/sandcellx/run1"));
  EXPECT_TRUE(fs::exists(tmp.path() + "/other/run1"));
  EXPECT_TRUE(fs::exists(tmp.path() + "/sandcell"));
}

TEST(RemoveCgroupDir, RunDirectoryWithNestedCgroup_IsRemovedDeepestFirst) {
  TempDir tmp;
  fs::create_directories(tmp.path() + "/sandcell/run1/inner/deeper");

  EXPECT_TRUE(remove_cgroup_dir(tmp.path() + "/sandcell/run1"));
  EXPECT_FALSE(fs::exists(tmp.path() + "/sandcell/run1"));
  EXPECT_TRUE(fs::exists(tmp.path() + "/sandcell"));
}

TEST(RemoveCgroupDir, AlreadyGone_IsSuccess) {
  TempDir tmp;
  EXPECT_TRUE(remove_cgroup_dir(tmp.path() + "/sandcell/gone"));
}

}  // namespace
}  // namespace sandcell::runtime
