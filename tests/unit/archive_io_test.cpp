// save / load / import, without root: docker-archive (legacy and Docker 25+), oci-archive.
#include "sandcell/rootfs_builder/archive_io.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/error.hpp"
#include "temp_tree.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

using test::TempTree;

using test::read_text;

// A plain tar of {name: content}, entries in the given order.
void write_tar(const fs::path& out, const std::vector<std::pair<std::string, std::string>>& files) {
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, out.c_str()), ARCHIVE_OK);
  for (const auto& [name, data] : files) {
    archive_entry* e = archive_entry_new();
    archive_entry_copy_pathname(e, name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(data.size()));
    archive_write_header(a, e);
    archive_write_data(a, data.data(), data.size());
    archive_entry_free(e);
  }
  archive_write_close(a);
  archive_write_free(a);
}

std::set<std::string> tar_names(const fs::path& path) {
  std::set<std::string> names;
  archive* a = archive_read_new();
  archive_read_support_format_tar(a);
  archive_read_open_filename(a, path.c_str(), 10240);
  archive_entry* e = nullptr;
  while (archive_read_next_header(a, &e) == ARCHIVE_OK) names.insert(archive_entry_pathname(e));
  archive_read_free(a);
  return names;
}

class ArchiveIo : public ::testing::Test {
 protected:
  TempTree t;
  ImageStore a{(t.path / "a").string()};
  ImageStore b{(t.path / "b").string()};

  void SetUp() override {
    write_tar(t.path / "rootfs.tar", {{"bin/sh", "#!shell"}, {"etc/os-release", "ID=test\n"}});
    import_rootfs(a, (t.path / "rootfs.tar").string(), "localhost/base:1");
  }
};

TEST_F(ArchiveIo, ImportMakesASingleGzipLayerImage) {
  ImageRecord r = a.resolve("localhost/base:1");
  ASSERT_EQ(r.manifest.layers.size(), 1u);
  EXPECT_EQ(r.config.diff_ids.at(0), sha256_file_digest((t.path / "rootfs.tar").string()));
  EXPECT_TRUE(is_gzip_file(a.blob_path(r.manifest.layers[0].digest)));
  EXPECT_EQ(r.config.os, "linux");
  EXPECT_EQ(r.config.architecture, host_architecture());
}

TEST_F(ArchiveIo, OciArchiveRoundTripKeepsTheManifestDigest) {
  save_images(a, {"localhost/base:1"}, (t.path / "out.tar").string(), ArchiveFormat::OciArchive);
  auto names = tar_names(t.path / "out.tar");
  EXPECT_TRUE(names.contains("oci-layout"));
  EXPECT_TRUE(names.contains("index.json"));
  EXPECT_EQ(load_images(b, (t.path / "out.tar").string()),
            std::vector<std::string>{"localhost/base:1"});
  EXPECT_EQ(b.resolve("localhost/base:1").manifest_digest,
            a.resolve("localhost/base:1").manifest_digest);
}

TEST_F(ArchiveIo, DockerArchiveHasTheDocker25LayoutAndRoundTrips) {
  a.tag("localhost/base:1", "base:2");
  save_images(a, {"localhost/base:1", "base:2"}, (t.path / "d.tar").string(),
              ArchiveFormat::DockerArchive);
  fs::create_directory(t.path / "x");
  extract_layer((t.path / "d.tar").string(), (t.path / "x").string(),
                {.whiteouts = WhiteoutHandling::Keep, .preserve_owner = false, .opaque_xattr = {}, .max_bytes = {}});
  auto manifest = nlohmann::json::parse(read_text(t.path / "x/manifest.json"));
  ASSERT_EQ(manifest.size(), 1u) << "one item per image, with all its tags";
  EXPECT_EQ(manifest[0]["RepoTags"], nlohmann::json({"localhost/base:1", "base:2"}));
  ImageRecord r = a.resolve("base:2");
  EXPECT_EQ(manifest[0]["Config"], "blobs/sha256/" + digest_hex(r.manifest.config.digest));
  std::string layer = manifest[0]["Layers"][0];
  EXPECT_EQ(sha256_file_digest((t.path / "x" / layer).string()), r.config.diff_ids[0])
      << "layers are uncompressed";
  auto index = nlohmann::json::parse(read_text(t.path / "x/index.json"));
  EXPECT_EQ(index["manifests"][1]["annotations"]["io.containerd.image.name"],
            "docker.io/library/base:2");
  EXPECT_EQ(read_text(t.path / "x/oci-layout"), R"({"imageLayoutVersion":"1.0.0"})");
  auto loaded = load_images(b, (t.path / "d.tar").string());
  EXPECT_EQ(loaded, (std::vector<std::string>{"localhost/base:1", "base:2"}));
  ImageRecord back = b.resolve("base:2");
  EXPECT_EQ(back.manifest.config.digest, r.manifest.config.digest) << "the image ID survives";
  EXPECT_EQ(back.manifest_digest, r.manifest_digest) << "deterministic recompression";
}

TEST_F(ArchiveIo, SavingTwiceGivesTheSameBytes) {
  for (auto format : {ArchiveFormat::DockerArchive, ArchiveFormat::OciArchive}) {
    save_images(a, {"localhost/base:1"}, (t.path / "1.tar").string(), format);
    save_images(a, {"localhost/base:1"}, (t.path / "2.tar").string(), format);
    EXPECT_EQ(sha256_file_digest((t.path / "1.tar").string()),
              sha256_file_digest((t.path / "2.tar").string()));
  }
}

TEST_F(ArchiveIo, LoadsLegacyDockerSaveGzipped) {
  std::string layer_tar = read_text(t.path / "rootfs.tar");
  std::string config =
      R"({"architecture":"amd64","os":"linux","config":{"Cmd":["/bin/sh"]},"rootfs":{"type":"layers","diff_ids":[")" +
      sha256_digest(layer_tar) + R"("]}})";
  std::string config_name = digest_hex(sha256_digest(config)) + ".json";
  std::string manifest =
      R"([{"Config":")" + config_name +
      R"(","RepoTags":["docker.io/library/legacy:1"],"Layers":["abc123/layer.tar"]}])";
  write_tar(t.path / "legacy.tar", {{"abc123/VERSION", "1.0"},
                                    {"abc123/layer.tar", layer_tar},
                                    {config_name, config},
                                    {"manifest.json", manifest},
                                    {"repositories", R"({"legacy":{"1":"abc123"}})"}});
  gzip_layer((t.path / "legacy.tar").string(), (t.path / "legacy.tar.gz").string());
  EXPECT_EQ(load_images(b, (t.path / "legacy.tar.gz").string()),
            std::vector<std::string>{"legacy:1"});
  ImageRecord r = b.resolve("legacy:1");
  EXPECT_EQ(r.manifest.config.digest, sha256_digest(config));
  EXPECT_EQ(r.config_json, config) << "the config is kept byte for byte";
  EXPECT_EQ(r.config.diff_ids[0], sha256_digest(layer_tar));
}

TEST_F(ArchiveIo, LoadRejectsALayerThatDoesNotMatchItsDiffId) {
  std::string config =
      R"({"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[")" +
      sha256_digest("something else") + R"("]}})";
  write_tar(t.path / "bad.tar",
            {{"l/layer.tar", read_text(t.path / "rootfs.tar")},
             {"c.json", config},
             {"manifest.json",
              R"([{"Config":"c.json","RepoTags":["bad:1"],"Layers":["l/layer.tar"]}])"}});
  EXPECT_THROW(load_images(b, (t.path / "bad.tar").string()), Error);
  EXPECT_THROW(b.resolve("bad:1"), Error);
}

// A member that is a FIFO blocked open() forever: `sandcell load` of a 10 KB archive hung
// (issue 37, item 8). It is refused as not a regular file.
TEST_F(ArchiveIo, LoadRefusesAFifoMemberWithoutHanging) {
  archive* w = archive_write_new();
  archive_write_set_format_pax_restricted(w);
  ASSERT_EQ(archive_write_open_filename(w, (t.path / "fifo.tar").c_str()), ARCHIVE_OK);
  archive_entry* e = archive_entry_new();
  archive_entry_copy_pathname(e, "manifest.json");
  archive_entry_set_filetype(e, AE_IFIFO);
  archive_entry_set_perm(e, 0644);
  archive_write_header(w, e);
  archive_entry_free(e);
  archive_write_close(w);
  archive_write_free(w);
  try {
    load_images(b, (t.path / "fifo.tar").string());
    ADD_FAILURE() << "a FIFO manifest.json was loaded";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("not a regular file"), std::string::npos) << error.what();
  }
}

TEST_F(ArchiveIo, LoadRefusesMembersOutsideTheArchive) {
  std::string config = R"({"rootfs":{"type":"layers","diff_ids":[]}})";
  write_tar(t.path / "evil.tar",
            {{"manifest.json",
              R"([{"Config":"../../../../etc/passwd","RepoTags":["e:1"],"Layers":[]}])"}});
  EXPECT_THROW(load_images(b, (t.path / "evil.tar").string()), Error);
  write_tar(t.path / "evil2.tar", {{"../escape", "x"}, {"manifest.json", "[]"}});
  EXPECT_THROW(load_images(b, (t.path / "evil2.tar").string()), Error);
  EXPECT_FALSE(fs::exists(t.path / "b/escape"));
}

TEST_F(ArchiveIo, UnknownFormatsAreRefused) {
  EXPECT_THROW(parse_archive_format("tarball"), Error);
  EXPECT_EQ(parse_archive_format("oci-archive"), ArchiveFormat::OciArchive);
  EXPECT_THROW(load_images(b, (t.path / "rootfs.tar").string()), Error);
}

}  // namespace
}  // namespace sandcell::rootfs_builder
