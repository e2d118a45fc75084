// Disk fills (issue 32): nothing a sandbox writes may fill the host's disk. `sandcell code` gives
// each workspace its own ext4 image of the --disk size on a loop device
// (sandcell/base/workspace_disk.hpp); `sandcell run` sizes its tmpfs upper with it. Each case asserts
// what the program saw (ENOSPC), what the record says (status, limits, enforced, usage), that the
// host's filesystem holds no more than the bound, and that no mount or loop device is left after
// the call, the session's removal or its expiry. The skill is the busybox test rootfs imported as
// sandcell/skill-probe.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "disk_probes.hpp"
#include "hostile.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kMiB = 1 << 20;

class HostileDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(tree_.path / "skills/probe");
    std::ofstream(tree_.path / "skills/probe/skill.json")
        << R"({"name": "probe", "description": "busybox and sc-probe", "source_file": "main.sh",
              "run": ["sh", "/workspace/main.sh"], "limits": {"memory": "128m", "pids": 64, "timeout": 60},
              "network": "none", "artifacts": "/workspace/out"})";
    std::ofstream(tree_.path / "skills/probe/Dockerfile")
        << "FROM scratch\n";  // imported below instead
    std::string tar = (tree_.path / "rootfs.tar").string();
    ASSERT_EQ(system(("tar -C " + test_rootfs() + " -cf " + tar + " .").c_str()), 0);
    CliRun imported =
        run_sandcell({"--root", store(), "import", tar, "sandcell/skill-probe:latest"});
    ASSERT_EQ(imported.exit_code, 0) << imported.err;
  }
  void TearDown() override {
    EXPECT_EQ(mounts_under(tree_.path.string()), std::vector<std::string>{});
    std::vector<std::string> loops = loops_left_under(tree_.path.string());
    EXPECT_EQ(loops, std::vector<std::string>{}) << loop_holders(loops);
  }
  std::string store() const { return (tree_.path / "store").string(); }
  std::string sessions() const { return (tree_.path / "sessions").string(); }
  CliRun code(const std::string& script, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {
        "--root",         store(),    "code",    "--skills-dir", (tree_.path / "skills").string(),
        "--sessions-dir", sessions(), "--skill", "probe",        "--json"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("-");
    return run_sandcell(args, script);
  }
  bool nothing_left_in_code_runs() const {
    std::error_code ec;
    const fs::path dir = fs::path(store()) / "code-runs";
    return !fs::exists(dir, ec) || fs::is_empty(dir, ec);  // a session's call makes none
  }
  TempTree tree_{"sc-hostile-disk"};
};

const nlohmann::json& report(const CliRun& r) {
  return r.record["report"];
}

// The report's case: 1.2 GB written to /workspace finished `ok` on the host's disk. With --disk
// 16m the write stops with ENOSPC inside; dd fails, so the call is disk_limit, and the host's
// filesystem never held more than the image.
TEST_F(HostileDisk, FillingTheWorkspaceEndsInEnospcAndDiskLimit) {
  const uint64_t before = free_bytes(tree_.path.string());
  CliRun r = code(
      "/bin/sc-probe fill-bytes /workspace/a\ndd if=/dev/zero of=/workspace/b bs=1M count=64\n",
      {"--disk", "16m"});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_NE(r.record["stdout"].get<std::string>().find("errno=ENOSPC"), std::string::npos) << r.out;
  EXPECT_EQ(r.record["status"], "disk_limit") << r.out;
  EXPECT_EQ(r.record["error"]["class"], "disk_limit") << r.out;
  EXPECT_EQ(report(r)["limits"]["disk_bytes"], 16 * kMiB);
  EXPECT_EQ(report(r)["enforced"]["disk_bytes"], "ext4-loop");
  const uint64_t used = r.record["usage"]["disk_bytes"].get<uint64_t>();
  EXPECT_GT(used, 8 * kMiB);
  EXPECT_LE(used, 16 * kMiB);
  EXPECT_EQ(report(r)["usage"]["disk_bytes"], used);
  // Other helpers build and test on this host at the same time: a margin, not equality.
  EXPECT_GT(free_bytes(tree_.path.string()) + 64 * kMiB, before);
  EXPECT_TRUE(nothing_left_in_code_runs());
}

// A program that survives the full disk keeps its own status: disk_limit says the bound is why
// it failed, never that it was merely reached.
TEST_F(HostileDisk, AProgramThatHandlesTheFullDiskKeepsItsOwnStatus) {
  CliRun r = code("/bin/sc-probe fill-bytes /workspace/a\n", {"--disk", "16m"});
  EXPECT_EQ(r.record["status"], "ok") << r.out;
  EXPECT_GT(r.record["usage"]["disk_bytes"].get<uint64_t>(), 8 * kMiB);
}

// "Millions of empty files": the image has one inode per 16 KiB (1024 at 16m), so creation stops
// with ENOSPC long before the host's inodes are touched.
TEST_F(HostileDisk, ManyEmptyFilesStopAtTheInodeBound) {
  CliRun r = code("mkdir /workspace/d && /bin/sc-probe fill-files /workspace/d; exit 3\n",
                  {"--disk", "16m"});
  std::string out = r.record["stdout"].get<std::string>();
  EXPECT_NE(out.find("errno=ENOSPC"), std::string::npos) << r.out;
  long created = std::stol(out.substr(out.find("created ") + 8));
  EXPECT_GT(created, 900);
  EXPECT_LT(created, 1100);
  EXPECT_EQ(r.record["status"], "disk_limit") << r.out;
}

// A 1 TB sparse file costs nothing until its holes are written: writing them stops at the bound.
TEST_F(HostileDisk, ASparseTerabyteFileCannotBeFilledPastTheBound) {
  CliRun r = code(
      "truncate -s 1099511627776 /workspace/sparse && ls -l /workspace/sparse\n"
      "dd if=/dev/zero of=/workspace/sparse bs=1M count=64 seek=500000 conv=notrunc\n",
      {"--disk", "16m"});
  EXPECT_NE(r.record["stdout"].get<std::string>().find("1099511627776"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.record["status"], "disk_limit") << r.out;
  EXPECT_LE(r.record["usage"]["disk_bytes"].get<uint64_t>(), 16 * kMiB);
}

// A hard link cannot leave the workspace's filesystem (EXDEV), and a symlink out of it is never
// followed by sandcell (the artifact is not the host's file).
TEST_F(HostileDisk, LinksOutOfTheWorkspaceReachNothing) {
  CliRun r = code(
      "mkdir -p /workspace/out\nln /bin/busybox /workspace/out/hard 2>&1 || echo no-hard-link\n"
      "ln -s /etc/shadow /workspace/out/soft\n",
      {"--disk", "16m"});
  EXPECT_NE(r.record["stdout"].get<std::string>().find("no-hard-link"), std::string::npos) << r.out;
  for (const auto& a : r.record["artifacts"]) EXPECT_TRUE(a["base64"].is_null()) << a.dump();
}

// /tmp is the tmpfs upper at half the skill's memory (128m here), /dev/shm a 64 MiB tmpfs: both
// fill to ENOSPC in memory, never on the host's disk, and the OOM killer stays out of it. The
// status is the program's own: disk_limit is about the workspace (README "Disk limits").
TEST_F(HostileDisk, TmpAndShmFillsEndInEnospcInMemory) {
  const uint64_t before = free_bytes(tree_.path.string());
  CliRun r = code(
      "/bin/sc-probe fill-bytes /tmp/fill\nrm /tmp/fill\n/bin/sc-probe fill-bytes /dev/shm/fill\n",
      {"--disk", "16m"});
  EXPECT_EQ(r.record["status"], "ok") << r.out;
  const std::string out = r.record["stdout"].get<std::string>();
  EXPECT_TRUE(std::regex_match(out, std::regex("wrote 6[0-4] MB errno=ENOSPC\nwrote 64 MB errno=ENOSPC\n"))) << r.out;
  EXPECT_EQ(report(r)["events"]["oom_kills"], 0);
  EXPECT_GT(free_bytes(tree_.path.string()) + 64 * kMiB, before);
}

// An output flood is stopped by the output cap: it is held in memory up to the cap, never
// spooled to the host's disk.
TEST_F(HostileDisk, AnOutputFloodStopsAtTheOutputCap) {
  const uint64_t before = free_bytes(tree_.path.string());
  CliRun r = code("yes sandcell-flood\n", {"--disk", "16m", "--output-limit", "1m"});
  EXPECT_EQ(r.record["status"], "output_limit") << r.out.substr(0, 500);
  EXPECT_LE(r.record["stdout"].get<std::string>().size(), kMiB);
  EXPECT_GT(free_bytes(tree_.path.string()) + 64 * kMiB, before);
  EXPECT_TRUE(nothing_left_in_code_runs());
}

// Without --disk a call still has a bound: 1 GiB per workspace.
TEST_F(HostileDisk, CodeHasADefaultBoundOfOneGibibyte) {
  CliRun r = code("echo hi\n");
  EXPECT_EQ(r.record["status"], "ok") << r.out;
  EXPECT_EQ(report(r)["limits"]["disk_bytes"], 1024 * kMiB);
  EXPECT_EQ(report(r)["enforced"]["disk_bytes"], "ext4-loop");
}

// Each size gets a formatted template in the store (mke2fs once per size, not per call): requests
// of ever new sizes cannot fill the store with them, the least recently used go past eight.
TEST_F(HostileDisk, EverNewSizesKeepAtMostEightTemplates) {
  for (int mib = 9; mib <= 18; ++mib) {
    CliRun r = code("echo hi\n", {"--disk", std::to_string(mib) + "m"});
    ASSERT_EQ(r.record["status"], "ok") << r.out << r.err;
    EXPECT_EQ(report(r)["limits"]["disk_bytes"], mib * kMiB);
  }
  std::vector<std::string> templates;
  for (const auto& e : fs::directory_iterator(fs::path(store()) / "disk-templates"))
    templates.push_back(e.path().filename());
  EXPECT_EQ(templates.size(), 8u);
  EXPECT_NE(std::find(templates.begin(), templates.end(), "ext4-" + std::to_string(18 * kMiB) + ".img"),
            templates.end()) << "the newest stays";
  EXPECT_TRUE(nothing_left_in_code_runs());
}

// The servers' request contract: "disk" in the request, within the operator's --max-disk.
TEST_F(HostileDisk, ARequestChoosesItsDiskWithinTheCeiling) {
  std::vector<std::string> args = {"--root",
                                   store(),
                                   "code",
                                   "--skills-dir",
                                   (tree_.path / "skills").string(),
                                   "--sessions-dir",
                                   sessions(),
                                   "--request-json",
                                   "-",
                                   "--max-disk",
                                   "32m"};
  CliRun over = run_sandcell(args, R"({"skill": "probe", "code": "echo hi", "disk": "64m"})");
  EXPECT_NE(over.out.find("over the operator's limit (--max-disk 32m)"), std::string::npos)
      << over.out;
  CliRun r = run_sandcell(
      args,
      R"({"skill": "probe", "code": "dd if=/dev/zero of=/workspace/f bs=1M count=64", "disk": "16m"})");
  EXPECT_EQ(r.record["status"], "disk_limit") << r.out;
  EXPECT_EQ(r.record["report"]["limits"]["disk_bytes"], 16 * kMiB);
  CliRun unasked = run_sandcell(args, R"({"skill": "probe", "code": "echo hi"})");
  EXPECT_EQ(unasked.record["report"]["limits"]["disk_bytes"], 32 * kMiB)
      << "the default, lowered to --max-disk";
}

// A session keeps its image between calls; the bound holds across them, `sessions list` shows
// what it takes and its bound, and removal and expiry leave no mount or loop device.
TEST_F(HostileDisk, ASessionKeepsItsBoundAndGoesWithoutTrace) {
  CliRun first = code("dd if=/dev/zero of=/workspace/keep bs=1M count=6\n",
                      {"--session", "s1", "--disk", "16m"});
  ASSERT_EQ(first.record["status"], "ok") << first.out;
  CliRun second =
      code("ls -l /workspace/keep && dd if=/dev/zero of=/workspace/more bs=1M count=64\n",
           {"--session", "s1", "--disk", "16m"});
  EXPECT_NE(second.record["stdout"].get<std::string>().find("6291456"), std::string::npos)
      << second.out;
  EXPECT_EQ(second.record["status"], "disk_limit") << second.out;
  CliRun listed =
      run_sandcell({"--root", store(), "sessions", "--sessions-dir", sessions(), "list", "--json"});
  ASSERT_TRUE(listed.record.is_array()) << listed.out << listed.err;
  ASSERT_EQ(listed.record.size(), 1u);
  EXPECT_EQ(listed.record[0]["disk_bytes"], 16 * kMiB);
  EXPECT_GT(listed.record[0]["bytes"].get<uint64_t>(), 12 * kMiB);
  EXPECT_LE(listed.record[0]["bytes"].get<uint64_t>(), 16 * kMiB);
  EXPECT_EQ(mounts_under(tree_.path.string()), std::vector<std::string>{})
      << "mounted between calls";
  CliRun removed =
      run_sandcell({"--root", store(), "sessions", "--sessions-dir", sessions(), "rm", "s1"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_FALSE(fs::exists(fs::path(sessions()) / "s1"));

  ASSERT_EQ(code("echo x > /workspace/x\n", {"--session", "s2", "--disk", "16m"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  code("echo other\n", {"--session", "s3", "--disk", "16m", "--session-ttl", "1"});
  EXPECT_FALSE(fs::exists(fs::path(sessions()) / "s2")) << "expired";
}

// --sessions-max and --sessions-max-bytes: a new session removes the least recently used idle one.
TEST_F(HostileDisk, NewSessionsMakeRoomByRemovingTheOldestIdleOne) {
  for (const char* id : {"a", "b", "c"}) {
    CliRun r = code("echo " + std::string(id) + "\n",
                    {"--session", id, "--disk", "16m", "--sessions-max-bytes", "40m"});
    ASSERT_EQ(r.record["status"], "ok") << r.out << r.err;
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // last_used has seconds
  }
  EXPECT_FALSE(fs::exists(fs::path(sessions()) / "a"));
  EXPECT_TRUE(fs::exists(fs::path(sessions()) / "b"));
  EXPECT_TRUE(fs::exists(fs::path(sessions()) / "c"));
  CliRun d = code("echo d\n", {"--session", "d", "--disk", "16m", "--sessions-max", "1"});
  EXPECT_EQ(d.record["status"], "ok") << d.out;
  EXPECT_FALSE(fs::exists(fs::path(sessions()) / "b"));
  EXPECT_FALSE(fs::exists(fs::path(sessions()) / "c"));
  CliRun big =
      code("echo big\n", {"--session", "e", "--disk", "64m", "--sessions-max-bytes", "40m"});
  EXPECT_NE((big.out + big.err).find("over --sessions-max-bytes"), std::string::npos)
      << big.out << big.err;
}

// A `sandcell code` killed mid-call leaves its disk mounted (and the loop device attached): the
// next call, or `sandcell gc`, unmounts it and the loop device goes with it.
TEST_F(HostileDisk, AKilledCallsDiskIsUnmountedByTheNextCallAndGc) {
  const fs::path script = tree_.path / "main.sh";
  std::ofstream(script) << "touch /workspace/ready && sleep 2\n";
  for (bool by_gc : {false, true}) {
    pid_t pid =
        spawn_sandcell({"--root", store(), "code", "--skills-dir", (tree_.path / "skills").string(),
                        "--skill", "probe", "--disk", "16m", script.string()});
    bool ready = false;
    for (int i = 0; i < 300 && !ready; ++i) {
      std::error_code ec;
      for (const auto& run : fs::directory_iterator(fs::path(store()) / "code-runs", ec))
        ready = ready || fs::exists(run.path() / "disk/workspace/ready");
      if (!ready) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_TRUE(ready);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    std::this_thread::sleep_for(std::chrono::seconds(3));  // the sandbox's sleep ends
    EXPECT_EQ(mounts_under(tree_.path.string()).size(), 1u) << "the killed call's disk";
    if (by_gc) {
      CliRun gc = run_sandcell({"--root", store(), "gc"});
      EXPECT_NE(gc.out.find("unmounted 1 workspace disk"), std::string::npos) << gc.out << gc.err;
    } else {
      EXPECT_EQ(code("echo next\n").record["status"], "ok");
    }
    EXPECT_EQ(mounts_under(tree_.path.string()), std::vector<std::string>{})
        << (by_gc ? "gc" : "next call");
    std::vector<std::string> loops = loops_left_under(tree_.path.string());
    EXPECT_EQ(loops, std::vector<std::string>{}) << loop_holders(loops);
  }
}

// Each hostile case again through the three ways a workspace is made: a `sandcell code` call, a
// session's call, and a server request (`sandcell serve` on a unix socket, which runs `code
// --request-json` for it). Each ends with the bound enforced and the same status, the host's
// filesystem holding no more than the bound, and no mount or loop device left (TearDown), nor
// the session once removed.
enum class Route { Code, Session, Server };

struct DiskCase {
  const char* name;
  const char* script;
  const char* status;
  const char* stdout_regex;  // what the program saw
  bool flood = false;        // run with an output cap of 1m
};

const DiskCase kDiskCases[] = {
    {"Fill", "/bin/sc-probe fill-bytes /workspace/a\ndd if=/dev/zero of=/workspace/b bs=1M count=64\n",
     "disk_limit", "wrote 1[0-6] MB errno=ENOSPC\n"},
    {"EmptyFiles", "mkdir /workspace/d && /bin/sc-probe fill-files /workspace/d; exit 3\n", "disk_limit",
     "created (9[0-9][0-9]|10[0-9][0-9]) errno=ENOSPC\n"},
    {"SparseTerabyte",
     "truncate -s 1099511627776 /workspace/sparse && ls -l /workspace/sparse\n"
     "dd if=/dev/zero of=/workspace/sparse bs=1M count=64 seek=500000 conv=notrunc 2>/dev/null\n",
     "disk_limit", ".* 1099511627776 .*\n"},
    {"LinksOut",
     "mkdir -p /workspace/out\nln /bin/busybox /workspace/out/hard 2>/dev/null || echo no-hard-link\n"
     "ln -s /etc/shadow /workspace/out/soft\n",
     "ok", "no-hard-link\n"},
    {"TmpAndShm", "/bin/sc-probe fill-bytes /tmp/fill\nrm /tmp/fill\n/bin/sc-probe fill-bytes /dev/shm/fill\n", "ok",
     "wrote 6[0-4] MB errno=ENOSPC\nwrote 64 MB errno=ENOSPC\n"},
    {"OutputFlood", "yes sandcell-flood\n", "output_limit", "(sandcell-flood\n)+(sandcell-fl?o?o?d?)?", true},
};

// (gtest and ctest name a case by these, not by its bytes)
void PrintTo(const DiskCase& c, std::ostream* os) { *os << c.name; }
void PrintTo(Route r, std::ostream* os) { *os << static_cast<int>(r); }

class HostileDiskRoutes : public HostileDisk,
                          public ::testing::WithParamInterface<std::tuple<Route, DiskCase>> {
 protected:
  void SetUp() override {
    HostileDisk::SetUp();
    if (route() != Route::Server) return;
    // The server's `code` children find the skill and the sessions as the CLI's do.
    setenv("SANDCELL_SKILLS", (tree_.path / "skills").c_str(), 1);
    setenv("SANDCELL_SESSIONS", sessions().c_str(), 1);
    server_ = spawn_sandcell({"--root", store(), "serve", "--listen", "unix:" + socket()});
    unsetenv("SANDCELL_SKILLS");
    unsetenv("SANDCELL_SESSIONS");
    for (int i = 0; i < 300 && !fs::exists(socket()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(socket()));
  }
  void TearDown() override {
    if (server_ > 0) {
      kill(server_, SIGTERM);
      waitpid(server_, nullptr, 0);
    }
    HostileDisk::TearDown();
  }
  Route route() const { return std::get<0>(GetParam()); }
  std::string socket() const { return (tree_.path / "api.sock").string(); }

  // The call's result (the code result: stdout, status, usage, report).
  nlohmann::json run(const DiskCase& c) {
    if (route() == Route::Server) {
      nlohmann::json body = {{"skill", "probe"}, {"code", c.script}, {"disk", "16m"}};
      if (c.flood) body["output_limit"] = "1m";
      const std::string body_file = (tree_.path / "body.json").string();
      std::ofstream(body_file) << body.dump();
      CliRun r = run_program({"/usr/bin/curl", "-s", "--unix-socket", socket(), "--data-binary", "@" + body_file,
                              "-H", "Content-Type: application/json", "http://sandcell/v1/run"});
      return nlohmann::json::parse(r.out, nullptr, false);
    }
    std::vector<std::string> flags = {"--disk", "16m"};
    if (route() == Route::Session) flags.insert(flags.end(), {"--session", "s1"});
    if (c.flood) flags.insert(flags.end(), {"--output-limit", "1m"});
    return code(c.script, flags).record;
  }
  pid_t server_ = -1;
};

TEST_P(HostileDiskRoutes, EndsWithTheBoundEnforcedAndNothingLeft) {
  const DiskCase& c = std::get<1>(GetParam());
  const uint64_t before = free_bytes(tree_.path.string());
  nlohmann::json r = run(c);
  ASSERT_TRUE(r.is_object() && r.contains("status")) << r.dump().substr(0, 2000);
  EXPECT_EQ(r["status"], c.status) << r.dump().substr(0, 2000);
  const std::string out = r["stdout"].get<std::string>();
  EXPECT_TRUE(std::regex_match(out.substr(0, 4096), std::regex(c.stdout_regex)) || c.flood) << out.substr(0, 2000);
  if (c.flood) {
    EXPECT_LE(out.size(), kMiB);
    EXPECT_EQ(out.substr(0, 15), "sandcell-flood\n");
  }
  EXPECT_EQ(r["report"]["limits"]["disk_bytes"], 16 * kMiB);
  EXPECT_EQ(r["report"]["enforced"]["disk_bytes"], "ext4-loop");
  EXPECT_LE(r["usage"]["disk_bytes"].get<uint64_t>(), 16 * kMiB);
  for (const auto& a : r["artifacts"]) EXPECT_TRUE(a["base64"].is_null()) << a.dump();  // a link is not followed
  // Other helpers build and test on this host at the same time: a margin, not equality.
  EXPECT_GT(free_bytes(tree_.path.string()) + 64 * kMiB, before);
  EXPECT_TRUE(nothing_left_in_code_runs());
  if (route() == Route::Session) {
    struct stat image {};
    ASSERT_EQ(stat((fs::path(sessions()) / "s1/disk.img").c_str(), &image), 0);
    EXPECT_LE(static_cast<uint64_t>(image.st_blocks) * 512, 16 * kMiB);
    CliRun removed = run_sandcell({"--root", store(), "sessions", "--sessions-dir", sessions(), "rm", "s1"});
    EXPECT_EQ(removed.exit_code, 0) << removed.err;
    EXPECT_FALSE(fs::exists(fs::path(sessions()) / "s1"));
  }
}

std::string route_and_case(const ::testing::TestParamInfo<std::tuple<Route, DiskCase>>& info) {
  static const char* const kRoutes[] = {"Code", "Session", "Server"};
  return std::string(kRoutes[static_cast<int>(std::get<0>(info.param))]) + "_" + std::get<1>(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(AllRoutes, HostileDiskRoutes,
                         ::testing::Combine(::testing::Values(Route::Code, Route::Session, Route::Server),
                                            ::testing::ValuesIn(kDiskCases)),
                         route_and_case);

// `run`: the tmpfs upper is sized by --disk, so /tmp filling inside a small --memory ends in
// ENOSPC instead of the OOM killer, and the record says so.
TEST(HostileDiskRun, ADiskBoundTurnsATmpFillIntoEnospcInsteadOfOom) {
  auto r = run_in_sandbox({"--memory", "64m", "--disk", "16m"},
                          {"/bin/sc-probe", "fill-bytes", "/tmp/fill"});
  EXPECT_EQ(status_of(r), "ok") << r.record.dump();
  EXPECT_EQ(stdout_of(r), "wrote 16 MB errno=ENOSPC\n");
  EXPECT_EQ(r.record["limits"]["disk_bytes"], 16 * kMiB);
  EXPECT_EQ(r.record["enforced"]["disk_bytes"], "tmpfs");
  EXPECT_FALSE(r.record["limits"].contains("tmpfs_bytes")) << "only when there are any";
}

// `run --tmpfs DST:SIZE`: each mount's size is in the record, and a write past it gets ENOSPC.
TEST(HostileDiskRun, EachTmpfsSizeIsInTheRecordAndBoundsItsWrites) {
  auto r = run_in_sandbox({"--memory", "64m", "--tmpfs", "/scratch:8m", "--tmpfs", "/more"},
                          {"/bin/sc-probe", "fill-bytes", "/scratch/fill"});
  EXPECT_EQ(status_of(r), "ok") << r.record.dump();
  EXPECT_EQ(stdout_of(r), "wrote 8 MB errno=ENOSPC\n");
  EXPECT_EQ(r.record["limits"]["tmpfs_bytes"], (nlohmann::json{{"/scratch", 8 * kMiB}, {"/more", 64 * kMiB}}));
  EXPECT_EQ(r.record["enforced"]["tmpfs_bytes"], "tmpfs");
}

}  // namespace
}  // namespace sandcell::test
