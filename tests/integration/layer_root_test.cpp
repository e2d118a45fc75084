// Layer tars with root: overlay whiteouts (char device 0/0, trusted.overlay.opaque) written
// as OCI whiteouts and unpacked back, ownership, and the unpacked layers stacked by overlayfs.
#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "temp_tree.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

using test::TempTree;

struct Mount {
  std::string target;
  ~Mount() {
    if (!target.empty()) ::umount2(target.c_str(), MNT_DETACH);
  }
};

std::set<std::string> tar_names(const fs::path& path) {
  std::set<std::string> names;
  archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  archive_read_open_filename(a, path.c_str(), 10240);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    names.insert(archive_entry_pathname(e));
    archive_entry_xattr_reset(e);
    const char* name = nullptr;
    const void* value = nullptr;
    size_t size = 0;
    while (archive_entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK)
      names.insert(std::string(archive_entry_pathname(e)) + "@" + name);
  }
  archive_read_free(a);
  return names;
}

std::string xattr(const fs::path& p, const char* name) {
  char buf[16] = {};
  ssize_t n = ::lgetxattr(p.c_str(), name, buf, sizeof buf);
  return n < 0 ? std::string() : std::string(buf, static_cast<std::size_t>(n));
}

class LayerRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  }
};

// An upper dir as overlayfs leaves it after `rm /gone; rm -rf /opq; mkdir /opq; touch /opq/new`.
void make_overlay_upper(const fs::path& upper) {
  fs::create_directories(upper / "opq");
  ASSERT_EQ(::mknod((upper / "gone").c_str(), S_IFCHR, makedev(0, 0)), 0);
  ASSERT_EQ(::setxattr((upper / "opq").c_str(), "trusted.overlay.opaque", "y", 1, 0), 0);
  std::ofstream(upper / "opq" / "new") << "new";
  std::ofstream(upper / "owned") << "x";
  ASSERT_EQ(::chown((upper / "owned").c_str(), 1234, 5678), 0);
  ASSERT_EQ(::chmod((upper / "owned").c_str(), 04755), 0);
  ASSERT_EQ(::setxattr((upper / "owned").c_str(), "user.note", "kept", 4, 0), 0);
}

TEST_F(LayerRoot, OverlayWhiteoutsBecomeOciWhiteoutsAndComeBack) {
  TempTree t;
  make_overlay_upper(t.path / "up");
  write_layer_from_upper((t.path / "up").string(), (t.path / "l.tgz").string(), {});
  auto names = tar_names(t.path / "l.tgz");
  EXPECT_TRUE(names.contains(".wh.gone"));
  EXPECT_TRUE(names.contains("opq/.wh..wh..opq"));
  EXPECT_TRUE(names.contains("owned@user.note"));
  for (const auto& n : names) EXPECT_EQ(n.find("trusted.overlay"), std::string::npos) << n;

  fs::create_directory(t.path / "out");
  ExtractStats stats = extract_layer((t.path / "l.tgz").string(), (t.path / "out").string(), {});
  EXPECT_TRUE(stats.rejected.empty());
  struct stat gone {
  }, owned{};
  ASSERT_EQ(::lstat((t.path / "out/gone").c_str(), &gone), 0);
  EXPECT_TRUE(S_ISCHR(gone.st_mode));
  EXPECT_EQ(gone.st_rdev, makedev(0, 0));
  EXPECT_EQ(xattr(t.path / "out/opq", "trusted.overlay.opaque"), "y");
  EXPECT_FALSE(fs::exists(t.path / "out/opq/.wh..wh..opq"));
  ASSERT_EQ(::lstat((t.path / "out/owned").c_str(), &owned), 0);
  EXPECT_EQ(owned.st_uid, 1234u);
  EXPECT_EQ(owned.st_gid, 5678u);
  EXPECT_EQ(owned.st_mode & 07777, 04755u) << "setuid survives the chown";
  EXPECT_EQ(xattr(t.path / "out/owned", "user.note"), "kept");
}

TEST_F(LayerRoot, ATarCannotForgeOverlayXattrs) {
  TempTree t;
  fs::create_directories(t.path / "up/d");
  ASSERT_EQ(::setxattr((t.path / "up/d").c_str(), "user.overlay.redirect", "/etc", 4, 0), 0);
  write_layer_from_upper((t.path / "up").string(), (t.path / "l.tgz").string(), {});
  fs::create_directory(t.path / "out");
  extract_layer((t.path / "l.tgz").string(), (t.path / "out").string(), {});
  EXPECT_EQ(xattr(t.path / "out/d", "user.overlay.redirect"), "");
}

TEST_F(LayerRoot, UnpackedLayersStackAsOverlayLowers) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  fs::create_directories(t.path / "base/opq");
  std::ofstream(t.path / "base/gone") << "old";
  std::ofstream(t.path / "base/opq/old") << "old";
  std::ofstream(t.path / "base/kept") << "kept";
  make_overlay_upper(t.path / "top");
  std::vector<Descriptor> layers;
  std::vector<std::string> diff_ids;
  for (const char* dir : {"base", "top"}) {
    std::string tmp = store.tmp_dir() + "/l.tgz";
    LayerDigests d = write_layer_from_upper((t.path / dir).string(), tmp, {});
    layers.push_back({.media_type = std::string(media_type::kOciLayerGzip),
                      .digest = store.put_blob_file(tmp, d.digest),
                      .size = d.size,
                      .annotations = {}});
    diff_ids.push_back(d.diff_id);
  }
  ImageConfig config;
  config.diff_ids = diff_ids;
  store.put_image("stack", config, layers);
  auto lowers = store.unpacked_layers(store.resolve("stack"));
  fs::create_directory(t.path / "merged");
  std::string options = "lowerdir=" + lowers[1] + ":" + lowers[0];
  Mount mount;
  ASSERT_EQ(::mount("overlay", (t.path / "merged").c_str(), "overlay", MS_RDONLY, options.c_str()),
            0)
      << strerror(errno);
  mount.target = (t.path / "merged").string();
  EXPECT_FALSE(fs::exists(t.path / "merged/gone"));
  EXPECT_FALSE(fs::exists(t.path / "merged/opq/old"));
  EXPECT_TRUE(fs::exists(t.path / "merged/opq/new"));
  EXPECT_TRUE(fs::exists(t.path / "merged/kept"));
}

}  // namespace
}  // namespace sandcell::rootfs_builder
