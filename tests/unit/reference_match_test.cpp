// Docker's `reference` image filter (reference_match.hpp): Go's path.Match on the familiar name
// with and without its tag, bad patterns refused, and hostile patterns in polynomial time.
#include <gtest/gtest.h>

#include <string>

#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/reference_match.hpp"

namespace sandcell::rootfs_builder {
namespace {

TEST(ReferenceMatch, GlobsMatchTheNameWithItsTagThenWithout) {
  EXPECT_TRUE(reference_matches("python*", "python:3.12"));
  EXPECT_TRUE(reference_matches("python:3*", "python:3.12"));
  EXPECT_FALSE(reference_matches("python:2*", "python:3.12"));
  EXPECT_TRUE(reference_matches("python", "python:3.12"));  // without the tag
  EXPECT_FALSE(reference_matches("pyth", "python:3.12"));
  EXPECT_TRUE(reference_matches("*:1", "bb:1"));
  EXPECT_TRUE(reference_matches("b?", "bb:1"));
  EXPECT_TRUE(reference_matches("[a-c]b:[0-9]", "bb:1"));
  EXPECT_FALSE(reference_matches("[^b]b", "bb:1"));
  EXPECT_TRUE(reference_matches("\\b\\b", "bb:1"));
  // `*` and `?` stop at '/', as in Docker: "team/*" but not "*" matches a name with a path.
  EXPECT_FALSE(reference_matches("*", "team/app:1"));
  EXPECT_TRUE(reference_matches("team/*", "team/app:1"));
  EXPECT_TRUE(reference_matches("*/*", "team/app:1"));
  EXPECT_FALSE(reference_matches("team?app", "team/app:1"));
  // A registry's port is not a tag.
  EXPECT_TRUE(reference_matches("localhost:5000/team/app", "localhost:5000/team/app:1"));
  EXPECT_FALSE(reference_matches("localhost", "localhost:5000/team/app:1"));
  EXPECT_FALSE(reference_matches("", "bb:1"));
  EXPECT_TRUE(glob_match("", ""));
  EXPECT_TRUE(glob_match("***", "abc"));
}

TEST(ReferenceMatch, MalformedPatternsAreRefusedWhateverTheText) {
  for (const char* bad : {"[", "[]", "[]a]", "[^]", "[a-]", "[-a]", "[a", "a\\", "[\\", "x[a-z"}) {
    EXPECT_THROW(glob_match(bad, "zzz"), Error) << bad;
    EXPECT_THROW(reference_matches(bad, "a:1"), Error) << bad;
  }
}

// A backtracking matcher (glibc's fnmatch among them) tries every way to split the text between
// the stars: "*a*a*...*a*b" against "aaa...a" never finishes. The matcher's work is
// O(pattern × text): these return at once, and the test would hang, not fail, on a
// backtracking one (ctest's timeout ends it).
TEST(ReferenceMatch, HostilePatternsAreNotExponential) {
  std::string stars;
  for (int i = 0; i < 5000; ++i) stars += "*a";
  std::string text(3000, 'a');
  EXPECT_FALSE(glob_match(stars + "*b", text));
  EXPECT_FALSE(glob_match(std::string(100000, '*') + "b", text));
  std::string questions;
  for (int i = 0; i < 2000; ++i) questions += "?*";
  EXPECT_TRUE(glob_match(questions, text));
  EXPECT_FALSE(glob_match(questions + "?", std::string(1999, 'a')));
  std::string classes;
  for (int i = 0; i < 1000; ++i) classes += "*[a-z]";
  EXPECT_FALSE(glob_match(classes + "[0-9]", text));
  EXPECT_FALSE(reference_matches(stars, "python:3.12"));
}

}  // namespace
}  // namespace sandcell::rootfs_builder
