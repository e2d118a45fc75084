// .dockerignore and COPY source matching, as Docker's patternmatcher applies them.
#include "sandcell/rootfs_builder/dockerignore.hpp"

#include <gtest/gtest.h>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

TEST(DockerIgnore, IgnoreStarDoesNotCrossDirectories) {
  auto ig = DockerIgnore::parse("*.pyc\n");
  EXPECT_TRUE(ig.excluded("a.pyc"));
  EXPECT_FALSE(ig.excluded("pkg/a.pyc"));
}

TEST(DockerIgnore, IgnoreDoubleStarMatchesAnyDepth) {
  auto ig = DockerIgnore::parse("**/*.pyc\n**/__pycache__\n");
  EXPECT_TRUE(ig.excluded("a.pyc"));
  EXPECT_TRUE(ig.excluded("pkg/sub/a.pyc"));
  EXPECT_TRUE(ig.excluded("pkg/__pycache__/x.cpython-311.pyc"));
  EXPECT_FALSE(ig.excluded("pkg/a.py"));
}

TEST(DockerIgnore, IgnoreDirectoryExcludesItsContents) {
  auto ig = DockerIgnore::parse(".git\nnode_modules/\n");
  EXPECT_TRUE(ig.excluded(".git"));
  EXPECT_TRUE(ig.excluded(".git/objects/ab"));
  EXPECT_TRUE(ig.excluded("node_modules/x/index.js"));
  EXPECT_FALSE(ig.excluded("src/node_modules/x"));
}

TEST(DockerIgnore, IgnoreExceptionReincludes) {
  auto ig = DockerIgnore::parse("*.md\n!README.md\n");
  EXPECT_TRUE(ig.excluded("CHANGES.md"));
  EXPECT_FALSE(ig.excluded("README.md"));
}

TEST(DockerIgnore, IgnoreLastMatchWins) {
  auto ig = DockerIgnore::parse("!README.md\n*.md\n");
  EXPECT_TRUE(ig.excluded("README.md"));
  auto docs = DockerIgnore::parse("docs\n!docs/keep.txt\n");
  EXPECT_TRUE(docs.excluded("docs/other.txt"));
  EXPECT_FALSE(docs.excluded("docs/keep.txt"));
}

TEST(DockerIgnore, IgnoreLeadingSlashAndDotSlashStripped) {
  auto ig = DockerIgnore::parse("/build\n./dist//out/\n");
  EXPECT_TRUE(ig.excluded("build/x"));
  EXPECT_TRUE(ig.excluded("dist/out/y"));
  EXPECT_EQ(ig.patterns(), (std::vector<std::string>{"build", "dist/out"}));
}

TEST(DockerIgnore, IgnoreCommentsAndBlankLinesSkipped) {
  auto ig = DockerIgnore::parse("# comment\n\n   \n  tmp  \n");
  EXPECT_EQ(ig.patterns(), std::vector<std::string>{"tmp"});
  EXPECT_TRUE(ig.excluded("tmp"));
  EXPECT_FALSE(ig.excluded("# comment"));
}

TEST(DockerIgnore, IgnoreQuestionMarkAndClasses) {
  auto ig = DockerIgnore::parse("file?.txt\nlog[0-9]\ncache[^a]\n");
  EXPECT_TRUE(ig.excluded("file1.txt"));
  EXPECT_FALSE(ig.excluded("file10.txt"));
  EXPECT_TRUE(ig.excluded("log7"));
  EXPECT_FALSE(ig.excluded("logx"));
  EXPECT_TRUE(ig.excluded("cacheb"));
  EXPECT_FALSE(ig.excluded("cachea"));
}

TEST(DockerIgnore, IgnoreRegexCharactersAreLiteral) {
  auto ig = DockerIgnore::parse("a+b(c).txt\n");
  EXPECT_TRUE(ig.excluded("a+b(c).txt"));
  EXPECT_FALSE(ig.excluded("aab(c)xtxt"));
}

TEST(DockerIgnore, IgnoreBadPatternRejected) {
  EXPECT_THROW(DockerIgnore::parse("[abc\n"), Error);
  EXPECT_THROW(DockerIgnore::parse("!\n"), Error);
}

TEST(DockerIgnore, IgnoreEmptyExcludesNothing) {
  DockerIgnore ig;
  EXPECT_FALSE(ig.excluded("anything"));
}

TEST(DockerIgnore, CleanContextPathLikeGo) {
  EXPECT_EQ(clean_context_path("./a//b/../c/"), "a/c");
  EXPECT_EQ(clean_context_path("/abs"), "abs");
  EXPECT_EQ(clean_context_path(""), ".");
  EXPECT_EQ(clean_context_path("/"), ".");
}

TEST(DockerIgnore, CleanContextPathNeverKeepsALeadingDotDot) {
  EXPECT_EQ(clean_context_path("../x"), "x");
  EXPECT_EQ(clean_context_path("../../../../etc/shadow"), "etc/shadow");
  EXPECT_EQ(clean_context_path("a/../../b"), "b");
  EXPECT_EQ(match_sources("../../x", {"x", "y"}), std::vector<std::string>{"x"}) << "clamped to the context";
}

const std::vector<std::string> kContext = {"Dockerfile",      "requirements.txt", "run.py",
                                           "src/app/main.py", "src/app/util.py",  "src/lib.c",
                                           "docs/a.md"};

TEST(DockerIgnore, MatchSourcesGlob) {
  EXPECT_EQ(match_sources("*.py", kContext), std::vector<std::string>{"run.py"});
  EXPECT_EQ(match_sources("src/app/*.py", kContext),
            (std::vector<std::string>{"src/app/main.py", "src/app/util.py"}));
  EXPECT_EQ(match_sources("**/*.py", kContext),
            (std::vector<std::string>{"run.py", "src/app/main.py", "src/app/util.py"}));
}

TEST(DockerIgnore, MatchSourcesDirectoryReturnsTopmost) {
  EXPECT_EQ(match_sources("src", kContext), std::vector<std::string>{"src"});
  EXPECT_EQ(match_sources("./src/", kContext), std::vector<std::string>{"src"});
  EXPECT_EQ(match_sources("s*", kContext), std::vector<std::string>{"src"});
  EXPECT_EQ(match_sources(".", kContext), std::vector<std::string>{"."});
}

TEST(DockerIgnore, MatchSourcesNothingMatches) {
  EXPECT_TRUE(match_sources("*.go", kContext).empty());
}

}  // namespace
}  // namespace sandcell::rootfs_builder
