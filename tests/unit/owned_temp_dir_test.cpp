// runtime::OwnedTempDir: a temporary directory its owner holds (flock) while it lives, so that
// gc tells a killed process's leftovers from a live one's (issue 37 item 9).
#include "sandcell/runtime/owned_temp_dir.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

void make_old(const fs::path& dir) {
  const timespec old[2] = {{.tv_sec = ::time(nullptr) - 600, .tv_nsec = 0},
                           {.tv_sec = ::time(nullptr) - 600, .tv_nsec = 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, dir.c_str(), old, 0), 0);
}

TEST(OwnedTempDir, GcRemovesOnlyOldDirectoriesNobodyHolds) {
  TempTree tree("sc-owned");
  const fs::path parent = tree.path / "tmp";
  runtime::OwnedTempDir live(parent, "copy-");
  std::ofstream(live.path() + "/staged") << "x";
  make_old(live.path());
  const fs::path dead = parent / "run-killed", fresh = parent / "run-just-made", file = parent / "pull-partial";
  fs::create_directories(dead / "upper");
  make_old(dead);
  fs::create_directories(fresh);  // between mkdtemp and its owner's flock
  std::ofstream(file) << "partial blob";  // files are not this protocol's: prune's day rule

  EXPECT_EQ(runtime::remove_abandoned_temp_dirs(parent), std::vector<std::string>{dead.string()});
  EXPECT_TRUE(fs::exists(live.path() + "/staged"));
  EXPECT_TRUE(fs::exists(fresh));
  EXPECT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(dead));
}

TEST(OwnedTempDir, ScopeExitRemovesItAndReleaseKeepsIt) {
  TempTree tree("sc-owned");
  std::string gone, kept;
  {
    runtime::OwnedTempDir dir(tree.path, "a-");
    gone = dir.path();
    fs::create_directories(gone + "/deep/er");
    runtime::OwnedTempDir other(tree.path, "b-");
    kept = other.path();
    other.release();
  }
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_TRUE(fs::exists(kept));
}

}  // namespace
}  // namespace sandcell::test
