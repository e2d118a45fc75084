// linux.cgroupsPath and linux.resources for sandcell-oci without root: the path as runc's
// cgroupfs driver reads it, the control file writes for v1 and v2 (runc's conversions), the
// refusals naming their field, and make/remove against a fake cgroupfs directory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cgroup_resources.hpp"
#include "cgroup_stats.hpp"
#include "cgroups_path.hpp"
#include "device_program.hpp"
#include "sandcell/base/error.hpp"
#include "temp_tree.hpp"
#include "thrown_error.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
using test::thrown_error;
using test::read_text;
namespace fs = std::filesystem;

void put(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

runtime::CgroupHost hybrid_host() {
  runtime::CgroupHost host;
  host.mode = runtime::CgroupHost::Mode::V1;
  host.v1_roots = {{"memory", "/cg/memory"},
                   {"pids", "/cg/pids"},
                   {"cpu", "/cg/cpu,cpuacct"},
                   {"cpuacct", "/cg/cpu,cpuacct"},
                   {"freezer", "/cg/freezer"}};
  host.v2_root = "/cg/unified";
  return host;
}

std::vector<std::string> dirs_of(const std::vector<CgroupDir>& dirs) {
  std::vector<std::string> out;
  for (const CgroupDir& d : dirs) out.push_back(d.dir);
  return out;
}

// The file → value pairs of a plan (first choice of each write).
std::map<std::string, std::string> files_of(const ResourcePlan& plan) {
  std::map<std::string, std::string> out;
  for (const ControlWrite& w : plan.writes) out[w.choices[0].first] = w.choices[0].second;
  return out;
}

const ControllerVersions kV1 = {{"memory", CgroupVersion::V1},  {"cpu", CgroupVersion::V1},
                                {"cpuset", CgroupVersion::V1},  {"pids", CgroupVersion::V1},
                                {"blkio", CgroupVersion::V1},   {"devices", CgroupVersion::V1},
                                {"hugetlb", CgroupVersion::V1}, {"net_cls", CgroupVersion::V1}};
const ControllerVersions kV2 = {{"memory", CgroupVersion::V2}, {"cpu", CgroupVersion::V2},
                                {"cpuset", CgroupVersion::V2}, {"pids", CgroupVersion::V2},
                                {"io", CgroupVersion::V2},     {"hugetlb", CgroupVersion::V2},
                                {"rdma", CgroupVersion::V2}};

TEST(OciCgroupsPath, AbsoluteIsBelowEachMount_RelativeAndEmptyBelowTheSandcellParent_FreezerFirst) {
  runtime::CgroupHost host = hybrid_host();
  EXPECT_EQ(
      dirs_of(resolve_cgroups_path(host, "/kubepods/burstable/pod1/c1", "x")),
      (std::vector<std::string>{
          "/cg/freezer/kubepods/burstable/pod1/c1", "/cg/cpu,cpuacct/kubepods/burstable/pod1/c1",
          "/cg/memory/kubepods/burstable/pod1/c1", "/cg/pids/kubepods/burstable/pod1/c1",
          "/cg/unified/kubepods/burstable/pod1/c1"}));
  EXPECT_EQ(resolve_cgroups_path(host, "pods//p/./c", "x")[2].dir, "/cg/memory/sandcell/pods/p/c");
  EXPECT_EQ(resolve_cgroups_path(host, "", "abc")[0].dir, "/cg/freezer/sandcell/oci-abc");
  EXPECT_EQ(resolve_cgroups_path(host, "", "abc")[0].mount, "/cg/freezer");
  runtime::CgroupHost v2;
  v2.v2_root = "/sys/fs/cgroup";
  EXPECT_EQ(dirs_of(resolve_cgroups_path(v2, "/a/b", "x")),
            std::vector<std::string>{"/sys/fs/cgroup/a/b"});
}

TEST(OciCgroupsPath, DotDotOrNothing_IsRefusedNamingTheField) {
  runtime::CgroupHost host = hybrid_host();
  EXPECT_EQ(thrown_error([&] { resolve_cgroups_path(host, "/a/../../etc", "x"); }),
            "linux.cgroupsPath: '..' is not allowed: '/a/../../etc'");
  EXPECT_EQ(thrown_error([&] { resolve_cgroups_path(host, "//", "x"); }),
            "linux.cgroupsPath: names no cgroup: '//'");
}

// The kubelet made kubepods; create makes pod1 and c1 below it, enabling the controllers the
// resources need in each unified parent; delete removes c1 and pod1, not kubepods.
TEST(OciCgroupsPath, MakeRecordsWhatItCreated_EnablesV2Controllers_RemoveTakesExactlyThose) {
  test::TempTree tree("sc-oci-cg");
  std::string root = tree.path.string();
  for (const std::string& dir : {root, root + "/kubepods"}) {
    put(dir + "/cgroup.controllers", "memory pids hugetlb");
    put(dir + "/cgroup.subtree_control", "");
  }
  runtime::CgroupHost host;
  host.v2_root = root;
  MadeCgroups made =
      make_cgroups(resolve_cgroups_path(host, "/kubepods/pod1/c1", "x"), {"hugetlb", "cpu"});
  EXPECT_EQ(made.dirs, std::vector<std::string>{root + "/kubepods/pod1/c1"});
  EXPECT_EQ(made.created,
            (std::vector<std::string>{root + "/kubepods/pod1/c1", root + "/kubepods/pod1"}));
  EXPECT_EQ(read_text(root + "/kubepods/cgroup.subtree_control"), "+hugetlb")
      << "cpu is not available: not asked for";
  MadeCgroups again = make_cgroups(resolve_cgroups_path(host, "/kubepods/pod1/c2", "y"), {});
  EXPECT_EQ(again.created, std::vector<std::string>{root + "/kubepods/pod1/c2"})
      << "pod1 exists now";

  remove_made_cgroups(made.dirs, made.created);
  EXPECT_FALSE(fs::exists(root + "/kubepods/pod1/c1"));
  EXPECT_TRUE(fs::exists(root + "/kubepods/pod1")) << "c2 still uses it";
  remove_made_cgroups(again.dirs, again.created);
  remove_made_cgroups(made.dirs, made.created);
  EXPECT_FALSE(fs::exists(root + "/kubepods/pod1"));
  EXPECT_TRUE(fs::exists(root + "/kubepods")) << "create did not make it";
}

TEST(OciResources, V1_MemoryCpuPidsBlockIoHugepagesNetwork_BecomeV1Files) {
  json r = {{"memory",
             {{"limit", 64 << 20},
              {"swap", 128 << 20},
              {"reservation", 32 << 20},
              {"swappiness", 10},
              {"disableOOMKiller", true},
              {"kernelTCP", 1 << 20}}},
            {"cpu",
             {{"shares", 512},
              {"quota", 50000},
              {"period", 100000},
              {"burst", 1000},
              {"cpus", "0"},
              {"mems", "0"}}},
            {"pids", {{"limit", 0}}},
            {"blockIO",
             {{"weight", 300},
              {"throttleReadBpsDevice", {{{"major", 8}, {"minor", 0}, {"rate", 1048576}}}}}},
            {"hugepageLimits", {{{"pageSize", "2MB"}, {"limit", 4194304}}}},
            {"network", {{"classID", 1048577}}}};
  auto files = files_of(plan_resources(r, kV1));
  EXPECT_EQ(files["memory.limit_in_bytes"], "67108864");
  EXPECT_EQ(files["memory.memsw.limit_in_bytes"], "134217728");
  EXPECT_EQ(files["memory.soft_limit_in_bytes"], "33554432");
  EXPECT_EQ(files["memory.swappiness"], "10");
  EXPECT_EQ(files["memory.oom_control"], "1");
  EXPECT_EQ(files["memory.kmem.tcp.limit_in_bytes"], "1048576");
  EXPECT_EQ(files["cpu.shares"], "512");
  EXPECT_EQ(files["cpu.cfs_quota_us"], "50000");
  EXPECT_EQ(files["cpu.cfs_period_us"], "100000");
  EXPECT_EQ(files["cpu.cfs_burst_us"], "1000");
  EXPECT_EQ(files["cpuset.cpus"], "0");
  EXPECT_EQ(files["pids.max"], "max");
  EXPECT_EQ(files["blkio.weight"], "300");
  EXPECT_EQ(files["blkio.throttle.read_bps_device"], "8:0 1048576");
  EXPECT_EQ(files["hugetlb.2MB.limit_in_bytes"], "4194304");
  EXPECT_EQ(files["net_cls.classid"], "1048577");
}

TEST(OciResources, V2_UsesRuncsConversionsForWeightSwapAndCpuMax) {
  EXPECT_EQ(cpu_shares_to_weight(1024), 39u);  // runc: 1 + ((1024-2)*9999)/262142
  EXPECT_EQ(cpu_shares_to_weight(2), 1u);
  EXPECT_EQ(cpu_shares_to_weight(262144), 10000u);
  EXPECT_EQ(blkio_weight_to_io_weight(500), 4950u);
  json r = {
      {"memory", {{"limit", 64 << 20}, {"swap", 96 << 20}, {"reservation", 16 << 20}}},
      {"cpu", {{"shares", 1024}, {"quota", 25000}, {"period", 50000}, {"burst", 500}, {"idle", 1}}},
      {"pids", {{"limit", 9}}},
      {"blockIO", {{"throttleWriteIOPSDevice", {{{"major", 8}, {"minor", 16}, {"rate", 100}}}}}},
      {"hugepageLimits", {{{"pageSize", "1GB"}, {"limit", 0}}}},
      {"rdma", {{"mlx5_1", {{"hcaHandles", 3}, {"hcaObjects", 10000}}}}},
      {"unified", {{"memory.high", "50000000"}, {"cgroup.max.depth", "3"}}}};
  ResourcePlan plan = plan_resources(r, kV2);
  auto files = files_of(plan);
  EXPECT_EQ(files["memory.max"], "67108864");
  EXPECT_EQ(files["memory.swap.max"], std::to_string(32 << 20))
      << "v1's memory+swap minus the limit";
  EXPECT_EQ(files["memory.low"], "16777216");
  EXPECT_EQ(files["cpu.weight"], "39");
  EXPECT_EQ(files["cpu.max"], "25000 50000");
  EXPECT_EQ(files["cpu.max.burst"], "500");
  EXPECT_EQ(files["cpu.idle"], "1");
  EXPECT_EQ(files["pids.max"], "9");
  EXPECT_EQ(files["io.max"], "8:16 wiops=100");
  EXPECT_EQ(files["hugetlb.1GB.max"], "0");
  EXPECT_EQ(files["rdma.max"], "mlx5_1 hca_handle=3 hca_object=10000");
  EXPECT_EQ(files["memory.high"], "50000000");
  EXPECT_EQ(files["cgroup.max.depth"], "3");
  EXPECT_EQ(plan.v2_controllers,
            (std::vector<std::string>{"memory", "cpu", "pids", "io", "hugetlb", "rdma"}));
  json weight = {{"blockIO", {{"weight", 500}}}};
  const auto weight_plan = plan_resources(weight, kV2);  // kept: w refers into it
  const ControlWrite& w = weight_plan.writes.at(0);
  EXPECT_EQ(w.choices, (std::vector<std::pair<std::string, std::string>>{{"io.bfq.weight", "500"},
                                                                         {"io.weight", "4950"}}));
}

TEST(OciResources, WhatAVersionCannotDo_IsRefusedNamingTheField) {
  auto refused = [](const json& r, const ControllerVersions& v) {
    return thrown_error([&] { plan_resources(r, v); });
  };
  EXPECT_EQ(
      refused({{"cpu", {{"realtimeRuntime", 950000}}}}, kV1),
      "linux.resources.cpu.realtimeRuntime: realtime scheduling is not supported by sandcell-oci");
  EXPECT_EQ(refused({{"memory", {{"swappiness", 60}}}}, kV2),
            "linux.resources.memory.swappiness: cgroup v2 has no per-cgroup swappiness");
  EXPECT_EQ(refused({{"memory", {{"disableOOMKiller", true}}}}, kV2),
            "linux.resources.memory.disableOOMKiller: cgroup v2 cannot disable the OOM killer");
  EXPECT_EQ(refused({{"memory", {{"limit", 100}, {"swap", 50}}}}, kV2),
            "linux.resources.memory.swap: memory+swap must be >= memory.limit");
  EXPECT_EQ(refused({{"unified", {{"memory.high", "1"}}}}, kV1),
            "linux.resources.unified.memory.high: the memory controller is in a cgroup v1 "
            "hierarchy here");
  EXPECT_EQ(refused({{"unified", {{"../../x", "1"}}}}, kV2),
            "linux.resources.unified.../../x: not a cgroup v2 control file name");
  EXPECT_EQ(
      refused({{"rdma", {{"mlx5_0", {{"hcaHandles", 1}}}}}}, kV1),
      "linux.resources.rdma.mlx5_0: the rdma cgroup controller is not available on this host");
  EXPECT_EQ(
      refused({{"hugepageLimits", {{{"pageSize", "2MB"}, {"limit", 1}}}}}, ControllerVersions{}),
      "linux.resources.hugepageLimits[0]: the hugetlb cgroup controller is not available on this "
      "host");
  EXPECT_EQ(refused({{"blockIO", {{"leafWeight", 10}}}}, kV2),
            "linux.resources.blockIO.leafWeight: cgroup v2 has no leaf weight");
  EXPECT_EQ(refused({{"memory", {{"limit", "1g"}}}}, kV1),
            "linux.resources.memory.limit: expected an integer, got \"1g\"");
}

TEST(OciResources, Devices_V1WritesRulesThenRuncsDefaults_V2GetsAProgram) {
  json r = {{"devices",
             {{{"allow", false}, {"access", "rwm"}},
              {{"allow", true}, {"type", "c"}, {"major", 10}, {"minor", 229}, {"access", "rw"}}}}};
  ResourcePlan v1 = plan_resources(
      r, kV1, {runtime::Device{.path = "/dev/sda", .type = 'b', .major = 8, .minor = 0}});
  ASSERT_GE(v1.writes.size(), 3u);
  EXPECT_EQ(v1.writes[0].choices[0],
            (std::pair<std::string, std::string>{"devices.deny", "a *:* rwm"}));
  EXPECT_EQ(v1.writes[1].choices[0],
            (std::pair<std::string, std::string>{"devices.allow", "c 10:229 rw"}));
  EXPECT_EQ(v1.writes[2].choices[0],
            (std::pair<std::string, std::string>{"devices.allow", "c *:* m"}));
  EXPECT_EQ(v1.writes.back().choices[0],
            (std::pair<std::string, std::string>{"devices.allow", "b 8:0 rwm"}))
      << "linux.devices";
  ResourcePlan v2 = plan_resources(r, kV2);
  EXPECT_TRUE(v2.writes.empty());
  ASSERT_TRUE(v2.v2_device_rules);
  EXPECT_FALSE(device_program(*v2.v2_device_rules).empty());
}

// Writes land in the directory of their version that has the file; a file no directory has
// names the field; an EINVAL is retried after the others (memsw before memory when raising).
TEST(OciResources, Apply_WritesIntoTheFakeCgroupAndNamesAMissingFile) {
  test::TempTree tree("sc-oci-res");
  std::string v2 = tree.path.string() + "/unified/c", v1 = tree.path.string() + "/memory/c";
  put(v2 + "/cgroup.controllers", "hugetlb");
  put(v2 + "/hugetlb.2MB.max", "max");
  put(v1 + "/memory.limit_in_bytes", "");
  ControllerVersions hybrid = {{"memory", CgroupVersion::V1}, {"hugetlb", CgroupVersion::V2}};
  json r = {{"memory", {{"limit", 1 << 20}}},
            {"hugepageLimits", {{{"pageSize", "2MB"}, {"limit", 2097152}}}}};
  apply_resources(plan_resources(r, hybrid), {v1, v2});
  EXPECT_EQ(read_text(v1 + "/memory.limit_in_bytes"), "1048576");
  EXPECT_EQ(read_text(v2 + "/hugetlb.2MB.max"), "2097152");
  json swap = {{"memory", {{"swap", 1 << 21}}}};
  EXPECT_EQ(thrown_error([&] {
              apply_resources(plan_resources(swap, hybrid), {v1, v2});
            }),
            "linux.resources.memory.swap: memory.memsw.limit_in_bytes is in none of the "
            "container's cgroups "
            "(controller missing or not enabled): No such file or directory");
}

// runc's stats shape from v2 files (the v1 files are read on the host in the integration test):
// microseconds become nanoseconds, "max" the largest uint64, swap is reported as memory+swap.
TEST(OciStats, V2Files_BecomeRuncsStatsJson_OomKillsAreCounted) {
  test::TempTree tree("sc-oci-stats");
  std::string dir = tree.path.string() + "/c";
  put(dir + "/cgroup.controllers", "cpu memory pids io hugetlb");
  put(dir + "/cpu.stat",
      "usage_usec 1500\nuser_usec 1000\nsystem_usec 500\nnr_periods 4\nnr_throttled "
      "1\nthrottled_usec 20\n");
  put(dir + "/memory.current", "4096\n");
  put(dir + "/memory.max", "max\n");
  put(dir + "/memory.swap.current", "100\n");
  put(dir + "/memory.swap.max", "max\n");
  put(dir + "/memory.stat", "anon 1024\nfile 2048\n");
  put(dir + "/memory.events", "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n");
  put(dir + "/pids.current", "5\n");
  put(dir + "/pids.max", "max\n");
  put(dir + "/io.stat", "8:0 rbytes=4096 wbytes=512 rios=2 wios=1 dbytes=0 dios=0\n");
  put(dir + "/hugetlb.2MB.current", "0\n");
  put(dir + "/hugetlb.2MB.events", "max 0\n");
  put(dir + "/cpuset.cpus.effective", "0-2,5\n");
  json stats = cgroup_stats({dir});
  EXPECT_EQ(stats["cpu"]["usage"],
            (json{{"total", 1500000}, {"user", 1000000}, {"kernel", 500000}}));
  EXPECT_EQ(stats["cpu"]["throttling"],
            (json{{"periods", 4}, {"throttled_periods", 1}, {"throttled_time", 20000}}));
  EXPECT_EQ(stats["memory"]["cache"], 2048);
  EXPECT_EQ(stats["memory"]["usage"],
            (json{{"usage", 4096}, {"limit", UINT64_MAX}, {"failcnt", 3}}));
  EXPECT_EQ(stats["memory"]["swap"]["usage"], 4196);
  EXPECT_EQ(stats["memory"]["raw"]["anon"], 1024);
  EXPECT_EQ(stats["pids"], (json{{"current", 5}})) << "no limit: runc leaves it out";
  EXPECT_EQ(stats["blkio"]["ioServiceBytesRecursive"][0],
            (json{{"major", 8}, {"op", "Read"}, {"value", 4096}}));
  EXPECT_EQ(stats["blkio"]["ioServicedRecursive"][1],
            (json{{"major", 8}, {"op", "Write"}, {"value", 1}}));
  EXPECT_EQ(stats["hugetlb"]["2MB"], (json{{"failcnt", 0}}));
  EXPECT_EQ(stats["cpuset"]["cpus"], (json{0, 1, 2, 5}));
  EXPECT_EQ(oom_kills({dir}), 2u);
}

}  // namespace
}  // namespace sandcell::oci
