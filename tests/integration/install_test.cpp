// `cmake --install` gives a tree that runs on its own: its executables read the skills, the
// seccomp profiles and the AppArmor templates installed beside them
// (base/include/sandcell/base/shipped_data.hpp), before the source tree they were built
// from, which still exists here. Each installed file is changed, and the change must show.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

TEST(Install, AnInstalledTreeReadsItsOwnSkillsAndProfiles) {
  char tmpl[] = "/tmp/sandcell-install-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path prefix = tmpl;
  const CliRun install = run_program(
      {SANDCELL_CMAKE_COMMAND, "--install", SANDCELL_BUILD_DIR, "--prefix", prefix.string()});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  for (const char* exe :
       {"sandcell", "sandcell-net", "sandcell-images", "sandcell-serve", "sandcell-oci"})
    EXPECT_EQ(access((prefix / "bin" / exe).c_str(), X_OK), 0) << exe;
  const std::string bin = (prefix / "bin" / "sandcell").string();
  const fs::path share = prefix / "share" / "sandcell";

  // Skills: listed from the installed copies.
  const CliRun skills =
      run_program({bin, "--root", (prefix / "store").string(), "skills", "list", "--json"});
  ASSERT_EQ(skills.exit_code, 0) << skills.err;
  const auto listed = nlohmann::json::parse(skills.out);
  ASSERT_GE(listed.size(), 5u) << skills.out;
  for (const auto& skill : listed)
    EXPECT_EQ(skill["dir"].get<std::string>().rfind((share / "skills").string() + "/", 0), 0u)
        << skill;

  // Seccomp: a run compiles the installed code.json; broken, the run fails and names that file.
  const std::vector<std::string> run = {bin,    "run", "--rootfs",  test_rootfs(), "--seccomp",
                                        "code", "--",  "/bin/echo", "ok"};
  const CliRun good = run_program(run);
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_EQ(good.out, "ok\n");
  std::ofstream(share / "seccomp" / "code.json") << "{";
  const CliRun broken = run_program(run);
  EXPECT_EQ(broken.exit_code, 125);
  EXPECT_NE(broken.err.find("seccomp profile code (" + (share / "seccomp" / "code.json").string() +
                            "): not valid JSON"),
            std::string::npos)
      << broken.err;

  // AppArmor: the binary profile is rendered from the installed template, for the installed bin/.
  std::ofstream(share / "apparmor" / "sandcell-binary", std::ios::app) << "# installed copy\n";
  const CliRun profile = run_program({bin, "setup", "apparmor", "--print"});
  EXPECT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("# installed copy\n"), std::string::npos) << profile.out;
  EXPECT_NE(profile.out.find("profile sandcell " + (prefix / "bin").string() + "/sandcell{"),
            std::string::npos)
      << profile.out;
  fs::remove_all(prefix);
}

// A `sandcell` copied alone to a machine without its share/ (and without the source tree it was
// built from) still runs with its default seccomp profiles and renders its AppArmor profile: both
// are compiled in. (`setup` is one of the commands sandcell hands to sandcell-images, so that one
// is copied beside it, as an install keeps them.) "Another machine" is a private mount namespace
// where empty tmpfs mounts hide the source tree's seccomp/profiles and apparmor/profiles; they
// vanish with the namespace.
TEST(Install, ACopiedBinaryRunsWithItsCompiledInProfiles) {
  char tmpl[] = "/tmp/sandcell-copied-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const fs::path dir = tmpl;
  const fs::path copy = dir / "sandcell";
  fs::copy_file(sandcell_binary(), copy);
  fs::copy_file(fs::path(sandcell_binary()).parent_path() / "sandcell-images",
                dir / "sandcell-images");
  ASSERT_FALSE(fs::exists("/usr/share/sandcell")) << "a packaged copy would be found first";
  // tests/fixtures → the source tree.
  const fs::path source = fs::path(SANDCELL_TEST_FIXTURES_DIR).parent_path().parent_path();
  const std::string hide = "mount -t tmpfs none " + (source / "seccomp" / "profiles").string() +
                           " && mount -t tmpfs none " +
                           (source / "apparmor" / "profiles").string() + " && exec ";
  auto elsewhere = [&](const std::string& args) {
    return run_program({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
                        hide + copy.string() + " " + args});
  };

  for (const char* profile : {"default", "code"}) {
    const CliRun run = elsewhere("run --rootfs " + test_rootfs() + " --seccomp " + profile +
                                 " -- /bin/sh -c 'grep ^Seccomp: /proc/self/status'");
    EXPECT_EQ(run.exit_code, 0) << profile << ": " << run.err;
    EXPECT_EQ(run.out, "Seccomp:\t2\n") << profile;
  }
  // The hiding works: a profile that only exists as a file is gone.
  const CliRun hidden =
      elsewhere("run --rootfs " + test_rootfs() + " --seccomp " +
                (source / "seccomp" / "profiles" / "default.json").string() + " -- /bin/true");
  EXPECT_EQ(hidden.exit_code, 125) << hidden.err;

  const CliRun profile = elsewhere("setup apparmor --print");
  EXPECT_EQ(profile.exit_code, 0) << profile.err;
  EXPECT_NE(profile.out.find("profile sandcell " + dir.string() + "/sandcell{"), std::string::npos)
      << profile.out;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sandcell::test
