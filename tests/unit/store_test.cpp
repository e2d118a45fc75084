// The OCI layout store, image model and names, without root.
#include "sandcell/rootfs_builder/store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <sstream>
#include <thread>

#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/image_spec.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/error.hpp"
#include "temp_tree.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

using test::TempTree;

using test::read_text;

// A one-layer image built from a small upper dir, tagged `name`.
std::string add_image(ImageStore& store, const fs::path& scratch, const std::string& name,
                      const std::string& text) {
  fs::create_directories(scratch / "up");
  std::ofstream(scratch / "up" / "hello.txt") << text;
  std::string tmp = store.tmp_dir() + "/layer.tgz";
  LayerDigests d = write_layer_from_upper((scratch / "up").string(), tmp, {.mtime_clamp = 0});
  std::string digest = store.put_blob_file(tmp, d.digest);
  ImageConfig config;
  config.created = "2024-01-01T00:00:00Z";
  config.config.cmd = std::vector<std::string>{"/bin/sh"};
  config.diff_ids = {d.diff_id};
  config.history = {{.created = config.created,
                     .created_by = "test",
                     .author = {},
                     .comment = {},
                     .empty_layer = false}};
  return store.put_image(name, config,
                         {{.media_type = std::string(media_type::kOciLayerGzip),
                           .digest = digest,
                           .size = d.size,
                           .annotations = {}}});
}

TEST(Digest, Sha256OfKnownInputAndValidation) {
  EXPECT_EQ(sha256_digest("abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_TRUE(is_valid_digest(sha256_digest("")));
  EXPECT_FALSE(is_valid_digest("sha256:ABC"));
  EXPECT_FALSE(is_valid_digest("sha512:" + std::string(64, 'a')));
  EXPECT_FALSE(is_valid_digest("sha256:" + std::string(63, 'a') + "/"));
  EXPECT_THROW(digest_hex("sha256:../../etc/passwd"), Error);
}

TEST(ImageReference, ParsesLocalNamesWithDefaultTag) {
  EXPECT_EQ(parse_reference("debian:bookworm-slim").str(), "debian:bookworm-slim");
  EXPECT_EQ(parse_reference("busybox").str(), "busybox:latest");
  EXPECT_EQ(parse_reference("localhost/foo:1").str(), "localhost/foo:1");
  EXPECT_EQ(parse_reference("localhost:5000/a/b").str(), "localhost:5000/a/b:latest");
  std::string d = sha256_digest("x");
  EXPECT_EQ(parse_reference("foo@" + d).digest, d);
  for (const char* bad :
       {"", "Foo", "foo:", "foo:-x", "foo/../bar", "/foo", "foo@sha256:12", "a//b"})
    EXPECT_THROW(parse_reference(bad), Error) << bad;
}

// parse_reference checks names without std::regex (image_reference.cpp): here the grammar's own
// expressions (distribution/reference, as docker applies them) are the oracle, on names drawn
// from the characters that matter, many of them near-misses.
TEST(ImageReference, AcceptsExactlyWhatTheGrammarsExpressionsAccept) {
  const std::regex component(R"([a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)");
  const std::regex domain(
      R"((?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]+)?)");
  const std::regex tag(R"([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})");
  const auto grammar_accepts = [&](const std::string& text) {
    std::string name = text, tag_part;
    if (auto colon = name.rfind(':'), slash = name.rfind('/');
        colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
      tag_part = name.substr(colon + 1);
      name.resize(colon);
      if (!std::regex_match(tag_part, tag)) return false;
    }
    if (name.empty() || name.size() > 255) return false;
    std::size_t start = 0;
    if (auto slash = name.find('/'); slash != std::string::npos) {
      std::string first = name.substr(0, slash);
      if (first.find_first_of(".:") != std::string::npos || first == "localhost") {
        if (!std::regex_match(first, domain)) return false;
        start = slash + 1;
      }
    }
    while (start <= name.size()) {
      auto end = name.find('/', start);
      if (end == std::string::npos) end = name.size();
      if (!std::regex_match(name.substr(start, end - start), component)) return false;
      start = end + 1;
    }
    return true;
  };
  const std::string alphabet = "ab0Z._-__--:/:9.";
  std::mt19937 random(15);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    const int length = 1 + static_cast<int>(random() % 14);
    for (int j = 0; j < length; ++j) text.push_back(alphabet[random() % alphabet.size()]);
    bool parsed = true;
    try {
      parse_reference(text);
    } catch (const Error&) {
      parsed = false;
    }
    ASSERT_EQ(parsed, grammar_accepts(text)) << "'" << text << "'";
    accepted += parsed;
  }
  EXPECT_GT(accepted, 500) << "the sample should hold many valid names too";
  for (const std::string& edge :
       {std::string(255, 'a'), std::string(256, 'a'), "a:" + std::string(128, 't'),
        "a:" + std::string(129, 't'), std::string("host.example:5000/a__b--c.d_e:_T.-"),
        std::string("a___b"), std::string("a.-b"), std::string("-a")}) {
    bool parsed = true;
    try {
      parse_reference(edge);
    } catch (const Error&) {
      parsed = false;
    }
    EXPECT_EQ(parsed, grammar_accepts(edge)) << edge;
  }
}

TEST(ImageConfigJson, IsCanonicalAndRoundTrips) {
  ImageConfig c;
  c.created = "2024-01-01T00:00:00Z";
  c.config.env = {"PATH=/bin"};
  c.config.entrypoint = std::vector<std::string>{"/entry"};
  c.config.cmd = std::vector<std::string>{};
  c.config.working_dir = "/w";
  c.config.user = "1000:1000";
  c.config.labels = {{"b", "2"}, {"a", "1"}};
  c.config.exposed_ports = {"80/tcp"};
  c.config.volumes = {"/data"};
  c.config.stop_signal = "SIGTERM";
  c.config.healthcheck = Healthcheck{.test = {"CMD", "true"},
                                     .interval_ns = 1000,
                                     .timeout_ns = 0,
                                     .start_period_ns = 0,
                                     .retries = 3};
  c.diff_ids = {sha256_digest("layer")};
  c.history = {{.created = c.created,
                .created_by = "RUN x",
                .author = {},
                .comment = {},
                .empty_layer = true}};
  std::string json = config_to_json(c);
  EXPECT_EQ(json, nlohmann::json::parse(json).dump()) << "keys sorted, no whitespace";
  EXPECT_NE(json.find(R"("ExposedPorts":{"80/tcp":{}})"), std::string::npos);
  EXPECT_NE(json.find(R"("Cmd":[])"), std::string::npos) << "an empty Cmd is not a missing Cmd";
  EXPECT_NE(json.find(R"("rootfs":{"diff_ids":[")"), std::string::npos);
  ImageConfig back = config_from_json(json);
  EXPECT_EQ(config_to_json(back), json);
  EXPECT_EQ(back.config.labels.at("a"), "1");
  EXPECT_TRUE(back.history[0].empty_layer);
}

TEST(ImageConfigJson, DockerNullsAreAccepted) {
  ImageConfig c = config_from_json(
      R"({"architecture":"amd64","os":"linux","config":{"Cmd":null,"Env":null,"Entrypoint":null,"Labels":null},"rootfs":{"type":"layers","diff_ids":[]}})");
  EXPECT_FALSE(c.config.cmd.has_value());
  EXPECT_TRUE(c.config.env.empty());
}

TEST(ImageTimestamp, FollowsSourceDateEpoch) {
  ::setenv("SOURCE_DATE_EPOCH", "1000", 1);
  EXPECT_EQ(image_timestamp(), "1970-01-01T00:16:40Z");
  ::setenv("SOURCE_DATE_EPOCH", "soon", 1);
  EXPECT_THROW(image_timestamp(), Error);
  ::unsetenv("SOURCE_DATE_EPOCH");
}

TEST(ManifestJson, ParsesDockerSchema2AndRejectsOtherSchemas) {
  std::string d = sha256_digest("c");
  Manifest m = manifest_from_json(
      R"({"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",)"
      R"("config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":7,"digest":")" +
      d +
      R"("},"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":9,"digest":")" +
      d + R"("}]})");
  EXPECT_EQ(m.media_type, media_type::kDockerManifest);
  EXPECT_EQ(m.layers.at(0).size, 9);
  EXPECT_THROW(manifest_from_json(R"({"schemaVersion":1})"), Error);
  EXPECT_THROW(
      manifest_from_json(R"({"schemaVersion":2,"config":{"digest":"md5:x","size":1},"layers":[]})"),
      Error);
}

TEST(ImageStore, CreatesAnOciLayout) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  EXPECT_EQ(read_text(t.path / "root/oci-layout"), R"({"imageLayoutVersion":"1.0.0"})");
  auto index = nlohmann::json::parse(read_text(t.path / "root/index.json"));
  EXPECT_EQ(index["schemaVersion"], 2);
  EXPECT_TRUE(index["manifests"].empty());
  EXPECT_TRUE(fs::is_directory(t.path / "root/blobs/sha256"));
}

TEST(ImageStore, PutBlobRejectsAWrongDigestAndLeavesNothingBehind) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  EXPECT_THROW(store.put_blob("data", sha256_digest("other")), Error);
  std::ofstream(t.path / "f") << "file";
  EXPECT_THROW(store.put_blob_file((t.path / "f").string(), sha256_digest("other")), Error);
  EXPECT_TRUE(fs::is_empty(t.path / "root/blobs/sha256"));
  EXPECT_TRUE(fs::is_empty(t.path / "root/tmp"));
  std::string d = store.put_blob_file((t.path / "f").string());
  EXPECT_EQ(d, sha256_digest("file"));
  EXPECT_EQ(store.read_blob(d), "file");
  EXPECT_TRUE(fs::exists(t.path / "f")) << "files outside tmp are copied, not moved";
}

TEST(ImageStore, TagsResolveListAndIndexCarriesRefNames) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  std::string manifest = add_image(store, t.path, "foo:1", "hi");
  ImageRecord r = store.resolve("foo:1");
  EXPECT_EQ(r.manifest_digest, manifest);
  EXPECT_EQ(r.manifest.media_type, media_type::kOciManifest);
  EXPECT_EQ(r.manifest.config.media_type, media_type::kOciConfig);
  EXPECT_EQ(r.manifest.layers.at(0).media_type, media_type::kOciLayerGzip);
  store.tag("foo:1", "bar");
  EXPECT_EQ(store.resolve("bar:latest").manifest_digest, manifest);
  EXPECT_EQ(store.resolve(r.manifest.config.digest.substr(7, 12)).manifest_digest, manifest);
  EXPECT_EQ(store.resolve(manifest).manifest_digest, manifest);
  auto index = nlohmann::json::parse(read_text(t.path / "root/index.json"));
  ASSERT_EQ(index["manifests"].size(), 2u);
  EXPECT_EQ(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"],
            "bar:latest");
  EXPECT_EQ(index["manifests"][1]["annotations"]["org.opencontainers.image.ref.name"], "foo:1");
  auto images = store.list();
  ASSERT_EQ(images.size(), 2u);
  EXPECT_EQ(images[1].name, "foo:1");
  EXPECT_GT(images[1].size, 0);
  EXPECT_THROW(store.resolve("nope"), Error);
}

TEST(ImageStore, PruneKeepsTaggedAndRemovesUntagged) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  std::string manifest = add_image(store, t.path, "foo:1", "hi");
  store.tag("foo:1", "bar");
  ImageRecord r = store.resolve("foo:1");
  store.unpacked_layers(r);
  store.put_blob("orphan");
  store.remove("foo:1");
  EXPECT_THROW(store.remove("foo:1"), Error);
  PruneStats first = store.prune();
  EXPECT_EQ(first.blobs_removed, 1u);
  EXPECT_EQ(first.layers_removed, 0u);
  EXPECT_TRUE(store.has_blob(manifest));
  store.remove("bar");
  PruneStats second = store.prune();
  EXPECT_EQ(second.blobs_removed, 3u);
  EXPECT_EQ(second.layers_removed, 1u);
  EXPECT_GT(second.bytes_freed, 0u);
  EXPECT_TRUE(fs::is_empty(t.path / "root/blobs/sha256"));
}

TEST(ImageStore, ParallelTaggingLosesNoTag) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  std::string manifest = add_image(store, t.path, "base", "x");
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&, i] {
      ImageStore own((t.path / "root").string());  // as another process would
      for (int j = 0; j < 5; ++j)
        own.set_tag("img" + std::to_string(i) + ":" + std::to_string(j), manifest);
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(store.list().size(), 41u);
}

TEST(ImageStore, UnpacksALayerOnceAndReusesIt) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  add_image(store, t.path, "foo", "unpacked");
  ImageRecord r = store.resolve("foo");
  auto dirs = store.unpacked_layers(r);
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs[0], store.root() + "/layers/" + digest_hex(r.config.diff_ids[0]));
  EXPECT_EQ(read_text(fs::path(dirs[0]) / "hello.txt"), "unpacked");
  fs::remove(fs::path(dirs[0]) / "hello.txt");  // a second call must not unpack again
  EXPECT_EQ(store.unpacked_layers(r), dirs);
  EXPECT_FALSE(fs::exists(fs::path(dirs[0]) / "hello.txt"));
}

// A manifest listing layer B twice with the DiffIDs [diffid(B), diffid(genuine base)] made the
// store unpack B under the genuine base's DiffID, and the genuine image ran B's files (issue
// 37, item 4): a layer directory is only ever made from a blob that is its DiffID.
TEST(ImageStore, ALayerIsNeverUnpackedUnderAnotherLayersDiffId) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  add_image(store, t.path / "genuine", "genuine", "genuine base");
  add_image(store, t.path / "attacker", "attacker", "attacker's file");
  ImageRecord genuine = store.resolve("genuine");
  ImageRecord attacker = store.resolve("attacker");
  ImageRecord poisoned = attacker;
  poisoned.manifest.layers = {attacker.manifest.layers[0], attacker.manifest.layers[0]};
  poisoned.config.diff_ids = {attacker.config.diff_ids[0], genuine.config.diff_ids[0]};
  EXPECT_THROW(store.unpacked_layers(poisoned), Error);
  EXPECT_FALSE(fs::exists(store.root() + "/layers/" + digest_hex(genuine.config.diff_ids[0])));
  auto dirs = store.unpacked_layers(genuine);
  EXPECT_EQ(read_text(fs::path(dirs[0]) / "hello.txt"), "genuine base");
}

// Unpacked layers keep what the image says (setuid root programs, world-writable
// directories): only the store's owner may reach them (issue 37, item 5).
TEST(ImageStore, LayersAndScratchAreReachableByTheOwnerOnly) {
  TempTree t;
  fs::create_directories(t.path / "old/layers");
  fs::create_directories(t.path / "old/tmp");
  fs::permissions(t.path / "old/layers", fs::perms(0755));
  fs::permissions(t.path / "old/tmp", fs::perms(0777));
  ImageStore fresh((t.path / "root").string());
  ImageStore old((t.path / "old").string());
  auto mode = [](const fs::path& p) { return static_cast<unsigned>(fs::symlink_status(p).permissions()); };
  EXPECT_EQ(mode(t.path / "root"), 0700u);
  EXPECT_EQ(mode(t.path / "root/layers"), 0700u);
  EXPECT_EQ(mode(t.path / "root/tmp"), 0700u);
  EXPECT_EQ(mode(t.path / "old/layers"), 0700u) << "a store made before is tightened";
  EXPECT_EQ(mode(t.path / "old/tmp"), 0700u);
}

// 100k Env entries cost seconds of CPU before the sandbox started (a quadratic merge), and an
// entry without '=' erased every entry before it (issue 37, item 8).
TEST(ImageStore, ImageEnvMergesInLinearTimeAndLaterEntriesWin) {
  TempTree t;
  ImageStore store((t.path / "root").string());
  add_image(store, t.path, "foo", "x");
  ImageRecord record = store.resolve("foo");
  std::vector<std::string> env = {"PATH=/img", "A=1", "NOEQ", "A=2"};
  for (int i = 0; i < 200'000; ++i) env.push_back("E" + std::to_string(i) + "=v");
  record.config.config.env = env;
  runtime::Spec spec;
  spec.env = {"KEEP=1", "PATH=/default"};
  auto start = std::chrono::steady_clock::now();
  apply_resolved_image(store, "foo", record, {.command = {"/bin/sh"}, .user = {}, .workdir = {}}, spec);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_GE(spec.env.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(spec.env.begin(), spec.env.begin() + 4),
            (std::vector<std::string>{"KEEP=1", "PATH=/img", "NOEQ", "A=2"}));
  EXPECT_EQ(std::count(spec.env.begin(), spec.env.end(), "E199999=v"), 1);
}

TEST(ImageStore, SameRecipeGivesTheSameImageDigestUnderSourceDateEpoch) {
  ::setenv("SOURCE_DATE_EPOCH", "1700000000", 1);
  std::vector<std::string> digests;
  for (int run = 0; run < 2; ++run) {
    TempTree t;
    ImageStore store((t.path / "root").string());
    fs::create_directories(t.path / "up/app");
    std::ofstream(t.path / "up/app/main.py") << "print(1)\n";
    std::string tmp = store.tmp_dir() + "/l.tgz";
    LayerDigests d =
        write_layer_from_upper((t.path / "up").string(), tmp, {.mtime_clamp = source_date_epoch()});
    ImageConfig config;
    config.created = image_timestamp();
    config.diff_ids = {d.diff_id};
    config.config.cmd = std::vector<std::string>{"python3", "/app/main.py"};
    digests.push_back(store.put_image("app", config,
                                      {{.media_type = std::string(media_type::kOciLayerGzip),
                                        .digest = store.put_blob_file(tmp, d.digest),
                                        .size = d.size,
                                        .annotations = {}}}));
    if (run == 0) ::sleep(1);  // mtimes differ between the runs
  }
  ::unsetenv("SOURCE_DATE_EPOCH");
  EXPECT_EQ(digests[0], digests[1]);
}

}  // namespace
}  // namespace sandcell::rootfs_builder
