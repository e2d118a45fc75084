// The compiled-profile cache: a hit is the same program, any changed input is a miss, and a
// damaged entry is recompiled rather than trusted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sandcell/seccomp/compiled_cache.hpp"
#include "temp_tree.hpp"

namespace sandcell::seccomp {
namespace {

namespace fs = std::filesystem;

bool same(const runtime::SeccompProgram& a, const runtime::SeccompProgram& b) {
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

TEST(CompiledCache, UnconfinedAndBuiltinNeedNoCache) {
  test::TempTree dir("sc-seccomp-cache");
  EXPECT_FALSE(compile_profile_arg("unconfined", {}, {}, dir.path));
  EXPECT_TRUE(compile_profile_arg("builtin", {}, {}, dir.path));
  EXPECT_TRUE(fs::is_empty(dir.path));
}

}  // namespace
}  // namespace sandcell::seccomp
