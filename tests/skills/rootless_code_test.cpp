// `sandcell code` as an unprivileged user (issue 11). The user cannot read root's test store, so
// the skill image goes over as an archive: saved as root (a read-only use of the store), loaded
// as the user, which unpacks its layers inside the user namespace with their owners.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "rootless_user.hpp"
#include "skills_support.hpp"

namespace sandcell::test {
namespace {

TEST(RootlessCode, BashSkillRunsForAnUnprivilegedUserFromItsOwnStore) {
  RootlessUser user;
  const std::string archive = user.dir() + "/skill-bash.tar";
  CliRun saved =
      run_sandcell({"--root", test_store(), "save", "-o", archive, "sandcell/skill-bash:latest"});
  ASSERT_EQ(saved.exit_code, 0) << saved.err;
  ASSERT_EQ(chmod(archive.c_str(), 0644), 0);
  CliRun loaded = user.sandcell({"load", "-i", archive});
  ASSERT_EQ(loaded.exit_code, 0) << loaded.err;

  CliRun r = user.sandcell({"code", "--json", "--skill", "bash", "-"},
                           "echo $((6*7)); id -u; ls -ld /usr | cut -c1-10\n");
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record["status"], "ok") << r.out;
  EXPECT_EQ(r.record["stdout"], "42\n0\ndrwxr-xr-x\n");
  EXPECT_TRUE(r.record["report"]["isolation"]["rootless"].get<bool>()) << r.record["report"].dump();
  EXPECT_EQ(r.record["report"]["enforced"]["memory_bytes"], "rlimit");
  EXPECT_TRUE(user.processes().empty());
  EXPECT_TRUE(user.leftover_state().empty()) << user.leftover_state().front();
}

}  // namespace
}  // namespace sandcell::test
