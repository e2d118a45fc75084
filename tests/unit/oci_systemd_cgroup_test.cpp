// The pure half of sandcell-oci's systemd cgroup driver, against runc's documented behaviour:
// cgroupsPath "slice:prefix:name" (libcontainer/specconv), unit names and slice nesting
// (cgroups/systemd/common.go: getUnitName, ExpandSlice), the unit's properties (v2.go: Apply)
// and the resources as properties (v2.go: genV2ResourcesProperties, addCpuQuota, RangeToBits
// with the cases of cpuset_test.go). The sd-bus half runs in the VM (tests/vm, variant B).
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>

#include "cgroup_resources.hpp"
#include "sandcell/base/error.hpp"
#include "systemd_cgroup.hpp"
#include "thrown_error.hpp"

namespace sandcell::oci::systemd {
namespace {

using nlohmann::json;
using test::thrown_error;
constexpr uint64_t kInfinity = std::numeric_limits<uint64_t>::max();

const ControllerVersions kV2 = {{"memory", CgroupVersion::V2}, {"cpu", CgroupVersion::V2},
                                {"cpuset", CgroupVersion::V2}, {"pids", CgroupVersion::V2},
                                {"io", CgroupVersion::V2},     {"hugetlb", CgroupVersion::V2},
                                {"rdma", CgroupVersion::V2}};

std::map<std::string, Property> by_name(const std::vector<Property>& properties) {
  std::map<std::string, Property> out;
  for (const Property& p : properties) {
    EXPECT_FALSE(out.contains(p.name)) << p.name << " twice";
    out[p.name] = p;
  }
  return out;
}

Property prop(const std::string& name, Property::Value value) { return {name, std::move(value)}; }

TEST(OciSystemdCgroupsPath, SlicePrefixName_BecomesAScopeInThatSlice) {
  UnitPlace place = parse_cgroups_path("system.slice:sandcell-test:c1", "c1", false);
  EXPECT_EQ(place.slice, "system.slice");
  EXPECT_EQ(place.unit, "sandcell-test-c1.scope");
  EXPECT_FALSE(place.is_slice());
  EXPECT_EQ(unit_cgroup(place), "/system.slice/sandcell-test-c1.scope");

  // containerd's form under the kubelet's systemd driver: the pod's slice nests by dashes.
  place = parse_cgroups_path("kubepods-burstable-pod1.slice:cri-containerd:abc", "abc", false);
  EXPECT_EQ(place.unit, "cri-containerd-abc.scope");
  EXPECT_EQ(unit_cgroup(place),
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice/"
            "cri-containerd-abc.scope");

  EXPECT_EQ(parse_cgroups_path("system.slice::n", "x", false).unit, "n.scope");  // no prefix
  EXPECT_EQ(unit_cgroup(parse_cgroups_path("-.slice:p:n", "x", false)), "/p-n.scope");  // root
}

TEST(OciSystemdCgroupsPath, EmptySliceOrPath_IsSystemSliceForRootAndUserSliceForAUserManager) {
  EXPECT_EQ(parse_cgroups_path(":p:n", "x", false).slice, "system.slice");
  EXPECT_EQ(parse_cgroups_path(":p:n", "x", true).slice, "user.slice");
  UnitPlace place = parse_cgroups_path("", "c9", false);
  EXPECT_EQ(place.slice, "system.slice");
  EXPECT_EQ(place.unit, "sandcell-oci-c9.scope");
  EXPECT_EQ(parse_cgroups_path("", "c9", true).slice, "user.slice");
}

TEST(OciSystemdCgroupsPath, NameEndingInSlice_MakesThatSliceAndIgnoresThePrefix) {
  UnitPlace place = parse_cgroups_path("kubepods.slice:ignored:kubepods-pod2.slice", "x", false);
  EXPECT_TRUE(place.is_slice());
  EXPECT_EQ(place.unit, "kubepods-pod2.slice");
  EXPECT_EQ(unit_cgroup(place), "/kubepods.slice/kubepods-pod2.slice");
}

TEST(OciSystemdCgroupsPath, AnythingElse_IsRefusedNamingTheField) {
  for (const char* path :
       {"system.slice:p", "a.slice:b:c:d", "/kubepods/pod1/c1", "system.slice:p:", "system:p:n",
        "a--b.slice:p:n", "-a.slice:p:n", "a-.slice:p:n", ".slice:p:n", "a/b.slice:p:n",
        "system.slice:p/q:n", "system.slice:p:../../x", "system.slice:p:a b",
        "system.slice:p:a\nb", "system.slice:p:x@y", "system.slice:p:x\\y", "system.slice:p:bad--.slice"}) {
    std::string error = thrown_error([&] { parse_cgroups_path(path, "x", false); });
    EXPECT_NE(error.find("linux.cgroupsPath"), std::string::npos) << path << " → '" << error << "'";
  }
  EXPECT_NE(thrown_error([] { parse_cgroups_path("/kubepods/pod1", "x", false); }).find("slice:prefix:name"),
            std::string::npos);
  std::string long_name(300, 'a');
  EXPECT_NE(thrown_error([&] { parse_cgroups_path("system.slice:p:" + long_name, "x", false); })
                .find("longer than systemd's 255"),
            std::string::npos);
}

TEST(OciSystemdExpandSlice, NestsByDashes_AsRuncs) {
  EXPECT_EQ(expand_slice("foo.slice"), "/foo.slice");
  EXPECT_EQ(expand_slice("foo-bar.slice"), "/foo.slice/foo-bar.slice");
  EXPECT_EQ(expand_slice("foo-bar-baz.slice"), "/foo.slice/foo-bar.slice/foo-bar-baz.slice");
  EXPECT_EQ(expand_slice("-.slice"), "/");
  for (const char* bad : {"foo", "foo.sl", ".slice", "-foo.slice", "foo--bar.slice", "foo-.slice",
                          "foo/bar.slice", "test/a.slice"})
    EXPECT_NE(thrown_error([&] { expand_slice(bad); }), "") << bad;
}

TEST(OciSystemdProperties, Scope_GetsSliceDelegatePidsAccountingAndNoDefaultDependencies) {
  auto p = by_name(unit_properties(parse_cgroups_path("system.slice:t:c1", "c1", false), "c1", 4242));
  EXPECT_EQ(p["Description"], prop("Description", std::string("sandcell-oci container c1")));
  EXPECT_EQ(p["Slice"], prop("Slice", std::string("system.slice")));
  EXPECT_EQ(p["Delegate"], prop("Delegate", true));
  EXPECT_EQ(p["PIDs"], prop("PIDs", std::vector<uint32_t>{4242}));
  for (const char* accounting : {"MemoryAccounting", "CPUAccounting", "IOAccounting", "TasksAccounting"})
    EXPECT_EQ(p[accounting], prop(accounting, true));
  EXPECT_EQ(p["DefaultDependencies"], prop("DefaultDependencies", false));
  EXPECT_FALSE(p.contains("Wants"));
  EXPECT_EQ(p.size(), 9u);
}

TEST(OciSystemdProperties, Slice_WantsItsParentAndHasNoPidsNorDelegate) {
  auto p = by_name(unit_properties(parse_cgroups_path("kubepods.slice:x:kubepods-p.slice", "c", false), "c", 7));
  EXPECT_EQ(p["Wants"], prop("Wants", std::vector<std::string>{"kubepods.slice"}));
  EXPECT_FALSE(p.contains("Slice"));
  EXPECT_FALSE(p.contains("PIDs"));
  EXPECT_FALSE(p.contains("Delegate"));
}

TEST(OciSystemdResources, V2Plan_BecomesRuncsProperties) {
  json r = {{"memory", {{"limit", 64 << 20}, {"swap", 96 << 20}, {"reservation", 16 << 20}}},
            {"cpu", {{"shares", 1024}, {"quota", 25000}, {"period", 50000}, {"burst", 500},
                     {"cpus", "0-3,8"}, {"mems", "0"}}},
            {"pids", {{"limit", 9}}},
            {"blockIO", {{"weight", 500}, {"throttleReadBpsDevice", {{{"major", 8}, {"minor", 0}, {"rate", 1}}}}}},
            {"hugepageLimits", {{{"pageSize", "2MB"}, {"limit", 0}}}},
            {"unified", {{"memory.high", "50000000"}, {"memory.min", "max"}, {"cgroup.max.depth", "3"}}}};
  auto p = by_name(resource_properties(plan_resources(r, kV2), 252));
  EXPECT_EQ(p["MemoryMax"], prop("MemoryMax", uint64_t{64 << 20}));
  EXPECT_EQ(p["MemorySwapMax"], prop("MemorySwapMax", uint64_t{32 << 20})) << "v1's memory+swap less the limit";
  EXPECT_EQ(p["MemoryLow"], prop("MemoryLow", uint64_t{16 << 20}));
  EXPECT_EQ(p["MemoryHigh"], prop("MemoryHigh", uint64_t{50000000}));
  EXPECT_EQ(p["MemoryMin"], prop("MemoryMin", kInfinity));
  EXPECT_EQ(p["CPUWeight"], prop("CPUWeight", uint64_t{39})) << "runc: 1 + ((1024-2)*9999)/262142";
  EXPECT_EQ(p["CPUQuotaPeriodUSec"], prop("CPUQuotaPeriodUSec", uint64_t{50000}));
  EXPECT_EQ(p["CPUQuotaPerSecUSec"], prop("CPUQuotaPerSecUSec", uint64_t{500000}));
  EXPECT_EQ(p["AllowedCPUs"], prop("AllowedCPUs", std::vector<uint8_t>{0x0f, 0x01}));
  EXPECT_EQ(p["AllowedMemoryNodes"], prop("AllowedMemoryNodes", std::vector<uint8_t>{0x01}));
  EXPECT_EQ(p["TasksMax"], prop("TasksMax", uint64_t{9}));
  EXPECT_EQ(p["IOWeight"], prop("IOWeight", uint64_t{4950})) << "blkio 10..1000 → io 1..10000";
  // cpu.max.burst, io.max, hugetlb and cgroup.max.depth have no property: files only.
  EXPECT_EQ(p.size(), 12u);
}

TEST(OciSystemdResources, UnlimitedIsSystemdsInfinity) {
  json r = {{"memory", {{"limit", -1}}}, {"cpu", {{"quota", -1}}}, {"pids", {{"limit", -1}}}};
  auto p = by_name(resource_properties(plan_resources(r, kV2), 252));
  EXPECT_EQ(p["MemoryMax"], prop("MemoryMax", kInfinity));
  EXPECT_EQ(p["CPUQuotaPerSecUSec"], prop("CPUQuotaPerSecUSec", kInfinity));
  EXPECT_EQ(p["CPUQuotaPeriodUSec"], prop("CPUQuotaPeriodUSec", uint64_t{100000}));
  EXPECT_EQ(p["TasksMax"], prop("TasksMax", kInfinity));
}

TEST(OciSystemdResources, OlderSystemd_GetsOnlyThePropertiesItKnows) {
  json r = {{"cpu", {{"quota", 50000}, {"period", 100000}, {"cpus", "1"}}}};
  auto v241 = by_name(resource_properties(plan_resources(r, kV2), 241));
  EXPECT_FALSE(v241.contains("CPUQuotaPeriodUSec"));  // systemd 242
  EXPECT_FALSE(v241.contains("AllowedCPUs"));         // systemd 244
  EXPECT_EQ(v241["CPUQuotaPerSecUSec"], prop("CPUQuotaPerSecUSec", uint64_t{500000}));
  auto v243 = by_name(resource_properties(plan_resources(r, kV2), 243));
  EXPECT_TRUE(v243.contains("CPUQuotaPeriodUSec"));
  EXPECT_FALSE(v243.contains("AllowedCPUs"));
}

TEST(OciSystemdResources, CpuQuotaPerSecond_RoundsUpToAWholePercentAsRunc) {
  EXPECT_EQ(cpu_quota_per_sec_usec(50000, 100000), 500000u);
  EXPECT_EQ(cpu_quota_per_sec_usec(150000, 100000), 1500000u);
  EXPECT_EQ(cpu_quota_per_sec_usec(12345, 100000), 130000u);  // 123450 → next 10 ms
  EXPECT_EQ(cpu_quota_per_sec_usec(1000, 0), 10000u);          // the default period
  EXPECT_EQ(cpu_quota_per_sec_usec(0, 100000), kInfinity);
  EXPECT_EQ(cpu_quota_per_sec_usec(-1, 100000), kInfinity);
}

TEST(OciSystemdResources, RangeToBits_RuncsCases) {
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> cases = {
      {"0", {1}},
      {"1", {2}},
      {"0-1", {3}},
      {"0,1", {3}},
      {",0,1,", {3}},
      {"0-3", {0x0f}},
      {"0,1,2-3", {0x0f}},
      {"4-7", {0xf0}},
      {"0-7", {0xff}},
      {"0-15", {0xff, 0xff}},
      {"16", {0, 0, 1}},
      {"0-3,32-33", {0x0f, 0, 0, 0, 3}},
      {"1, 2, 1-2", {6}},
      {"    , 1   , 3  ,  5-7,\t", {0xea}},
      {"128-130,1", {2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7}}};
  for (const auto& [list, bits] : cases) EXPECT_EQ(range_to_bits(list, "f"), bits) << list;
  for (const char* bad : {"", "-", "1-", "-3", "54-53", "1 - 2", "a", "1-2-3", "0x1"})
    EXPECT_NE(thrown_error([&] { range_to_bits(bad, "linux.resources.cpu.cpus"); })
                  .find("linux.resources.cpu.cpus"),
              std::string::npos)
        << bad;
}

TEST(OciSystemdResources, HugeCpuNumbers_AreRefusedNotAllocated) {
  EXPECT_NE(thrown_error([] { range_to_bits("0-4294967295", "f"); }).find("above 65535"), std::string::npos);
  EXPECT_NE(thrown_error([] { range_to_bits("99999999999999999999999", "f"); }), "");
  EXPECT_EQ(range_to_bits("65535", "f").size(), 8192u);
}

}  // namespace
}  // namespace sandcell::oci::systemd
