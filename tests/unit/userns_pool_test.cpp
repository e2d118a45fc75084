// The --userns=auto range pool: where ranges come from and how claims on them behave, on temp
// files only (no root, no kernel features).
#include "userns_pool.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

class UsernsPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sandcell-userns-pool-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }
  std::string state_root() const { return dir_ / "state"; }

  fs::path dir_;
};

TEST_F(UsernsPoolTest, WithoutASandcellEntryThePoolIsAbove2To31) {
  UsernsPool pool = userns_pool(write("subuid", "alice:100000:65536\n"), write("subgid", ""));
  EXPECT_EQ(pool.uid_start, 1u << 31);
  EXPECT_EQ(pool.gid_start, 1u << 31);
  EXPECT_EQ(pool.slots, 32767u);  // the last id of the last slot is 2^32-2, never (uid_t)-1
  EXPECT_LE(uint64_t{pool.uid_start} + uint64_t{pool.slots} * kUsernsSize - 1, 0xfffffffeull);
}

TEST_F(UsernsPoolTest, SandcellSubidEntriesAreCutIntoSlots) {
  UsernsPool pool = userns_pool(write("subuid", "alice:100000:65536\nsandcell:200000:262144\n"),
                                write("subgid", "sandcell:300000:196608\n"));
  EXPECT_EQ(pool.uid_start, 200000u);
  EXPECT_EQ(pool.gid_start, 300000u);
  EXPECT_EQ(pool.slots, 3u);  // the smaller of the two ranges
}

TEST_F(UsernsPoolTest, UnusableSandcellEntriesAreRefused) {
  EXPECT_THROW(userns_pool(write("subuid", "sandcell:200000:65536\n"), write("subgid", "")), Error);
  EXPECT_THROW(
      userns_pool(write("subuid", "sandcell:200000:1000\n"), write("subgid", "sandcell:1:1000\n")),
      Error);
  EXPECT_THROW(
      userns_pool(write("subuid", "sandcell:x:65536\n"), write("subgid", "sandcell:1:65536\n")),
      Error);
  EXPECT_THROW(userns_pool(write("subuid", "sandcell:4294967000:65536\n"),
                           write("subgid", "sandcell:1:65536\n")),
               Error);
}

TEST_F(UsernsPoolTest, ClaimsNeverShareASlotAndAreReleasedWithTheirOwner) {
  UsernsPool pool = userns_pool(write("subuid", "sandcell:100000:196608\n"),
                                write("subgid", "sandcell:500000:196608\n"));
  std::set<uint32_t> bases;
  {
    UsernsClaim a(pool, state_root(), "1-00000001"), b(pool, state_root(), "1-00000002"),
        c(pool, state_root(), "1-00000003");
    for (const UsernsClaim* claim : {&a, &b, &c}) {
      bases.insert(claim->mapping().uid_base);
      EXPECT_EQ(claim->mapping().gid_base - 500000, claim->mapping().uid_base - 100000);
      EXPECT_EQ(claim->mapping().size, kUsernsSize);
    }
    EXPECT_EQ(bases, (std::set<uint32_t>{100000, 165536, 231072}));
    EXPECT_THROW(UsernsClaim(pool, state_root(), "1-00000004"), Error);  // all three slots taken
  }
  EXPECT_FALSE(fs::exists(state_root() + "/" + kUsernsPoolDir))
      << "the last claim out removes the directory";
  UsernsClaim again(pool, state_root(), "1-00000005");  // free again
}

TEST_F(UsernsPoolTest, GcRemovesOnlyClaimsOfRunsThatAreGone) {
  UsernsPool pool = userns_pool(write("subuid", "sandcell:100000:131072\n"),
                                write("subgid", "sandcell:100000:131072\n"));
  UsernsClaim live(pool, state_root(), "11-0000000a");
  std::string dead_slot;
  {
    UsernsClaim dead(pool, state_root(), "22-0000000b");
    dead_slot = std::to_string((dead.mapping().uid_base - 100000) / kUsernsSize);
    // Leave the claim behind as a killed supervisor would: a second link to the same slot
    // name cannot be made, so copy it aside and restore it after the destructor.
    fs::rename(state_root() + "/userns/" + dead_slot, state_root() + "/kept");
  }
  fs::rename(state_root() + "/kept", state_root() + "/userns/" + dead_slot);
  auto removed = collect_userns_claims(
      state_root(), [](const std::string& id) { return id.rfind("11-", 0) == 0; });
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], "userns range " + dead_slot + " of run 22-0000000b");
  EXPECT_FALSE(fs::is_symlink(state_root() + "/userns/" + dead_slot));
  EXPECT_EQ(
      std::distance(fs::directory_iterator(state_root() + "/userns"), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace sandcell::runtime
