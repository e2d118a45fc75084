#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>
#include <fstream>

#include "image_paths.hpp"
#include "sandcell/rootfs_builder/image_user.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

class ImageUser : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("sandcell-user-" + std::to_string(getpid()));
    fs::create_directories(root_ / "lower/etc");
    fs::create_directories(root_ / "upper/etc");
    std::ofstream(root_ / "lower/etc/passwd") << "root:x:0:0:root:/root:/bin/sh\n"
                                                 "app:x:1000:1000::/home/app:/bin/sh\n"
                                                 "broken line\n";
    std::ofstream(root_ / "lower/etc/group") << "root:x:0:\nstaff:x:50:app,other\napp:x:1000:\n";
  }
  void TearDown() override { fs::remove_all(root_); }
  std::vector<std::string> layers() const { return {root_ / "upper", root_ / "lower"}; }
  fs::path root_;
};

TEST_F(ImageUser, NameResolvesUidGidHomeAndSupplementaryGroups) {
  ResolvedUser u = resolve_user("app", layers());
  EXPECT_EQ(u.uid, 1000u);
  EXPECT_EQ(u.gid, 1000u);
  EXPECT_EQ(u.home, "/home/app");
  EXPECT_EQ(u.additional_gids, std::vector<gid_t>{50});
}

TEST_F(ImageUser, NumericAndGroupForms) {
  EXPECT_EQ(resolve_user("1000:staff", layers()).gid, 50u);
  EXPECT_EQ(resolve_user("4242", layers()).uid, 4242u);  // not in passwd: allowed, gid 0
  EXPECT_EQ(resolve_user("4242", layers()).gid, 0u);
  EXPECT_EQ(resolve_user("4242:77", layers()).gid, 77u);
}

// (uid_t)-1 is "unchanged" to setresuid: User 4294967295 ran as root (issue 37, item 9).
TEST_F(ImageUser, MinusOneAsUidOrGidIsNoId) {
  EXPECT_THROW(resolve_user("4294967295", layers()), Error);
  EXPECT_THROW(resolve_user("4294967295:4294967295", layers()), Error);
  EXPECT_THROW(resolve_user("1000:4294967295", layers()), Error);
  EXPECT_EQ(resolve_user("4294967294", layers()).uid, 4294967294u);
}

TEST_F(ImageUser, UnknownNameIsAnErrorNamingIt) {
  try {
    resolve_user("nobody-here", layers());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nobody-here"), std::string::npos);
  }
  EXPECT_THROW(resolve_user("app:nogroup", layers()), Error);
}

TEST_F(ImageUser, UpperLayerWinsAndWhiteoutHides) {
  std::ofstream(root_ / "upper/etc/passwd") << "app:x:2000:2000::/srv:/bin/sh\n";
  EXPECT_EQ(resolve_user("app", layers()).uid, 2000u);
  fs::remove(root_ / "upper/etc/passwd");
  if (geteuid() == 0) {  // an overlay whiteout is a 0/0 character device
    ASSERT_EQ(mknod((root_ / "upper/etc/passwd").c_str(), S_IFCHR | 0600, makedev(0, 0)), 0);
    EXPECT_EQ(read_image_file(layers(), "/etc/passwd"), "");
    EXPECT_THROW(resolve_user("app", layers()), Error);
  }
}

// A lower layer's symlink among a path's directories led lstat to the host: COPY to /a/b/ then
// took a host directory's mode and owner into the image (issue 37, item 9).
TEST_F(ImageUser, ImageLstatNeverFollowsALowerLayersSymlinkToTheHost) {
  fs::create_directories(root_ / "host/b");
  fs::permissions(root_ / "host/b", fs::perms(0701));
  fs::create_directories(root_ / "upper/a");
  fs::create_symlink(root_ / "host", root_ / "lower/a");  // an absolute host path
  EXPECT_FALSE(image_lstat(layers(), "/a/b").has_value());
  fs::create_directories(root_ / "lower/c/d");
  auto inside = image_lstat(layers(), "/c/d");
  ASSERT_TRUE(inside.has_value());
  EXPECT_TRUE(S_ISDIR(inside->st_mode));
}

TEST_F(ImageUser, SymlinkCannotLeaveTheLayer) {
  fs::remove(root_ / "lower/etc/passwd");
  fs::create_symlink("/etc/hostname", root_ / "lower/etc/passwd");  // would read the host's file
  EXPECT_EQ(read_image_file(layers(), "/etc/passwd"), "");
}

}  // namespace
}  // namespace sandcell::rootfs_builder
