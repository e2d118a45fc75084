// Hostile privilege games: nothing a program does inside the sandbox gives it a capability or
// another uid, whether it asks the kernel directly, execs a setuid-root or file-capability
// binary, or makes device nodes.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "hostile.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

const char* kZeroCaps[] = {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000",
                           "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000",
                           "CapAmb:\t0000000000000000", "NoNewPrivs:\t1"};

void expect_no_caps(const std::string& out) {
  for (const char* line : kZeroCaps) EXPECT_NE(out.find(line), std::string::npos) << line << " not in\n" << out;
}

// A host directory with copies of sc-probe: one setuid-root, one with file capabilities. It is
// bind-mounted read-only into the sandbox, as a user's own tool directory would be.
class PrivilegedBinaries : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-hostile-priv-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    fs::permissions(dir_, fs::perms(0755));
    fs::copy_file(test_rootfs() + "/bin/sc-probe", dir_ / "suid-probe");
    fs::copy_file(test_rootfs() + "/bin/sc-probe", dir_ / "fcap-probe");
    ASSERT_EQ(chmod((dir_ / "suid-probe").c_str(), 04755), 0);
    ASSERT_EQ(system(("/usr/sbin/setcap cap_sys_admin,cap_setuid,cap_dac_override+eip " +
                      (dir_ / "fcap-probe").string()).c_str()), 0);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> mount() const { return {"--mount", dir_.string() + ":/priv:ro", "--user", "1000:1000"}; }
  fs::path dir_;
};

TEST_F(PrivilegedBinaries, SetuidRootBinaryKeepsTheCallersUidAndNoCaps) {
  auto ids = run_in_sandbox(mount(), {"/priv/suid-probe", "ids"});
  EXPECT_EQ(stdout_of(ids), "uid 1000 1000 1000 gid 1000 1000 1000\n") << ids.err;
  auto caps = run_in_sandbox(mount(), {"/priv/suid-probe", "caps"});
  expect_no_caps(stdout_of(caps));
  EXPECT_EQ(status_of(caps), "ok");
  EXPECT_TRUE(no_denials(caps));
}

TEST_F(PrivilegedBinaries, FileCapabilityBinaryGainsNothing) {
  auto caps = run_in_sandbox(mount(), {"/priv/fcap-probe", "caps"});
  EXPECT_EQ(status_of(caps), "ok") << caps.err;
  expect_no_caps(stdout_of(caps));
  auto setuid = run_in_sandbox(mount(), {"/priv/fcap-probe", "syscall", "setuid0"});
  EXPECT_EQ(stdout_of(setuid), "setuid0 errno=EPERM\n");
  EXPECT_TRUE(no_denials(setuid));  // the kernel refused it (no CAP_SETUID), not the filter
}

TEST(HostilePrivilege, UnprivilegedUserHasNoCapabilitiesAtAll) {
  auto r = run_in_sandbox({"--user", "1000:1000"}, {"/bin/sc-probe", "caps"});
  expect_no_caps(stdout_of(r));
  EXPECT_EQ(r.record["isolation"]["capabilities"], nlohmann::json::array());
}

TEST(HostilePrivilege, CapsetCannotRaiseCapabilities) {
  for (const std::string user : {"0:0", "1000:1000"}) {
    auto r = run_in_sandbox({"--user", user}, {"/bin/sc-probe", "syscall", "capset-raise"});
    EXPECT_EQ(stdout_of(r), "capset-raise errno=EPERM\n") << user;
    EXPECT_TRUE(no_denials(r)) << "capset is allowed by the filter; the kernel refuses it";
  }
}

TEST_F(PrivilegedBinaries, SetuidRootBinaryCannotSetuidToRoot) {
  auto r = run_in_sandbox(mount(), {"/priv/suid-probe", "syscall", "setuid0"});
  EXPECT_EQ(stdout_of(r), "setuid0 errno=EPERM\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_TRUE(no_denials(r));
}

TEST(HostilePrivilege, MknodOfABlockDeviceFails) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "/bin/sc-probe syscall mknod-block; mknod /tmp/sdb b 8 16; echo $?"});
  EXPECT_EQ(stdout_of(r), "mknod-block errno=EPERM\n1\n");
  EXPECT_NE(r.record.value("stderr", "").find("Operation not permitted"), std::string::npos);
  EXPECT_TRUE(no_denials(r));  // no CAP_MKNOD: the kernel refuses it
}

TEST(HostilePrivilege, ChownToAnotherUserFailsForNonRoot) {
  auto r = run_in_sandbox({"--user", "1000:1000"},
                          {"/bin/sh", "-c", "touch /tmp/mine && chown 0:0 /tmp/mine; echo $?; stat -c %u /tmp/mine"});
  EXPECT_EQ(stdout_of(r), "1\n1000\n");
  EXPECT_EQ(status_of(r), "ok");
}

TEST(HostilePrivilege, RaisingTheOpenFileHardLimitFails) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "ulimit -H -n 1048576; echo $?; ulimit -H -n"});
  EXPECT_EQ(stdout_of(r), "1\n1024\n") << r.record.value("stderr", "");
  EXPECT_EQ(status_of(r), "ok");
}

}  // namespace
}  // namespace sandcell::test
