// The code runner's pure parts: requests, code checks, base64, workspace paths, MIME types and
// the error classes of canned compiler and interpreter output.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/agent/code_request.hpp"
#include "sandcell/agent/error_classifier.hpp"
#include "sandcell/agent/sessions.hpp"
#include "sandcell/agent/skill.hpp"
#include "sandcell/agent/workspace.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent {
namespace {

using nlohmann::json;

std::string invalid_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error());
    return e.what();
  }
  return "no error";
}

TEST(CodeRequest, ParsesEveryContractField) {
  auto r = parse_code_request({{"language", "py"}, {"code", "print(1)"}, {"session", "s"}, {"timeout", 5},
                               {"memory", "64m"}, {"packages", {"a", "b"}}, {"net", "allow:x.test"},
                               {"stdin", "in"}, {"files", {{{"path", "d.txt"}, {"content_base64", "aGk="}}}},
                               {"get", {"out/x"}}});
  EXPECT_EQ(r.skill, "py");
  EXPECT_EQ(r.limits.timeout, "5");
  EXPECT_EQ(r.limits.memory, "64m");
  EXPECT_EQ(r.packages.size(), 2u);
  EXPECT_EQ(r.files.at(0).content, "hi");
  EXPECT_EQ(r.get.at(0), "out/x");
}

TEST(CodeRequest, RefusesUnknownFieldsAndWrongTypes) {
  EXPECT_EQ(invalid_message([] { parse_code_request({{"skill", "py"}, {"code", "x"}, {"timout", 1}}); }),
            "request: unknown field \"timout\"");
  EXPECT_EQ(invalid_message([] { parse_code_request({{"code", "x"}}); }), "request: needs \"skill\" (or \"language\")");
  EXPECT_EQ(invalid_message([] { parse_code_request({{"skill", "py"}, {"code", 3}}); }), "request: \"code\" must be a string");
  EXPECT_NE(invalid_message([] { parse_code_request({{"skill", "py"}, {"code", "x"}, {"files", {{{"path", "a"}, {"content_base64", "!!"}}}}}); })
                .find("not base64"), std::string::npos);
}

TEST(CodeText, EmptyBinaryHugeAndInvalidUtf8AreRefused) {
  EXPECT_EQ(invalid_message([] { check_code_text(" \n\t", 100); }), "the code is empty");
  EXPECT_NE(invalid_message([] { check_code_text(std::string("a\0b", 3), 100); }).find("binary"), std::string::npos);
  EXPECT_NE(invalid_message([] { check_code_text(std::string(101, 'x'), 100); }).find("limit is 100"), std::string::npos);
  EXPECT_EQ(invalid_message([] { check_code_text("\xff\xfe", 100); }), "the code is not valid UTF-8 text");
  check_code_text("print('ü')\n", 100);
}

TEST(Base64, RoundTripsEveryLength) {
  std::string bytes;
  for (int n = 0; n < 10; ++n) {
    EXPECT_EQ(base64_decode(base64_encode(bytes), "x"), bytes);
    bytes.push_back(static_cast<char>(0xf0 + n));
  }
  EXPECT_EQ(base64_encode("hi"), "aGk=");
}

TEST(WorkspacePaths, StayInsideTheWorkspace) {
  EXPECT_EQ(Workspace::relative("/workspace/out/a.png"), "out/a.png");
  EXPECT_EQ(Workspace::relative("out/a.png"), "out/a.png");
  EXPECT_NE(invalid_message([] { Workspace::relative("/etc/passwd"); }).find("outside /workspace"), std::string::npos);
  EXPECT_NE(invalid_message([] { Workspace::relative("out/../../x"); }).find(".."), std::string::npos);
  EXPECT_NE(invalid_message([] { Workspace::relative("/workspace/../etc"); }).find(".."), std::string::npos);
  EXPECT_EQ(mime_type("out/figure-1.PNG"), "image/png");
  EXPECT_EQ(mime_type("out.d/noext"), "application/octet-stream");
}

// An ID is a directory name and a positional argument of `sessions rm`: never an option.
TEST(SessionIds, StartWithALetterDigitOrUnderscore) {
  for (const char* good : {"s1", "_x", "A.b-c_d", "9"}) EXPECT_NO_THROW(SessionStore::check_id(good)) << good;
  for (const char* bad : {"-h", "--help", "-", ".hidden", "..", "a/b", "", "a b"})
    EXPECT_NE(invalid_message([bad] { SessionStore::check_id(bad); }).find("session ID"), std::string::npos) << bad;
}

// Setuid and setgid bits, at any depth, are gone after the strip; the other mode bits stay.
TEST(WorkspacePrivileges, SetuidAndSetgidBitsAreStripped) {
  namespace fs = std::filesystem;
  std::string root = (fs::temp_directory_path() / "sc-strip-XXXXXX").string();
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  fs::create_directories(root + "/a/b");
  for (const char* f : {"/top", "/a/b/deep"}) std::ofstream(root + f) << "x";
  chmod((root + "/top").c_str(), 04755);
  chmod((root + "/a/b/deep").c_str(), 06711);
  chmod((root + "/a").c_str(), 02775);
  Workspace(root).strip_privileges();
  auto mode = [&](const char* f) {
    struct stat st {};
    stat((root + f).c_str(), &st);
    return st.st_mode & 07777;
  };
  EXPECT_EQ(mode("/top"), 0755u);
  EXPECT_EQ(mode("/a/b/deep"), 0711u);
  EXPECT_EQ(mode("/a"), 0775u);
  fs::remove_all(root);
}

// The code chooses how deep its tree is: a setuid file below PATH_MAX (and below any fd budget
// a walk holding one fd per level would need) is stripped too.
TEST(WorkspacePrivileges, FilesDeeperThanPathMaxAreStripped) {
  namespace fs = std::filesystem;
  std::string root = (fs::temp_directory_path() / "sc-strip-deep-XXXXXX").string();
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY);
  const std::string name(200, 'd');
  for (int level = 0; level < 30; ++level) {  // 30 * 201 bytes: past PATH_MAX (4096)
    ASSERT_EQ(mkdirat(fd, name.c_str(), 0755), 0);
    int sub = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    close(fd);
    fd = sub;
  }
  int file = openat(fd, "deep", O_WRONLY | O_CREAT, 0755);
  ASSERT_EQ(fchmod(file, 04755), 0);
  close(file);
  Workspace(root).strip_privileges();
  struct stat st {};
  ASSERT_EQ(fstatat(fd, "deep", &st, 0), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  close(fd);
  EXPECT_EQ(system(("rm -rf " + root).c_str()), 0);
}

// A workspace deeper than PATH_MAX (the code chooses its depth): `sessions list` counted the
// bytes up to the first name too long and stopped.
TEST(SessionSizes, CountFilesDeeperThanPathMax) {
  namespace fs = std::filesystem;
  std::string root = (fs::temp_directory_path() / "sc-deep-XXXXXX").string();
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  fs::create_directories(root + "/s1/workspace");
  std::ofstream(root + "/s1/workspace/top") << std::string(10, 'x');
  int fd = open((root + "/s1/workspace").c_str(), O_RDONLY | O_DIRECTORY);
  const std::string name(200, 'd');
  for (int level = 0; level < 30; ++level) {  // 30 * 201 bytes: past PATH_MAX (4096)
    ASSERT_EQ(mkdirat(fd, name.c_str(), 0755), 0);
    int sub = openat(fd, name.c_str(), O_RDONLY | O_DIRECTORY);
    close(fd);
    fd = sub;
  }
  int file = openat(fd, "bottom", O_WRONLY | O_CREAT, 0644);
  ASSERT_EQ(write(file, std::string(1000, 'y').data(), 1000), 1000);
  close(file);
  close(fd);
  auto sessions = SessionStore(root, std::chrono::hours(1)).list();
  ASSERT_EQ(sessions.size(), 1u);
  EXPECT_EQ(sessions[0].bytes, 1010u);
  EXPECT_EQ(system(("rm -rf " + root).c_str()), 0);
}

PhaseResult failed(const std::string& name, const std::string& err, runtime::Status status = runtime::Status::ExitNonzero) {
  PhaseResult p;
  p.name = name;
  p.result.status = status;
  p.result.exit_code = 1;
  p.stderr_text = err;
  return p;
}

TEST(ErrorClasses, PythonChainedTracebackUsesTheLastException) {
  auto e = classify_failure("python", failed("run",
      "Traceback (most recent call last):\n  File \"/workspace/main.py\", line 2, in <module>\n    int('x')\n"
      "ValueError: invalid literal\n\nDuring handling of the above exception, another exception occurred:\n\n"
      "Traceback (most recent call last):\n  File \"/workspace/main.py\", line 4, in <module>\n    raise KeyError('k')\n"
      "KeyError: 'k'\n"));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "runtime_exception");
  EXPECT_EQ(e->exception, "KeyError");
  EXPECT_EQ(e->line, 4);
}

TEST(ErrorClasses, GccDiagnosticsAndLinkErrors) {
  auto c = classify_failure("gcc", failed("compile", "/workspace/main.c: In function 'main':\n"
                                                      "/workspace/main.c:7:3: error: expected ';' before '}' token\n"));
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, "compile_error");
  EXPECT_EQ(c->line, 7);
  auto link = classify_failure("gcc", failed("compile", "main.c:(.text+0x5): undefined reference to `helper'\n"));
  EXPECT_EQ(link->message, "undefined reference to helper");
}

// A hostile program's stderr: one 1 MB line used to overflow the stack of `sandcell code` in
// std::regex (SIGSEGV, no result). Each classifier must still answer.
TEST(ErrorClasses, MegabyteLinesAreClassifiedWithoutCrashing) {
  const std::string huge(1 << 20, 'a');
  auto py = classify_failure("python", failed("run", "Traceback (most recent call last):\n"
                                                     "  File \"/workspace/main.py\", line 1, in <module>\n"
                                                     "ValueError: " + huge + "\n"));
  ASSERT_TRUE(py);
  EXPECT_EQ(py->exception, "ValueError");
  EXPECT_LE(py->message.size(), 4096u);
  for (const char* classifier : {"node", "gcc", "bash", "python"})
    for (const std::string& err : {huge + "\n", "/workspace/main.js:1\n" + huge + "\nError: " + huge + "\n",
                                   "/workspace/main.c:1:1: error: " + huge + "\n", "terminate called after " + huge + "\n"})
      EXPECT_TRUE(classify_failure(classifier, failed("run", err))) << classifier;
}

TEST(ErrorClasses, LimitsWinOverWhatStderrSays) {
  auto t = classify_failure("python", failed("run", "Traceback...\n", runtime::Status::TimeoutWall));
  EXPECT_EQ(t->kind, "timeout");
  EXPECT_EQ(classify_failure("node", failed("run", "", runtime::Status::Oom))->kind, "memory_limit");
  EXPECT_EQ(classify_failure("bash", failed("install", "ERROR: No matching distribution\n"))->kind, "install_error");
  EXPECT_FALSE(classify_failure("bash", failed("run", "", runtime::Status::Ok)));
}

// A program that failed on its full workspace: the class says so, with the bound, whatever the
// traceback says (an OSError in Python, a write error in C).
TEST(ErrorClasses, DiskLimitNamesTheBound) {
  PhaseResult p = failed("run", "OSError: [Errno 28] No space left on device\n", runtime::Status::DiskLimit);
  p.result.limits.disk_bytes = 16ull << 20;
  auto e = classify_failure("python", p);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kind, "disk_limit");
  EXPECT_NE(e->message.find("16777216"), std::string::npos) << e->message;
}

TEST(CodeRequest, DiskIsALimitOfTheRequest) {
  auto r = parse_code_request({{"language", "py"}, {"code", "print(1)"}, {"disk", "256m"}});
  EXPECT_EQ(r.limits.disk, "256m");
  EXPECT_NE(invalid_message([] { parse_code_request({{"language", "py"}, {"code", "x"}, {"disk", true}}); })
                .find("disk"),
            std::string::npos);
}

// A skill folder with a skill.json and a Dockerfile.
void write_skill(const std::string& dir, const std::string& folder, const std::string& skill_json) {
  std::filesystem::create_directories(dir + "/" + folder);
  std::ofstream(dir + "/" + folder + "/skill.json") << skill_json;
  std::ofstream(dir + "/" + folder + "/Dockerfile") << "FROM scratch\n";
}

TEST(SkillCatalog, ForSkillReadsOnlyTheFolderItNames) {
  std::string root = ::testing::TempDir() + "skills-XXXXXX";
  ASSERT_NE(mkdtemp(root.data()), nullptr);
  write_skill(
      root, "python",
      R"({"name": "python", "aliases": ["py"], "source_file": "main.py", "run": ["python3", "main.py"]})");
  write_skill(root, "broken", R"({"name": "broken", "no_such_field": 1})");
  // Every skill is read and checked: the broken one fails the whole catalog.
  EXPECT_NE(
      invalid_message([&] { SkillCatalog all(root); }).find("unknown field \"no_such_field\""),
      std::string::npos);
  // By its folder's name (any case), only that skill is read; the catalog holds it alone.
  const SkillCatalog one = SkillCatalog::for_skill(root, "Python");
  ASSERT_EQ(one.skills().size(), 1u);
  EXPECT_EQ(one.find("python").name, "python");
  EXPECT_EQ(one.find("PY").name, "python");
  // An alias, an unknown name or one that is not a plain folder name reads every skill, as the
  // full catalog does (and fails here the same way).
  for (const std::string name : {"py", "nosuch", "../skills", ".", "python/"})
    EXPECT_NE(invalid_message([&] { SkillCatalog::for_skill(root, name); }).find("no_such_field"),
              std::string::npos)
        << name;
  std::filesystem::remove_all(root + "/broken");
  EXPECT_EQ(SkillCatalog::for_skill(root, "py").find("py").name, "python");
  EXPECT_NE(invalid_message([&] {
              SkillCatalog::for_skill(root, "nosuch").find("nosuch");
            }).find("unknown skill 'nosuch' (known: python"),
            std::string::npos);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace sandcell::agent
