// The compiled-profile cache: a hit is the same program, any changed input is a miss, and a
// damaged entry is recompiled rather than trusted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"
#include "temp_tree.hpp"

namespace sandcell::seccomp {
namespace {

namespace fs = std::filesystem;

bool same(const Program& a, const Program& b) {
  if (a.instructions.size() != b.instructions.size() || a.flags != b.flags || a.name != b.name) return false;
  for (size_t i = 0; i < a.instructions.size(); ++i)
    if (memcmp(&a.instructions[i], &b.instructions[i], sizeof(sock_filter)) != 0) return false;
  return a.notify.has_value() == b.notify.has_value() &&
         (!a.notify || (a.notify->errno_for == b.notify->errno_for &&
                        a.notify->default_errno == b.notify->default_errno &&
                        a.notify->kill_on_foreign_abi == b.notify->kill_on_foreign_abi));
}

TEST(CompiledCache, HitGivesTheSameProgramAsACompile) {
  test::TempTree dir("sc-seccomp-cache");
  ProfileContext context;
  auto first = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  ASSERT_TRUE(first);
  ASSERT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 1);
  auto second = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  ASSERT_TRUE(second);
  EXPECT_TRUE(same(*first, *second));
  EXPECT_EQ(second->notify->name_of(second->notify->native_arch, 250), "keyctl");
  auto direct = compile(*load_profile_arg("default", context), {.report_denials = true});
  EXPECT_TRUE(same(*first, direct));
}

TEST(CompiledCache, ChangedInputsAreMisses) {
  test::TempTree dir("sc-seccomp-cache");
  ProfileContext context;
  auto plain = compile_profile_arg("default", context, {.report_denials = false}, dir.path);
  auto reported = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  context.capabilities = {"CAP_SYS_ADMIN"};
  auto admin = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  EXPECT_FALSE(plain->notify.has_value());
  EXPECT_TRUE(reported->notify.has_value());
  EXPECT_FALSE(same(*reported, *admin));  // CAP_SYS_ADMIN opens rules of Docker's list
  EXPECT_EQ(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()), 3);
}

TEST(CompiledCache, DamagedEntryIsRecompiled) {
  test::TempTree dir("sc-seccomp-cache");
  ProfileContext context;
  auto first = compile_profile_arg("code", context, {.report_denials = true}, dir.path);
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    fs::resize_file(entry.path(), fs::file_size(entry.path()) / 2);
  }
  auto again = compile_profile_arg("code", context, {.report_denials = true}, dir.path);
  ASSERT_TRUE(again);
  EXPECT_TRUE(same(*first, *again));
}

// Another user who can write the cache directory (or the entry) could plant any program under
// the name a profile hashes to; such an entry is never used, and nothing is stored there.
TEST(CompiledCache, EntryAnotherUserCouldWriteIsNotTrusted) {
  test::TempTree dir("sc-seccomp-cache");
  ProfileContext context;
  const auto direct = compile(*load_profile_arg("default", context), {.report_denials = true});
  ASSERT_TRUE(compile_profile_arg("default", context, {.report_denials = true}, dir.path));
  const fs::path entry = fs::directory_iterator(dir.path)->path();
  {  // the planted program: its first instruction's operand changed (compiled_cache.cpp's
     // layout: u64 key size, key, u32 name size, name, u32 flags, u32 count, instructions)
    std::fstream f(entry, std::ios::in | std::ios::out | std::ios::binary);
    uint64_t key_size = 0;
    uint32_t name_size = 0;
    f.read(reinterpret_cast<char*>(&key_size), sizeof key_size);
    f.seekg(static_cast<std::streamoff>(key_size), std::ios::cur);
    f.read(reinterpret_cast<char*>(&name_size), sizeof name_size);
    const auto first_k = static_cast<std::streamoff>(8 + key_size + 4 + name_size + 4 + 4 + 4);
    f.seekp(first_k);
    const uint32_t planted = 0x7f;
    f.write(reinterpret_cast<const char*>(&planted), sizeof planted);
  }
  auto from_private = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  EXPECT_FALSE(same(*from_private, direct)) << "the control: a private entry is used as it is";

  fs::permissions(entry, fs::perms::others_write, fs::perm_options::add);
  auto from_shared_file = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  EXPECT_TRUE(same(*from_shared_file, direct));

  fs::permissions(entry, fs::perms::others_write, fs::perm_options::remove);
  fs::permissions(dir.path, fs::perms::all);  // 0777, not sticky
  auto from_shared_dir = compile_profile_arg("default", context, {.report_denials = true}, dir.path);
  EXPECT_TRUE(same(*from_shared_dir, direct));
  fs::remove(entry);
  ASSERT_TRUE(compile_profile_arg("default", context, {.report_denials = true}, dir.path));
  EXPECT_TRUE(fs::is_empty(dir.path)) << "stored into a directory others can write";
}

TEST(CompiledCache, MissingDirectoriesAreMadePrivate) {
  test::TempTree dir("sc-seccomp-cache");
  const fs::path cache = dir.path / "a" / "seccomp";
  ASSERT_TRUE(compile_profile_arg("code", {}, {.report_denials = true}, cache));
  EXPECT_EQ(fs::status(dir.path / "a").permissions(), fs::perms::owner_all);
  EXPECT_EQ(fs::status(cache).permissions(), fs::perms::owner_all);
  EXPECT_FALSE(fs::is_empty(cache));
}

TEST(CompiledCache, UnconfinedAndBuiltinNeedNoCache) {
  test::TempTree dir("sc-seccomp-cache");
  EXPECT_FALSE(compile_profile_arg("unconfined", {}, {}, dir.path));
  EXPECT_TRUE(compile_profile_arg("builtin", {}, {}, dir.path));
  EXPECT_TRUE(fs::is_empty(dir.path));
}

// cached_profile(): the Source a Spec gets. Nothing is read until the program is asked for (the
// supervisor asks while the child mounts), then it is the cache's program, named as given; a bad
// profile throws there, not where the Source is made.
TEST(CachedProfile, CompilesWhenAskedThroughTheCacheAndNamesTheProgram) {
  test::TempTree dir("sc-seccomp-cache");
  const Source source = cached_profile("code", {}, {.report_denials = true}, dir.path);
  EXPECT_TRUE(fs::is_empty(dir.path));
  std::optional<Program> program = source.program();
  ASSERT_TRUE(program);
  EXPECT_EQ(program->name, "code");
  EXPECT_FALSE(fs::is_empty(dir.path));
  auto direct = compile_profile_arg("code", {}, {.report_denials = true}, dir.path);
  direct->name = "code";
  EXPECT_TRUE(same(*program, *direct));
  EXPECT_FALSE(cached_profile("unconfined", {}, {}, dir.path).program());
}

TEST(CachedProfile, ABadProfileThrowsWhenAskedNotWhenMade) {
  test::TempTree dir("sc-seccomp-cache");
  const std::string missing = (dir.path / "no-such-profile.json").string();
  const Source source = cached_profile(missing, {}, {}, dir.path);
  EXPECT_THROW(source.program(), Error);
}

TEST(SeccompSource, HoldsNothingAProgramOrAFunctionCalledEachTime) {
  EXPECT_FALSE(Source().program());
  EXPECT_FALSE(Source(std::nullopt).program());
  Program given{.name = "given", .instructions = {}, .flags = 0, .notify = std::nullopt};
  EXPECT_EQ(Source(given).program()->name, "given");
  int calls = 0;
  const Source counted([&]() -> std::optional<Program> {
    ++calls;
    return std::nullopt;
  });
  EXPECT_EQ(calls, 0);
  EXPECT_FALSE(counted.program());
  EXPECT_FALSE(counted.program());
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace sandcell::seccomp
