// The image store on a small filesystem (issue 32, item 5): a 48 MiB ext4 image the test
// loop-mounts as the store. Imports, loads, builds and pulls check the free space before they
// write and fail cleanly when the disk fills half-way: no temporary left, no blob the index does
// not reference, the index as before, and the store still works afterwards. Pulls come from
// Debian's docker-registry on loopback, through a proxy that can pause a layer half-way.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "disk_probes.hpp"
#include "registry_servers.hpp"
#include "sandcell_cli.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1 << 20;

class StoreOnASmallDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    image_ = (tree_.path / "store.img").string();
    ASSERT_EQ(shell_output("truncate -s 48M " + image_ + " && mke2fs -q -F -t ext4 -m 0 " + image_ +
                           " 2>&1"),
              "");
    fs::create_directories(store_);
    ASSERT_EQ(shell_output("mount -o loop " + image_ + " " + store_.string() + " 2>&1"), "");
    mounted_ = true;
  }
  void TearDown() override {
    if (mounted_) {
      EXPECT_EQ(shell_output("umount " + store_.string() + " 2>&1"), "");
    }
    // A build's RUN sandbox had the store's layers in its mount namespace, which the kernel
    // tears down just after the sandbox ends: the loop device detaches then.
    std::vector<std::string> loops = loops_left_under(tree_.path.string());
    EXPECT_EQ(loops, std::vector<std::string>{}) << loop_holders(loops);
  }
  CliRun sandcell(std::vector<std::string> args) {
    args.insert(args.begin(), {"--root", store_.string()});
    return run_sandcell(args);
  }
  // A tar of one file of `bytes` bytes from `source` (a shell command's output).
  std::string make_tar(const std::string& name, const std::string& source, uint64_t bytes,
                       bool gzip = false) {
    const fs::path dir = tree_.path / (name + ".d");
    fs::create_directories(dir);
    EXPECT_EQ(shell_output(source + " | head -c " + std::to_string(bytes) + " > " +
                           (dir / "data").string()),
              "");
    const std::string tar = (tree_.path / name).string();
    EXPECT_EQ(
        shell_output("tar -C " + dir.string() + (gzip ? " -czf " : " -cf ") + tar + " data 2>&1"),
        "");
    fs::remove_all(dir);
    return tar;
  }
  // An image in a second store on the host's disk, one layer per file of `mib` MiB of random
  // bytes (FROM scratch, a COPY each), pushed to `registry` as test/NAME:1; returns the reference.
  std::string pushed(const LocalRegistry& registry, const std::string& name, const std::vector<uint64_t>& mib) {
    const fs::path ctx = tree_.path / ("ctx-" + name);
    fs::create_directories(ctx);
    std::string dockerfile = "FROM scratch\n";
    for (size_t i = 0; i < mib.size(); ++i) {
      const std::string file = "part" + std::to_string(i);
      EXPECT_EQ(shell_output("head -c " + std::to_string(mib[i] * kMiB) + " /dev/urandom > " + (ctx / file).string()),
                "");
      dockerfile += "COPY " + file + " /" + file + "\n";
    }
    std::ofstream(ctx / "Dockerfile") << dockerfile;
    const std::string source = (tree_.path / "source").string();
    CliRun built = run_sandcell({"--root", source, "build", "-q", "-t", name + ":1", ctx.string()});
    EXPECT_EQ(built.exit_code, 0) << built.err;
    const std::string ref = registry.address() + "/test/" + name + ":1";
    CliRun push = run_sandcell({"--root", source, "push", name + ":1", ref});
    EXPECT_EQ(push.exit_code, 0) << push.err;
    fs::remove_all(ctx);
    return ref;
  }
  // Every blob in the store hashes to its name: nothing half-written was put there.
  void expect_blobs_whole() {
    for (const auto& blob : fs::directory_iterator(store_ / "blobs/sha256")) {
      std::string sum = shell_output("sha256sum " + blob.path().string());
      EXPECT_EQ(sum.substr(0, 64), blob.path().filename().string());
    }
  }
  size_t entries(const std::string& sub) const {
    std::error_code ec;
    size_t n = 0;
    for (auto it = fs::directory_iterator(store_ / sub, ec); it != fs::directory_iterator(); ++it)
      ++n;
    return n;
  }
  TempTree tree_{"sc-hostile-store"};
  std::string image_;
  fs::path store_ = tree_.path / "store";
  bool mounted_ = false;
};

TEST_F(StoreOnASmallDisk, AnImportLargerThanTheFreeSpaceIsRefusedBeforeWriting) {
  CliRun small =
      sandcell({"import", make_tar("small.tar", "head -c 1M /dev/urandom", kMiB), "small:1"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const std::string index = read_text(store_ / "index.json");
  const size_t blobs = entries("blobs/sha256");
  const uint64_t before = free_bytes(store_.string());
  CliRun big =
      sandcell({"import", make_tar("big.tar", "head -c 64M /dev/urandom", 64 * kMiB), "big:1"});
  EXPECT_NE(big.exit_code, 0);
  EXPECT_NE(big.err.find("needs 67"), std::string::npos) << big.err;
  EXPECT_NE(big.err.find("free"), std::string::npos) << big.err;
  EXPECT_EQ(read_text(store_ / "index.json"), index);
  EXPECT_EQ(entries("blobs/sha256"), blobs);
  EXPECT_EQ(entries("tmp"), 0u);
  EXPECT_GE(free_bytes(store_.string()) + kMiB, before) << "nothing was written";
  CliRun listed = sandcell({"images"});
  EXPECT_NE(listed.out.find("small"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("big"), std::string::npos) << listed.out;
}

TEST_F(StoreOnASmallDisk, ALoadThatFillsTheDiskHalfWayLeavesNothingBehind) {
  ASSERT_EQ(sandcell({"import", make_tar("small.tar", "head -c 1M /dev/urandom", kMiB), "small:1"})
                .exit_code,
            0);
  const std::string index = read_text(store_ / "index.json");
  const size_t blobs = entries("blobs/sha256");
  const uint64_t before = free_bytes(store_.string());
  // 100 MiB of text, gzipped to well under 1 MiB: the free-space check passes, the unpacking fills.
  const std::string archive = make_tar("expands.tar.gz", "yes sandcell", 100 * kMiB, true);
  ASSERT_LT(fs::file_size(archive), kMiB);
  CliRun load = sandcell({"load", "-i", archive});
  EXPECT_NE(load.exit_code, 0);
  EXPECT_NE(load.err.find("No space left on device"), std::string::npos) << load.err;
  EXPECT_EQ(read_text(store_ / "index.json"), index);
  EXPECT_EQ(entries("blobs/sha256"), blobs);
  EXPECT_EQ(entries("tmp"), 0u) << "the half-unpacked archive stays behind";
  EXPECT_GE(free_bytes(store_.string()) + kMiB, before);
  CliRun run =
      sandcell({"import", make_tar("after.tar", "head -c 1M /dev/urandom", kMiB), "after:1"});
  EXPECT_EQ(run.exit_code, 0) << "the store still works: " << run.err;
}

// A build whose step writes a layer the store cannot hold fails before writing it: no tag, no
// temporary left, the index as before, and the store still works.
TEST_F(StoreOnASmallDisk, ABuildWhoseLayerDoesNotFitFailsBeforeWritingIt) {
  const fs::path ctx = tree_.path / "ctx";
  fs::create_directories(ctx);
  fs::copy_file(test_rootfs() + "/bin/busybox", ctx / "busybox");
  std::ofstream(ctx / "Dockerfile")
      << "FROM scratch\nCOPY busybox /bin/busybox\n"
         "RUN [\"/bin/busybox\", \"dd\", \"if=/dev/urandom\", \"of=/big\", \"bs=1M\", \"count=60\"]\n";
  ASSERT_EQ(sandcell({"import", make_tar("small.tar", "head -c 1M /dev/urandom", kMiB), "small:1"})
                .exit_code,
            0);
  const std::string index = read_text(store_ / "index.json");
  CliRun built = sandcell({"build", "-q", "-t", "big:1", ctx.string()});
  EXPECT_NE(built.exit_code, 0) << built.out;
  EXPECT_NE(built.err.find("the step's layer needs 62914560 bytes"), std::string::npos) << built.err;
  EXPECT_EQ(read_text(store_ / "index.json"), index);
  EXPECT_EQ(entries("tmp"), 0u);
  EXPECT_EQ(sandcell({"images"}).out.find("big"), std::string::npos);
  CliRun after =
      sandcell({"import", make_tar("after.tar", "head -c 1M /dev/urandom", kMiB), "after:1"});
  EXPECT_EQ(after.exit_code, 0) << "the store still works: " << after.err;
}

// Two layers that each fit but together do not: refused before the first byte is fetched (they
// would arrive in parallel and fill the disk between them), nothing written, the store works.
TEST_F(StoreOnASmallDisk, APullLargerThanTheFreeSpaceIsRefusedBeforeDownloading) {
  LocalRegistry registry(tree_.path / "registry", LocalRegistry::Auth::None);
  const std::string big = pushed(registry, "two-layers", {24, 24});
  const std::string small = pushed(registry, "small", {1});
  ASSERT_GT(free_bytes(store_.string()), 30 * kMiB) << "each layer alone would fit";
  ASSERT_LT(free_bytes(store_.string()), 48 * kMiB);
  ASSERT_EQ(sandcell({"import", make_tar("small.tar", "head -c 1M /dev/urandom", kMiB), "local:1"}).exit_code, 0);
  const std::string index = read_text(store_ / "index.json");
  const size_t blobs = entries("blobs/sha256");
  const uint64_t before = free_bytes(store_.string());
  CliRun pull = sandcell({"pull", big});
  EXPECT_NE(pull.exit_code, 0);
  EXPECT_NE(pull.err.find("pulling " + big + " needs 50"), std::string::npos) << pull.err;
  EXPECT_NE(pull.err.find("free"), std::string::npos) << pull.err;
  EXPECT_EQ(read_text(store_ / "index.json"), index);
  EXPECT_EQ(entries("blobs/sha256"), blobs) << "not even the config blob";
  EXPECT_EQ(entries("tmp"), 0u);
  EXPECT_GE(free_bytes(store_.string()) + kMiB, before) << "nothing was written";
  CliRun after = sandcell({"pull", small});
  EXPECT_EQ(after.exit_code, 0) << "the store still works: " << after.err;
  expect_blobs_whole();
}

// The disk fills while a layer arrives (the test takes the free space once half of it is sent):
// the pull fails with ENOSPC, the partial blob is gone, nothing else was stored, and once the
// space is back the same pull succeeds.
TEST_F(StoreOnASmallDisk, APullThatFillsTheDiskHalfWayLeavesNothingBehind) {
  LocalRegistry registry(tree_.path / "registry", LocalRegistry::Auth::None);
  TamperingProxy proxy(registry.address(), TamperingProxy::Mode::PauseBlobHalfway);
  pushed(registry, "layer", {16});
  ASSERT_EQ(sandcell({"import", make_tar("small.tar", "head -c 1M /dev/urandom", kMiB), "local:1"}).exit_code, 0);
  const std::string index = read_text(store_ / "index.json");
  const size_t blobs = entries("blobs/sha256");
  const uint64_t before = free_bytes(store_.string());
  auto pull = std::async(std::launch::async, [&] { return sandcell({"pull", proxy.address() + "/test/layer:1"}); });
  for (int i = 0; i < 600 && proxy.halfway() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(proxy.halfway(), 1);
  // The pull may still be writing what it received before the pause while the free space is
  // read (under load it lags): a filler sized to that reading can then find less room. Each
  // try leaves a little more free, always well under the 8 MiB the layer still has to send.
  const fs::path filler = store_ / "filler";
  std::string filled = "not tried";
  for (uint64_t margin = 2; margin <= 5 && !filled.empty(); ++margin) {
    if (margin > 2) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const uint64_t take = free_bytes(store_.string()) - margin * kMiB;
    filled = shell_output("fallocate -l " + std::to_string(take) + " " + filler.string() + " 2>&1");
  }
  EXPECT_EQ(filled, "");
  proxy.release();
  CliRun failed = pull.get();
  EXPECT_NE(failed.exit_code, 0);
  EXPECT_NE(failed.err.find("No space left on device"), std::string::npos) << failed.err;
  EXPECT_EQ(read_text(store_ / "index.json"), index);
  EXPECT_EQ(entries("blobs/sha256"), blobs + 1) << "the config blob (whole, unreferenced until gc)";
  EXPECT_EQ(entries("tmp"), 0u) << "the partial layer stays behind";
  expect_blobs_whole();
  fs::remove(filler);
  EXPECT_GE(free_bytes(store_.string()) + kMiB, before);
  CliRun again = sandcell({"pull", registry.address() + "/test/layer:1"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(sandcell({"images"}).out.find("test/layer"), std::string::npos);
  expect_blobs_whole();
}

}  // namespace
}  // namespace sandcell::test
