// linux.cgroupsPath and linux.resources through the real sandcell-oci binary on this host's
// cgroups (hybrid here: the controllers in v1 hierarchies under /sys/fs/cgroup/<controller>).
// The v2 control files are covered against a fake cgroupfs in tests/unit/oci_cgroups_test.cpp.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
const std::string kCg = "/sys/fs/cgroup";

// What the kubelet does before it calls the runtime: the pod's parent cgroup in one
// hierarchy, with a limit. Removed when the test ends (delete must have left it).
struct CallersCgroup {
  std::string dir;
  explicit CallersCgroup(const std::string& d) : dir(d) { fs::create_directories(dir); }
  ~CallersCgroup() { rmdir(dir.c_str()); }
};

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
}

std::string trimmed(const std::string& path) {
  std::string text = read_text(path);
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

bool v1_host() {
  return fs::exists(kCg + "/memory/memory.limit_in_bytes") && fs::exists(kCg + "/freezer");
}

TEST(OciCgroups, AbsolutePath_IsBelowEachHierarchy_ParentLimitApplies_DeleteRemovesWhatCreateMade) {
  if (!v1_host())
    GTEST_FAIL() << "this test needs v1 memory and freezer hierarchies (the CI host has them)";
  const std::string pod = "sc-oci-kubepods-" + std::to_string(getpid());
  CallersCgroup parent(kCg + "/memory/" + pod);
  write_text(parent.dir + "/memory.limit_in_bytes", std::to_string(48 << 20));
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["linux"]["cgroupsPath"] = "/" + pod + "/pod1/c1";
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "abs"}).exit_code, 0);
  std::string pid = std::to_string(b.oci({"state", "abs"}).record["pid"].get<int>());
  for (const char* hierarchy : {"memory", "pids", "freezer", "cpu", "cpuacct", "devices"})
    EXPECT_EQ(trimmed(kCg + "/" + hierarchy + "/" + pod + "/pod1/c1/cgroup.procs"), pid)
        << hierarchy;
  // The kernel's own account: the container's memory is limited by the caller's parent.
  EXPECT_NE(read_text(parent.dir + "/pod1/c1/memory.stat")
                .find("hierarchical_memory_limit " + std::to_string(48 << 20)),
            std::string::npos);

  ASSERT_EQ(b.oci({"delete", "--force", "abs"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(parent.dir + "/pod1")) << "create made pod1 and c1: delete removes both";
  EXPECT_TRUE(fs::exists(parent.dir)) << "the caller made it: it stays";
  EXPECT_FALSE(fs::exists(kCg + "/pids/" + pod)) << "create made it in pids: delete removes it";
}

TEST(OciCgroups, RelativePath_IsBelowTheSandcellParent_DotDotIsRefusedLeavingNothing) {
  if (!v1_host()) GTEST_FAIL() << "this test needs v1 memory and freezer hierarchies";
  const std::string group = "sc-oci-rel-" + std::to_string(getpid());
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["linux"]["cgroupsPath"] = group + "/c";
  b.write();
  ASSERT_EQ(b.oci({"run", "-d", "-b", b.dir(), "rel"}).exit_code, 0);
  std::string pid = std::to_string(b.oci({"state", "rel"}).record["pid"].get<int>());
  EXPECT_EQ(trimmed(kCg + "/memory/sandcell/" + group + "/c/cgroup.procs"), pid);
  CliRun table = b.oci({"ps", "rel"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_TRUE(table.out.starts_with("UID")) << "ps -ef's header, as runc prints it: " << table.out;
  EXPECT_NE(table.out.find("sleep 1000"), std::string::npos) << table.out;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 2)
      << "the header and the container's one process";
  EXPECT_EQ(b.oci({"ps", "rel", "--", "-o", "pid="}).exit_code, 125)
      << "no PID column to filter by";
  ASSERT_EQ(b.oci({"pause", "rel"}).exit_code, 0);
  EXPECT_EQ(trimmed(kCg + "/freezer/sandcell/" + group + "/c/freezer.state"), "FROZEN");
  ASSERT_EQ(b.oci({"resume", "rel"}).exit_code, 0);
  ASSERT_EQ(b.oci({"delete", "--force", "rel"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(kCg + "/memory/sandcell/" + group));

  b.config["linux"]["cgroupsPath"] = "/" + group + "/../../etc";
  b.write();
  CliRun escape = b.oci({"create", "-b", b.dir(), "esc"});
  EXPECT_EQ(escape.exit_code, 125);
  EXPECT_NE(escape.err.find("linux.cgroupsPath: '..' is not allowed"), std::string::npos)
      << escape.err;
  EXPECT_EQ(b.oci({"state", "esc"}).exit_code, 125) << "nothing is left behind";
  EXPECT_FALSE(fs::exists(kCg + "/memory/" + group));
}

TEST(OciCgroups, Resources_AreWrittenToTheV1Files_UpdateChangesThem_UnsupportedFieldIsNamed) {
  if (!v1_host()) GTEST_FAIL() << "this test needs v1 memory and freezer hierarchies";
  const std::string path = "sc-oci-res-" + std::to_string(getpid());
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["linux"]["cgroupsPath"] = path;
  b.config["linux"]["resources"] = {
      {"memory",
       {{"limit", 64 << 20}, {"swap", 96 << 20}, {"reservation", 32 << 20}, {"swappiness", 10}}},
      {"cpu",
       {{"shares", 512}, {"quota", 20000}, {"period", 100000}, {"cpus", "0"}, {"mems", "0"}}},
      {"pids", {{"limit", 40}}},
      {"devices",
       {{{"allow", false}, {"access", "rwm"}},
        {{"allow", true}, {"type", "c"}, {"major", 10}, {"minor", 200}, {"access", "rw"}}}}};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "res"}).exit_code, 0);
  const std::string dir = "/sandcell/" + path;
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.limit_in_bytes"), std::to_string(64 << 20));
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.memsw.limit_in_bytes"),
            std::to_string(96 << 20));
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.soft_limit_in_bytes"),
            std::to_string(32 << 20));
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.swappiness"), "10");
  EXPECT_EQ(trimmed(kCg + "/cpu" + dir + "/cpu.shares"), "512");
  EXPECT_EQ(trimmed(kCg + "/cpu" + dir + "/cpu.cfs_quota_us"), "20000");
  EXPECT_EQ(trimmed(kCg + "/cpuset" + dir + "/cpuset.cpus"), "0");
  EXPECT_EQ(trimmed(kCg + "/pids" + dir + "/pids.max"), "40");
  std::string devices = read_text(kCg + "/devices" + dir + "/devices.list");
  EXPECT_NE(devices.find("c 10:200 rw\n"), std::string::npos) << devices;
  EXPECT_NE(devices.find("c 1:3 rwm\n"), std::string::npos)
      << "runc's default /dev/null: " << devices;
  EXPECT_EQ(devices.find("a *:* rwm"), std::string::npos)
      << "deny-all took the allow-all away: " << devices;

  // Raising the limit above the old memory+swap needs memsw first: the retry handles the order.
  CliRun update = b.oci({"update", "--memory", "128m", "--memory-swap", "256m", "--cpu-shares",
                         "256", "--pids-limit", "20", "res"});
  ASSERT_EQ(update.exit_code, 0) << update.err;
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.limit_in_bytes"), std::to_string(128 << 20));
  EXPECT_EQ(trimmed(kCg + "/memory" + dir + "/memory.memsw.limit_in_bytes"),
            std::to_string(256 << 20));
  EXPECT_EQ(trimmed(kCg + "/cpu" + dir + "/cpu.shares"), "256");
  EXPECT_EQ(trimmed(kCg + "/pids" + dir + "/pids.max"), "20");
  CliRun from_stdin =
      b.oci({"update", "-r", "-", "res"}, R"({"cpu": {"quota": 50000, "period": 200000}})");
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(trimmed(kCg + "/cpu" + dir + "/cpu.cfs_period_us"), "200000");
  EXPECT_EQ(trimmed(kCg + "/cpu" + dir + "/cpu.cfs_quota_us"), "50000");
  CliRun realtime = b.oci({"update", "--cpu-rt-runtime", "1000", "res"});
  EXPECT_EQ(realtime.exit_code, 125);
  EXPECT_NE(realtime.err.find(
                "linux.resources.cpu.realtimeRuntime: realtime scheduling is not supported"),
            std::string::npos)
      << realtime.err;
  ASSERT_EQ(b.oci({"delete", "--force", "res"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(kCg + "/memory" + dir));

  // A field this host has no controller for is named, and create leaves nothing.
  b.config["linux"]["resources"] = {{"rdma", {{"mlx5_0", {{"hcaHandles", 2}}}}}};
  b.write();
  CliRun rdma = b.oci({"create", "-b", b.dir(), "rdma"});
  EXPECT_EQ(rdma.exit_code, 125);
  EXPECT_NE(
      rdma.err.find("linux.resources.rdma.mlx5_0: the rdma cgroup controller is not available"),
      std::string::npos)
      << rdma.err;
  EXPECT_FALSE(fs::exists(kCg + "/memory" + dir));
}

}  // namespace
}  // namespace sandcell::test

namespace sandcell::test {
namespace {

// `events --stats` prints one stats object in runc's shape; `events` streams and reports the
// OOM kill of a process that outgrew the memory limit, then returns once the container stops.
TEST(OciCgroups, Events_StatsOnceInRuncsShape_StreamReportsTheOomKill) {
  if (!v1_host()) GTEST_FAIL() << "this test needs v1 memory and freezer hierarchies";
  OciBundle b;
  b.config["linux"]["resources"]["memory"] = {{"limit", 24 << 20}, {"swap", 24 << 20}};
  b.config["linux"]["resources"]["pids"] = {{"limit", 30}};
  // The memory hog waits for /home/go, made once `events` has printed its first line (so it has
  // read the OOM count it compares with): a fixed sleep lost that race under CI's load.
  std::filesystem::create_directories(b.path("sig"));
  b.config["mounts"].push_back({{"destination", "/home"},
                                {"type", "bind"},
                                {"source", b.path("sig")},
                                {"options", {"rbind", "ro"}}});
  b.config["process"]["args"] = {"sh", "-c",
                                 "until [ -e /home/go ]; do sleep 0.05; done; head -c 300000000 "
                                 "/dev/zero | tail >/dev/null; echo survived"};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "ev"}).exit_code, 0);
  CliRun once = b.oci({"events", "--stats", "ev"});
  ASSERT_EQ(once.exit_code, 0) << once.err;
  nlohmann::json event = nlohmann::json::parse(once.out);
  EXPECT_EQ(event["type"], "stats");
  EXPECT_EQ(event["id"], "ev");
  const nlohmann::json& data = event["data"];
  EXPECT_EQ(data["memory"]["usage"]["limit"], 24 << 20) << data.dump();
  EXPECT_GT(data["memory"]["usage"]["usage"].get<uint64_t>(), 0u);
  EXPECT_EQ(data["pids"]["current"], 1) << "the waiting init";
  EXPECT_EQ(data["pids"]["limit"], 30);
  EXPECT_TRUE(data["cpu"]["usage"].contains("total")) << data.dump();
  EXPECT_TRUE(data["memory"]["raw"].contains("rss")) << data.dump();

  ASSERT_EQ(b.oci({"start", "ev"}).exit_code, 0);
  const std::string out = b.path("events.out");
  CliRun stream = run_program(
      {"/bin/sh", "-c",
       "/usr/bin/timeout 30 \"$0\" --root \"$1\" events --interval 10s ev >\"$2\" & events=$!; "
       "until [ -s \"$2\" ] || ! kill -0 $events 2>/dev/null; do sleep 0.05; done; touch \"$3\"; "
       "wait $events",
       oci_binary(), b.state_root(), out, b.path("sig") + "/go"});
  EXPECT_EQ(stream.exit_code, 0) << "returns when the container stops: " << stream.err;
  std::stringstream text;
  text << std::ifstream(out).rdbuf();
  std::istringstream lines(text.str());
  std::vector<std::string> types;
  for (std::string line; std::getline(lines, line);)
    types.push_back(nlohmann::json::parse(line)["type"]);
  EXPECT_EQ(types, (std::vector<std::string>{"stats", "oom"})) << text.str();
  CliRun bad = b.oci({"events", "--interval", "5 parsecs", "ev"});
  EXPECT_EQ(bad.exit_code, 125);
}

// The systemd driver's error where no systemd answers (this host has none; tests/vm's variant
// B drives the driver itself, tests/integration/oci_systemd_test.cpp): the bus and its address
// are named, nothing is made. A cgroupsPath not in systemd form is refused before any bus.
TEST(OciCgroups, SystemdCgroup_WithoutAReachableBus_NamesTheBusAndLeavesNothing) {
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["linux"]["cgroupsPath"] = "system.slice:sandcell-test:sd";
  b.write();
  const std::string missing = "unix:path=" + b.path("no-such-bus");
  CliRun systemd = run_program({"/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=" + missing,
                                "DBUS_SESSION_BUS_ADDRESS=" + missing, oci_binary(), "--root",
                                b.state_root(), "--systemd-cgroup", "create", "-b", b.dir(), "sd"});
  EXPECT_EQ(systemd.exit_code, 125);
  EXPECT_NE(systemd.err.find("--systemd-cgroup: cannot reach systemd's"), std::string::npos)
      << systemd.err;
  EXPECT_NE(systemd.err.find(" at " + missing), std::string::npos) << systemd.err;
  EXPECT_NE(systemd.err.find("No such file or directory"), std::string::npos) << systemd.err;
  if (!fs::is_directory("/run/systemd/system")) {
    EXPECT_NE(systemd.err.find("no systemd runs as init here"), std::string::npos) << systemd.err;
  }
  EXPECT_EQ(b.oci({"state", "sd"}).exit_code, 125) << "nothing was created";
  EXPECT_FALSE(fs::exists(b.state_root() + "/sd"));

  b.config["linux"]["cgroupsPath"] = "/kubepods/pod1/c1";  // cgroupfs form
  b.write();
  CliRun form = b.oci({"--systemd-cgroup", "create", "-b", b.dir(), "sd"});
  EXPECT_EQ(form.exit_code, 125);
  EXPECT_NE(form.err.find("linux.cgroupsPath: with --systemd-cgroup it must be \"slice:prefix:name\""),
            std::string::npos)
      << form.err;
  EXPECT_EQ(b.oci({"state", "sd"}).exit_code, 125);
}

TEST(OciCgroups, Checkpoint_IsRefusedClearly) {
  OciBundle b;
  b.write();
  CliRun checkpoint = b.oci({"checkpoint", "--image-path", "/tmp/x", "sd"});
  EXPECT_EQ(checkpoint.exit_code, 125);
  EXPECT_NE(checkpoint.err.find("checkpoint: not supported by sandcell-oci"), std::string::npos)
      << checkpoint.err;
}

}  // namespace
}  // namespace sandcell::test
