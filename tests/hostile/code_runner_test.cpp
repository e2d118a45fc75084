// Hostile code run by `sandcell code` (the agent's runner): /workspace is bound idmapped and
// writable, so what the sandbox's root writes there is owned by host root. Nothing it leaves may
// carry privilege on the host (setuid/setgid bits, file capabilities, device nodes), and no other
// host user may reach a run's files while it lasts. The skill here is the busybox test rootfs
// imported as sandcell/skill-probe, so these tests need no skill images.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "hostile.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

class HostileCode : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tree_.path / "skills/probe");
    std::ofstream(tree_.path / "skills/probe/skill.json")
        << R"({"name": "probe", "description": "busybox and sc-probe", "source_file": "main.sh",
              "run": ["sh", "/workspace/main.sh"], "limits": {"memory": "128m", "pids": 64, "timeout": 30},
              "network": "none", "artifacts": "/workspace/out"})";
    std::ofstream(tree_.path / "skills/probe/Dockerfile") << "FROM scratch\n";  // imported below instead
    std::string tar = (tree_.path / "rootfs.tar").string();
    ASSERT_EQ(system(("tar -C " + test_rootfs() + " -cf " + tar + " .").c_str()), 0);
    CliRun imported =
        run_sandcell({"--root", store(), "import", tar, "sandcell/skill-probe:latest"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }
  std::string store() const { return (tree_.path / "store").string(); }
  std::string sessions() const { return (tree_.path / "sessions").string(); }
  std::vector<std::string> code_args(std::vector<std::string> flags) const {
    std::vector<std::string> args = {
        "--root",         store(),    "code",    "--skills-dir", (tree_.path / "skills").string(),
        "--sessions-dir", sessions(), "--skill", "probe"};
    args.insert(args.end(), flags.begin(), flags.end());
    return args;
  }
  CliRun code(const std::string& script, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = code_args(std::move(flags));
    args.push_back("-");
    return run_sandcell(args, script);
  }
  TempTree tree_{"sc-hostile-code"};
};

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  return lstat(p.c_str(), &st) == 0 ? st.st_mode : 0;
}

// A session's workspace as the host holds it between calls: the directory "workspace" of its disk
// image (sandcell/base/workspace_disk.hpp), mounted here for the check like `code` mounts it.
class MountedSession {
 public:
  explicit MountedSession(const fs::path& session) : dir_(session / "inspect") {
    fs::create_directories(dir_);
    std::string out = shell_output("mount -o loop,nosuid,nodev " + (session / "disk.img").string() +
                                   " " + dir_.string());
    EXPECT_EQ(out.rfind("FAILED", 0), std::string::npos) << out;
  }
  ~MountedSession() {
    shell_output("umount " + dir_.string());  // -o loop's device detaches with it (autoclear)
    fs::remove(dir_);
  }
  fs::path workspace() const { return dir_ / "workspace"; }

 private:
  fs::path dir_;
};

bool has_file_cap(const fs::path& p) {
  return lgetxattr(p.c_str(), "security.capability", nullptr, 0) >= 0;
}

// The class of the report: a copy of bash made setuid root in /workspace was, on the host, a
// setuid-root file any local user could run. Setuid and setgid bits at any depth are gone when
// the call returns (and a session keeps its files).
TEST_F(HostileCode, WorkspaceFilesCarryNoPrivilegeOnTheHost) {
  CliRun r = code(
      "cp /bin/busybox /workspace/sh && chmod 4755 /workspace/sh\n"
      "cp /bin/busybox /workspace/g && chmod 2755 /workspace/g\n"
      "mkdir -p /workspace/d/e && chmod 2775 /workspace/d && cp /bin/busybox /workspace/d/e/deep "
      "&& chmod 6755 /workspace/d/e/deep && ls -l /workspace/sh\n",
      {"--session", "s1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_NE(r.out.find("-rwsr-xr-x"), std::string::npos) << "the sandbox could not set the bit: " << r.out;
  MountedSession mounted(fs::path(sessions()) / "s1");
  const fs::path ws = mounted.workspace();
  for (const char* name : {"sh", "g", "d", "d/e/deep"})
    EXPECT_EQ(mode_of(ws / name) & (S_ISUID | S_ISGID), 0u) << name << " keeps a setuid/setgid bit on the host";
  EXPECT_EQ(mode_of(ws / "sh") & 0777, 0755u) << "only the privilege bits are taken";
}

// A file capability (security.capability) is worth root on the host once the idmapped mount
// maps its root id to 0. The code profile leaves the sandbox's root without CAP_SETFCAP, so it
// cannot write one; one already in a session's workspace (an older sandcell, a run the operator
// gave CAP_SETFCAP) is removed by the next call.
TEST_F(HostileCode, FileCapabilitiesInTheWorkspaceAreRemoved) {
  CliRun first = code("cp /bin/busybox /workspace/capped && /bin/sc-probe file-cap /workspace/capped\n",
                      {"--session", "s1"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  EXPECT_NE(first.out.find("file-cap errno=EPERM"), std::string::npos) << first.out;
  {
    MountedSession mounted(fs::path(sessions()) / "s1");
    const fs::path capped = mounted.workspace() / "capped";
    const uint32_t cap[5] = {0x02000001u, 1u << 7, 0, 0, 0};  // v2, effective: CAP_SETUID
    ASSERT_EQ(setxattr(capped.c_str(), "security.capability", cap, sizeof cap, 0), 0)
        << strerror(errno);
  }
  CliRun second = code("echo next\n", {"--session", "s1"});
  ASSERT_EQ(second.exit_code, 0) << second.out << second.err;
  MountedSession mounted(fs::path(sessions()) / "s1");
  EXPECT_FALSE(has_file_cap(mounted.workspace() / "capped"))
      << "the file capability survived the call";
}

// The sandbox's root cannot make device nodes (no CAP_MKNOD, with or without a user
// namespace); one in a session's workspace (left by an older sandcell, or a run the operator
// gave CAP_MKNOD) would be a host device any user who reaches it could open: the next call
// removes it.
TEST_F(HostileCode, DeviceNodesInTheWorkspaceAreRemoved) {
  for (const char* userns : {"auto", "host"}) {
    CliRun made = code("mknod /workspace/mem c 1 1 && echo made\n", {"--session", "s1", "--userns", userns});
    EXPECT_EQ(made.out.find("made"), std::string::npos) << userns << ": " << made.out;
  }
  {
    MountedSession mounted(fs::path(sessions()) / "s1");
    const fs::path mem = mounted.workspace() / "mem";
    ASSERT_EQ(mknod(mem.c_str(), S_IFCHR | 0666, makedev(1, 1)), 0) << strerror(errno);
  }
  CliRun r = code("echo next\n", {"--session", "s1"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  MountedSession mounted(fs::path(sessions()) / "s1");
  EXPECT_FALSE(fs::exists(fs::symlink_status(mounted.workspace() / "mem")));
}

// While a run lasts (the request chooses how long), its files are reachable by no other host
// user: the run directory and code-runs are 0700 (the session directories were already).
TEST_F(HostileCode, RunDirectoriesArePrivateWhileTheRunLasts) {
  const fs::path script = tree_.path / "main.sh";
  std::ofstream(script) << "cp /bin/busybox /workspace/sh && chmod 4755 /workspace/sh && touch "
                           "/workspace/ready && sleep 3\n";
  std::vector<std::string> args = code_args({});
  args.push_back(script.string());
  pid_t pid = spawn_sandcell(args);
  fs::path planted;
  for (int i = 0; i < 300 && planted.empty(); ++i) {
    std::error_code ec;
    for (const auto& run : fs::directory_iterator(fs::path(store()) / "code-runs", ec))
      for (const fs::path& ws :
           {run.path() / "disk/workspace", run.path() / "workspace", run.path()})
        if (fs::exists(ws / "ready")) planted = ws / "sh";
    if (planted.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!planted.empty()) {
    EXPECT_EQ(mode_of(fs::path(store()) / "code-runs") & 0777, 0700u);
    CliRun nobody = run_program({"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
                                 "--clear-groups", "/bin/busybox", "stat", planted.string()});
    EXPECT_NE(nobody.exit_code, 0) << "another host user reaches " << planted << ":\n"
                                   << nobody.out;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_FALSE(planted.empty()) << "the run never wrote /workspace/ready";
}

// A request chose its own memory, timeout, processes, CPUs, output and network, and `serve`
// ran it as asked. With the operator's ceilings each ask above one is refused, naming it.
TEST_F(HostileCode, RequestsOverTheOperatorCeilingsAreRefusedNamingTheLimit) {
  const std::vector<std::string> ceilings = {"--max-memory", "64m", "--max-timeout", "10",
                                             "--max-pids",   "32",  "--max-cpus",    "1",
                                             "--max-output", "1m",  "--allowed-net", "none"};
  const std::vector<std::pair<nlohmann::json, std::string>> asks = {
      {{{"memory", "64g"}}, "--max-memory"},
      {{{"timeout", 1000000}}, "--max-timeout"},
      {{{"pids", 1000000}}, "--max-pids"},
      {{{"cpus", 64}}, "--max-cpus"},
      {{{"output_limit", "10g"}}, "--max-output"},
      {{{"net", "full"}}, "--allowed-net"},
      {{{"net", "allow:example.com"}}, "--allowed-net"}};
  for (const auto& [ask, flag] : asks) {
    nlohmann::json request = {{"skill", "probe"}, {"code", "echo ran"}};
    request.update(ask);
    std::vector<std::string> args = {
        "--root",         store(), "code", "--skills-dir", (tree_.path / "skills").string(),
        "--request-json", "-"};
    args.insert(args.end(), ceilings.begin(), ceilings.end());
    CliRun r = run_sandcell(args, request.dump());
    ASSERT_TRUE(r.record.is_object()) << ask.dump() << ": " << r.out << r.err;
    EXPECT_NE(r.record["error"]["message"].get<std::string>().find(flag), std::string::npos)
        << ask.dump() << ": " << r.out;
    EXPECT_EQ(r.out.find("ran"), std::string::npos) << ask.dump() << " ran";
  }
  // Within the ceilings it runs; the skill's 128m default is lowered to the 64m ceiling.
  CliRun ok = code("echo ran\n", ceilings);
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("ran"), std::string::npos);
}

// An input file named like the skill's source file replaced the code and ran; the runner's own
// files are not the request's to write.
TEST_F(HostileCode, InputFilesCannotReplaceTheRunnersOwnFiles) {
  for (const char* path : {"main.sh", "/workspace/main.sh", ".sandcell/lost-variables.txt"}) {
    nlohmann::json request = {{"skill", "probe"},
                              {"code", "echo mine"},
                              {"session", "s1"},
                              {"files", {{{"path", path}, {"content_base64", "ZWNobyB0aGVpcnMK"}}}}};  // "echo theirs"
    CliRun r =
        run_sandcell({"--root", store(), "code", "--skills-dir", (tree_.path / "skills").string(),
                      "--sessions-dir", sessions(), "--request-json", "-"},
                     request.dump());
    ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
    EXPECT_EQ(r.out.find("theirs"), std::string::npos) << path << " replaced the code: " << r.out;
    ASSERT_TRUE(r.record.contains("error") && r.record["error"].is_object()) << path << ": " << r.out;
    EXPECT_NE(r.record["error"].value("message", "").find("runner's own"), std::string::npos) << r.out;
  }
}

// A session's code made main.sh a hard link, and every later call of the session failed
// ("main.sh is not a plain file"): the runner's file is replaced, not written through.
TEST_F(HostileCode, SessionCodeCannotLockItsSessionThroughTheSourceFile) {
  CliRun first =
      code("ln /workspace/main.sh /workspace/keep && echo linked\n", {"--session", "s1"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  ASSERT_NE(first.out.find("linked"), std::string::npos);
  CliRun second = code("echo second\n", {"--session", "s1"});
  EXPECT_EQ(second.exit_code, 0) << second.out << second.err;
  EXPECT_NE(second.out.find("second"), std::string::npos) << second.out << second.err;
}

// --artifacts-dir flattened out/a/r.txt and out/b/r.txt to one r.txt (the second overwrote the
// first), and let the code choose host names such as .bashrc; it overwrote what was there.
TEST_F(HostileCode, ArtifactsKeepTheirTreeAndNeverOverwriteOrPlantDotFiles) {
  const fs::path arts = tree_.path / "arts";
  fs::create_directories(arts);
  std::ofstream(arts / "keep.txt") << "host";
  CliRun r = code(
      "mkdir -p /workspace/out/a /workspace/out/b /workspace/out/.git/hooks\n"
      "echo A > /workspace/out/a/r.txt; echo B > /workspace/out/b/r.txt\n"
      "echo evil > /workspace/out/.bashrc; echo evil > /workspace/out/.git/hooks/pre-commit\n"
      "echo sandbox > /workspace/out/keep.txt\n",
      {"--artifacts-dir", arts.string()});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(read_text(arts / "a/r.txt"), "A\n") << r.err;
  EXPECT_EQ(read_text(arts / "b/r.txt"), "B\n") << r.err;
  EXPECT_FALSE(fs::exists(arts / "r.txt"));
  EXPECT_FALSE(fs::exists(arts / ".bashrc"));
  EXPECT_FALSE(fs::exists(arts / ".git"));
  EXPECT_EQ(read_text(arts / "keep.txt"), "host") << "an existing file was overwritten";
  EXPECT_NE(r.err.find("never overwritten"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandcell::test
