// runtime::Spec helpers and the result record, without root or kernel features.
#include <gtest/gtest.h>
#include <sys/capability.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/spec.hpp"
#include "spec_checks.hpp"

namespace sandcell::runtime {
namespace {

TEST(ParseSize, AcceptsSuffixesInEitherCase) {
  EXPECT_EQ(parse_size("65536", "x"), 65536u);
  EXPECT_EQ(parse_size("512m", "x"), 512ull << 20);
  EXPECT_EQ(parse_size("1G", "x"), 1ull << 30);
  EXPECT_EQ(parse_size("64kb", "x"), 64ull << 10);
  EXPECT_EQ(parse_size("2t", "x"), 2ull << 40);
}

TEST(ParseSize, RejectsGarbageNamingTheOption) {
  for (const char* bad : {"lots", "", "-5", "5x", "5mm", "99999999999999999999", "99999999999t"}) {
    try {
      parse_size(bad, "--memory");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_TRUE(e.input_error());
      EXPECT_NE(std::string(e.what()).find("--memory"), std::string::npos);
    }
  }
}

TEST(ParsePositiveNumber, RejectsZeroNegativeAndText) {
  EXPECT_DOUBLE_EQ(parse_positive_number("1.5", "--cpus"), 1.5);
  for (const char* bad : {"0", "-1", "abc", "1.5x", "inf", "nan", ""})
    EXPECT_THROW(parse_positive_number(bad, "--cpus"), Error) << bad;
}

TEST(DefaultSpec, IsStrict) {
  Spec spec = default_spec();
  EXPECT_EQ(spec.limits.memory_bytes, 512ull << 20);
  EXPECT_EQ(spec.limits.pids, 128u);
  EXPECT_EQ(spec.limits.cpus, 1.0);
  EXPECT_EQ(spec.limits.wall_s, 30.0);
  EXPECT_EQ(spec.limits.output_bytes, 1ull << 20);
  EXPECT_TRUE(spec.capabilities.empty());
  EXPECT_TRUE(spec.no_new_privileges);
  for (const char* masked : {"/proc/kcore", "/proc/keys", "/sys/firmware", "/proc/acpi"})
    EXPECT_NE(std::find(spec.masked_paths.begin(), spec.masked_paths.end(), masked), spec.masked_paths.end());
}

TEST(CheckSpec, NamesTheBadField) {
  Spec spec = default_spec();
  EXPECT_THROW(check_spec(spec), Error);  // no command, no rootfs
  spec.args = {"/bin/true"};
  spec.rootfs_layers = {"/"};
  spec.cwd = "relative";
  try {
    check_spec(spec);
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("working directory"), std::string::npos);
  }
  spec.cwd = "/";
  EXPECT_NO_THROW(check_spec(spec));
}

TEST(CheckSandboxPath, RejectsRelativeAndDotDot) {
  EXPECT_NO_THROW(check_sandbox_path("/data/x", "d"));
  EXPECT_THROW(check_sandbox_path("data", "d"), Error);
  EXPECT_THROW(check_sandbox_path("/data/../etc", "d"), Error);
}

TEST(Capabilities, NamesInAnyCaseWithOrWithoutPrefix) {
  EXPECT_EQ(capability_from_name("NET_BIND_SERVICE"), CAP_NET_BIND_SERVICE);
  EXPECT_EQ(capability_from_name("cap_sys_admin"), CAP_SYS_ADMIN);
  EXPECT_THROW(capability_from_name("CAP_NOPE"), Error);
  CapabilityPlan plan = plan_capabilities({"CHOWN"}, /*raise_ambient=*/false);
  EXPECT_EQ(plan.keep, std::vector<cap_value_t>{CAP_CHOWN});
  EXPECT_EQ(std::count(plan.drop_from_bounding.begin(), plan.drop_from_bounding.end(), CAP_CHOWN), 0);
  EXPECT_EQ(plan.drop_from_bounding.size() + 1, static_cast<size_t>(cap_max_bits()));
}

// Issue 37 item 9: the inheritable set was the kept set for every run (runc clears it since
// CVE-2022-24769); it holds them only when they are raised as ambient capabilities.
TEST(Capabilities, InheritableOnlyForAmbient) {
  auto flag_of = [](const CapabilityPlan& plan, cap_flag_t flag) {
    cap_flag_value_t value = CAP_CLEAR;
    EXPECT_EQ(cap_get_flag(plan.final_state.get(), CAP_CHOWN, flag, &value), 0);
    return value;
  };
  CapabilityPlan root = plan_capabilities({"CHOWN"}, /*raise_ambient=*/false);
  EXPECT_EQ(flag_of(root, CAP_EFFECTIVE), CAP_SET);
  EXPECT_EQ(flag_of(root, CAP_PERMITTED), CAP_SET);
  EXPECT_EQ(flag_of(root, CAP_INHERITABLE), CAP_CLEAR);
  CapabilityPlan user = plan_capabilities({"CHOWN"}, /*raise_ambient=*/true);
  EXPECT_EQ(flag_of(user, CAP_INHERITABLE), CAP_SET);
}

TEST(ResultRecord, HasEveryDesignField) {
  Result r;
  r.status = Status::TimeoutWall;
  r.signal = 9;
  r.limits = default_limits();
  r.enforced["memory_bytes"] = Enforcement::CgroupV1;
  r.events.denied_syscalls.push_back({"keyctl", 2});
  nlohmann::json j = to_json(r);
  EXPECT_EQ(j["status"], "timeout_wall");
  EXPECT_EQ(j["exit_code"], nullptr);
  EXPECT_EQ(j["signal"], 9);
  EXPECT_EQ(j["enforced"]["memory_bytes"], "cgroup-v1");
  EXPECT_EQ(j["events"]["denied_syscalls"][0]["name"], "keyctl");
  for (const char* key : {"wall_ms", "cpu_ms", "peak_memory_bytes", "stdout_bytes", "stderr_bytes",
                          "stdout_truncated", "stderr_truncated", "limits", "isolation", "events"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_FALSE(j.contains("stdout"));  // only when captured
}

TEST(ExitCode, FollowsDesignRules) {
  Result r;
  r.status = Status::ExitNonzero;
  r.exit_code = 3;
  EXPECT_EQ(exit_code_for(r), 3);
  r = Result{};
  r.status = Status::Signaled;
  r.signal = 31;
  EXPECT_EQ(exit_code_for(r), 159);
  r = Result{};
  r.status = Status::RuntimeError;
  EXPECT_EQ(exit_code_for(r), 125);
  r.exit_code = 127;
  EXPECT_EQ(exit_code_for(r), 127);
}

}  // namespace
}  // namespace sandcell::runtime
