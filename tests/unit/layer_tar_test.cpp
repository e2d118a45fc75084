// Layer tars without root: deterministic writing, gzip header, safe extraction of hostile tars.
#include "sandcell/rootfs_builder/layer_tar.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

struct TempTree {
  fs::path path;
  TempTree() {
    std::string t = (fs::temp_directory_path() / "sc-layer-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempTree() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}
std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void set_mtime(const fs::path& p, time_t t) {
  timespec ts[2] = {{t, 0}, {t, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW), 0) << p;
}

// The same tree, created in a different order on different calls.
void make_upper(const fs::path& upper, bool reverse, time_t mtime) {
  fs::create_directories(upper / "etc" / "app");
  std::vector<std::string> files = {"etc/app/a.conf", "etc/app/b.conf", "etc/hosts", "z"};
  if (reverse) std::reverse(files.begin(), files.end());
  for (const auto& f : files) write_text(upper / f, "content of " + f);
  fs::create_symlink("../../etc/passwd", upper / "etc" / "link");
  fs::create_hard_link(upper / "z", upper / "z-hard");
  fs::permissions(upper / "z", fs::perms(0750));
  for (const auto& p : fs::recursive_directory_iterator(upper)) set_mtime(p.path(), mtime);
  set_mtime(upper, mtime);
}

struct TarEntry {
  std::string path;
  mode_t type = AE_IFREG;
  std::string data;
  std::string symlink;
  std::string hardlink;
  mode_t perm = 0644;
  dev_t rdev = 0;
};

TarEntry file(std::string path, std::string data) {
  TarEntry e;
  e.path = std::move(path);
  e.data = std::move(data);
  return e;
}
TarEntry symlink(std::string path, std::string target) {
  TarEntry e;
  e.path = std::move(path);
  e.type = AE_IFLNK;
  e.symlink = std::move(target);
  return e;
}
TarEntry hardlink(std::string path, std::string target) {
  TarEntry e;
  e.path = std::move(path);
  e.hardlink = std::move(target);
  return e;
}
TarEntry node(std::string path, mode_t type, dev_t rdev) {
  TarEntry e;
  e.path = std::move(path);
  e.type = type;
  e.rdev = rdev;
  return e;
}

void write_tar(const fs::path& out, const std::vector<TarEntry>& entries) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK);
  for (const auto& t : entries) {
    archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, t.path.c_str());
    archive_entry_set_filetype(e, t.type);
    archive_entry_set_perm(e, t.perm);
    if (!t.symlink.empty()) archive_entry_copy_symlink(e, t.symlink.c_str());
    if (!t.hardlink.empty()) archive_entry_copy_hardlink(e, t.hardlink.c_str());
    if (t.rdev != 0 || t.type == AE_IFCHR) archive_entry_set_rdev(e, t.rdev);
    archive_entry_set_size(e, static_cast<la_int64_t>(t.data.size()));
    archive_write_header(a, e);
    if (!t.data.empty()) archive_write_data(a, t.data.data(), t.data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

struct ReadEntry {
  std::string path, symlink, hardlink;
  mode_t mode = 0;
  time_t mtime = 0;
  std::string uname;
};

std::vector<ReadEntry> read_tar(const fs::path& path) {
  std::vector<ReadEntry> out;
  archive* a = archive_read_new();
  archive_read_support_filter_gzip(a);
  archive_read_support_format_tar(a);
  EXPECT_EQ(archive_read_open_filename(a, path.c_str(), 10240), ARCHIVE_OK);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
    const char* s = archive_entry_symlink(e);
    const char* h = archive_entry_hardlink(e);
    const char* u = archive_entry_uname(e);
    out.push_back({archive_entry_pathname(e), s ? s : "", h ? h : "", archive_entry_mode(e),
                   archive_entry_mtime(e), u ? u : ""});
  }
  archive_read_free(a);
  return out;
}

TEST(WriteLayer, SameTreeWithDifferentMtimesGivesSameDigestUnderSourceDateEpoch) {
  TempTree t;
  make_upper(t.path / "one", false, 2000000000);
  make_upper(t.path / "two", true, 2100000000);
  LayerWriteOptions options{.mtime_clamp = 1700000000};
  LayerDigests a =
      write_layer_from_upper((t.path / "one").string(), (t.path / "one.tgz").string(), options);
  LayerDigests b =
      write_layer_from_upper((t.path / "two").string(), (t.path / "two.tgz").string(), options);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.diff_id, b.diff_id);
  EXPECT_EQ(read_text(t.path / "one.tgz"), read_text(t.path / "two.tgz"));
  for (const auto& e : read_tar(t.path / "one.tgz")) EXPECT_EQ(e.mtime, 1700000000) << e.path;
}

TEST(WriteLayer, DigestsDescribeTheGzipAndTheTarAndTheHeaderHasNoTimestamp) {
  TempTree t;
  make_upper(t.path / "up", false, 1600000000);
  LayerDigests d =
      write_layer_from_upper((t.path / "up").string(), (t.path / "l.tgz").string(), {});
  EXPECT_EQ(d.digest, sha256_file_digest((t.path / "l.tgz").string()));
  EXPECT_EQ(d.diff_id, layer_diff_id((t.path / "l.tgz").string()));
  EXPECT_EQ(d.size, static_cast<std::int64_t>(fs::file_size(t.path / "l.tgz")));
  std::string bytes = read_text(t.path / "l.tgz");
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
  EXPECT_EQ(bytes[3] & 0x08, 0) << "FNAME set: the header carries a file name";
  EXPECT_EQ(bytes.substr(4, 4), std::string(4, '\0')) << "MTIME set in the gzip header";
  EXPECT_TRUE(is_gzip_file((t.path / "l.tgz").string()));
}

TEST(WriteLayer, EntriesAreSortedWithVerbatimSymlinksHardlinksAndNoOwnerNames) {
  TempTree t;
  make_upper(t.path / "up", false, 1600000000);
  write_layer_from_upper((t.path / "up").string(), (t.path / "l.tgz").string(), {});
  auto entries = read_tar(t.path / "l.tgz");
  std::vector<std::string> names;
  for (const auto& e : entries) names.push_back(e.path);
  EXPECT_EQ(names, (std::vector<std::string>{"etc/", "etc/app/", "etc/app/a.conf", "etc/app/b.conf",
                                             "etc/hosts", "etc/link", "z", "z-hard"}));
  EXPECT_EQ(entries[5].symlink, "../../etc/passwd");
  EXPECT_EQ(entries[7].hardlink, "z");
  EXPECT_EQ(entries[6].mode & 07777, 0750u);
  for (const auto& e : entries) EXPECT_EQ(e.uname, "") << e.path;
}

TEST(ExtractLayer, RoundTripKeepsContentModesSymlinksHardlinksAndMtimes) {
  TempTree t;
  make_upper(t.path / "up", false, 1600000000);
  write_layer_from_upper((t.path / "up").string(), (t.path / "l.tgz").string(), {});
  fs::create_directory(t.path / "out");
  ExtractStats stats = extract_layer(
      (t.path / "l.tgz").string(), (t.path / "out").string(),
      {.whiteouts = WhiteoutHandling::Keep, .preserve_owner = false, .opaque_xattr = {}, .max_bytes = {}});
  EXPECT_TRUE(stats.rejected.empty());
  EXPECT_EQ(stats.entries, 8u);
  EXPECT_EQ(read_text(t.path / "out/etc/app/b.conf"), "content of etc/app/b.conf");
  EXPECT_EQ(fs::read_symlink(t.path / "out/etc/link"), "../../etc/passwd");
  struct stat z {
  }, zh{}, dir{};
  ASSERT_EQ(::stat((t.path / "out/z").c_str(), &z), 0);
  ASSERT_EQ(::stat((t.path / "out/z-hard").c_str(), &zh), 0);
  ASSERT_EQ(::stat((t.path / "out/etc").c_str(), &dir), 0);
  EXPECT_EQ(z.st_ino, zh.st_ino);
  EXPECT_EQ(z.st_mode & 07777, 0750u);
  EXPECT_EQ(z.st_mtime, 1600000000);
  EXPECT_EQ(dir.st_mtime, 1600000000) << "directory mtimes are set after their contents";
}

TEST(ExtractLayer, ReadsPlainTarsToo) {
  TempTree t;
  write_tar(t.path / "plain.tar", {file("dir/file", "hello")});
  fs::create_directory(t.path / "out");
  ExtractStats stats =
      extract_layer((t.path / "plain.tar").string(), (t.path / "out").string(), {});
  EXPECT_EQ(read_text(t.path / "out/dir/file"), "hello");
  EXPECT_EQ(stats.bytes, 5u);
}

// The hostile corpus: every entry tries to write outside the root. The root sits alone in a
// sentinel directory, which must hold nothing else afterwards.
TEST(ExtractLayer, HostileEntriesNeverWriteOutsideTheRoot) {
  TempTree sentinel, tars;
  fs::path root = sentinel.path / "root";
  fs::create_directory(root);
  std::string outside = (sentinel.path / "outside").string();
  write_tar(tars.path / "evil.tar", {file("../evil", "x"),
                                     file("/etc/sandcell-evil", "x"),
                                     file("a/../../evil2", "x"),
                                     symlink("a", "/"),
                                     file("a/via-root-link", "in root"),
                                     symlink("b", "../../../.."),
                                     file("b/via-dotdot-link", "in root"),
                                     symlink("d", outside),
                                     file("d/through-absolute-link", "x"),
                                     symlink("./", outside),
                                     symlink(".", "/"),
                                     hardlink("h1", "/etc/passwd"),
                                     hardlink("h2", "../x"),
                                     symlink("c", "/etc"),
                                     hardlink("h3", "c/passwd"),
                                     node("tty", AE_IFCHR, makedev(4, 1)),
                                     node("sda", AE_IFBLK, makedev(8, 0)),
                                     symlink("out-link", outside),
                                     file("out-link", "replaces the symlink, not its target"),
                                     node("fifo", AE_IFIFO, 0)});
  ExtractStats stats = extract_layer((tars.path / "evil.tar").string(), root.string(), {});
  std::vector<std::string> in_sentinel;
  for (const auto& e : fs::directory_iterator(sentinel.path))
    in_sentinel.push_back(e.path().filename());
  EXPECT_EQ(in_sentinel, std::vector<std::string>{"root"});
  EXPECT_FALSE(fs::exists("/etc/sandcell-evil"));
  EXPECT_EQ(read_text(root / "via-root-link"), "in root");
  EXPECT_EQ(read_text(root / "via-dotdot-link"), "in root");
  EXPECT_EQ(read_text(root / "out-link"), "replaces the symlink, not its target");
  EXPECT_TRUE(fs::is_directory(fs::symlink_status(root))) << "the root is still a directory";
  EXPECT_EQ(fs::read_symlink(root / "d"), outside) << "symlink targets are stored verbatim";
  EXPECT_TRUE(fs::is_fifo(root / "fifo"));
  std::map<std::string, std::string> rejected;
  for (const auto& r : stats.rejected) rejected[r.path] = r.reason;
  EXPECT_EQ(rejected["../evil"], "'..' component");
  EXPECT_EQ(rejected["/etc/sandcell-evil"], "absolute path");
  EXPECT_EQ(rejected["a/../../evil2"], "'..' component");
  EXPECT_TRUE(rejected.contains("d/through-absolute-link"));
  EXPECT_EQ(rejected["./"], "replaces the root with a non-directory");
  EXPECT_EQ(rejected["."], "replaces the root with a non-directory");
  EXPECT_EQ(rejected["h1"], "absolute path");
  EXPECT_EQ(rejected["h2"], "'..' component");
  EXPECT_TRUE(rejected.contains("h3")) << "c -> /etc resolves to <root>/etc, which has no passwd";
  EXPECT_EQ(rejected["tty"], "device node dropped");
  EXPECT_EQ(rejected["sda"], "device node dropped");
  EXPECT_EQ(stats.rejected.size(), 11u);
}

TEST(ExtractLayer, AFileInThePlaceOfAParentDirectoryIsRejected) {
  TempTree t;
  write_tar(t.path / "x.tar", {file("f", "file"), file("f/child", "x")});
  fs::create_directory(t.path / "out");
  ExtractStats stats = extract_layer((t.path / "x.tar").string(), (t.path / "out").string(), {});
  ASSERT_EQ(stats.rejected.size(), 1u);
  EXPECT_EQ(stats.rejected[0].path, "f/child");
  EXPECT_EQ(read_text(t.path / "out/f"), "file");
}

TEST(ExtractLayer, ACorruptArchiveThrows) {
  TempTree t;
  write_text(t.path / "bad.tgz", std::string("\x1f\x8b\x08\x00garbage", 12));
  fs::create_directory(t.path / "out");
  EXPECT_THROW(extract_layer((t.path / "bad.tgz").string(), (t.path / "out").string(), {}), Error);
}

// Whiteouts naming "." or ".." (".wh..", ".wh...") cleared the layer's own directory or its
// parent: every unpacked layer of the store (issue 37, item 3).
TEST(ExtractLayer, WhiteoutsOfDotAndDotDotAreRejectedAndSiblingLayersStay) {
  TempTree t;
  fs::path layers = t.path / "layers";
  fs::create_directories(layers / "other-layer/bin");
  write_text(layers / "other-layer/bin/sh", "sentinel");
  fs::create_directories(layers / "new-layer");
  write_tar(t.path / "wh.tar", {file("kept", "k"), file("sub/in-sub", "s"), file(".wh...", ""), file(".wh..", ""),
                                file("sub/.wh...", ""), file("sub/.wh..", "")});
  ExtractStats stats = extract_layer((t.path / "wh.tar").string(), (layers / "new-layer").string(), {});
  EXPECT_EQ(read_text(layers / "other-layer/bin/sh"), "sentinel");
  EXPECT_EQ(read_text(layers / "new-layer/kept"), "k");
  EXPECT_EQ(read_text(layers / "new-layer/sub/in-sub"), "s");
  std::set<std::string> rejected;
  for (const auto& r : stats.rejected) rejected.insert(r.path);
  EXPECT_EQ(rejected, (std::set<std::string>{".wh...", ".wh..", "sub/.wh...", "sub/.wh.."}));
}

// A "./" entry set the layer root's mode: 0777 made every container's "/" writable to all, and
// the store's directory with it (issue 37, item 5).
TEST(ExtractLayer, TheRootEntryCannotSetTheRootsModeOrOwner) {
  TempTree t;
  fs::create_directory(t.path / "out");
  ASSERT_EQ(::chmod((t.path / "out").c_str(), 0755), 0);
  TarEntry root = node("./", AE_IFDIR, 0);
  root.perm = 07777;
  write_tar(t.path / "root.tar", {root, file("f", "x")});
  extract_layer((t.path / "root.tar").string(), (t.path / "out").string(), {});
  struct stat st {};
  ASSERT_EQ(::stat((t.path / "out").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// A tar with one sparse file: `data` at offset 0, then a hole up to `size`.
void write_sparse_tar(const fs::path& out, const std::string& name, la_int64_t size, const std::string& data) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK);
  archive_entry* e = archive_entry_new();
  archive_entry_copy_pathname(e, name.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, size);
  archive_entry_sparse_add_entry(e, 0, static_cast<la_int64_t>(data.size()));
  ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK);
  archive_write_data(a, data.data(), data.size());
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
}

// The hole at the end of a sparse file is part of it (issue 37, item 9: it was cut off).
TEST(ExtractLayer, ASparseFileEndingInAHoleKeepsItsSize) {
  TempTree t;
  write_sparse_tar(t.path / "sparse.tar", "sparse", 1 << 20, "abc");
  fs::create_directory(t.path / "out");
  ExtractStats stats = extract_layer((t.path / "sparse.tar").string(), (t.path / "out").string(), {});
  EXPECT_TRUE(stats.rejected.empty());
  EXPECT_EQ(fs::file_size(t.path / "out/sparse"), 1u << 20);
  EXPECT_EQ(read_text(t.path / "out/sparse").substr(0, 4), std::string("abc\0", 4));
}

// A 10 KB tar declaring a 4 GiB sparse file, or any archive unpacking to far more than it
// weighs (a gzip bomb), is refused (issue 37, item 8): 200 times its size, at least 1 GiB.
TEST(ExtractLayer, AnArchiveUnpackingToMoreThanItsBoundIsRefused) {
  TempTree t;
  write_sparse_tar(t.path / "sparse.tar", "huge", la_int64_t{4} << 30, "x");
  fs::create_directory(t.path / "out");
  EXPECT_THROW(extract_layer((t.path / "sparse.tar").string(), (t.path / "out").string(), {}), Error);
  write_tar(t.path / "big.tar", {file("zeros", std::string(4 << 20, '\0'))});
  fs::create_directory(t.path / "out2");
  ExtractOptions bounded{.whiteouts = WhiteoutHandling::Overlay, .preserve_owner = false, .opaque_xattr = {},
                         .max_bytes = 1 << 20};
  EXPECT_THROW(extract_layer((t.path / "big.tar").string(), (t.path / "out2").string(), bounded), Error);
  bounded.max_bytes = 8 << 20;
  EXPECT_EQ(extract_layer((t.path / "big.tar").string(), (t.path / "out2").string(), bounded).bytes, 4u << 20);
}

}  // namespace
}  // namespace sandcell::rootfs_builder
