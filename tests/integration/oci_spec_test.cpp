// The runtime-spec's MUSTs for Linux that the lifecycle and config tests leave open, through the
// real sandcell-oci binary: the state's fields, what create and start each run, operations on
// missing or wrongly-placed containers, config edits after create, hook failures, default devices
// and /dev links, mount order, inherited namespaces, oom_score_adj left alone, invalid values.
// docs/runtime-spec.md maps every MUST to its test.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <thread>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// A host directory bound read-write at /home in the container, for the program to leave marks.
std::string bind_home(OciBundle& b) {
  std::string out = b.path("home");
  fs::create_directories(out);
  b.config["mounts"].push_back({{"destination", "/home"}, {"type", "bind"}, {"source", out},
                                {"options", {"rbind", "rw"}}});
  return out;
}

// Polls (bounded) for a file the container or a hook writes.
bool wait_for_file(const std::string& path) {
  for (int i = 0; i < 250 && !fs::exists(path); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return fs::exists(path);
}

// A host-side hook that appends `text` to `file`.
nlohmann::json append_hook(const std::string& text, const std::string& file) {
  return nlohmann::json::array({{{"path", "/bin/sh"}, {"args", {"sh", "-c", "cat > /dev/null; echo " + text + " >> " + file}}}});
}

TEST(OciSpec, State_HasTheSpecsFieldsInEveryStatus) {
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["annotations"] = {{"org.example.key", "value"}, {"org.example.empty", ""}};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "st"}).exit_code, 0);
  nlohmann::json created = b.oci({"state", "st"}).record;
  ASSERT_TRUE(created.is_object());
  EXPECT_TRUE(std::regex_match(created.value("ociVersion", ""), std::regex(R"(\d+\.\d+\.\d+)"))) << created;
  EXPECT_EQ(created["id"], "st");
  EXPECT_EQ(created["status"], "created");
  ASSERT_TRUE(created["pid"].is_number_integer());
  pid_t pid = created["pid"];
  EXPECT_EQ(::kill(pid, 0), 0) << "the pid is the container's process, as the host sees it";
  EXPECT_EQ(created["bundle"], b.dir());
  EXPECT_TRUE(fs::path(created["bundle"].get<std::string>()).is_absolute());
  EXPECT_EQ(created["annotations"], b.config["annotations"]);

  ASSERT_EQ(b.oci({"start", "st"}).exit_code, 0);
  nlohmann::json running = b.oci({"state", "st"}).record;
  EXPECT_EQ(running["status"], "running");
  EXPECT_EQ(running["pid"], pid);

  ASSERT_EQ(b.oci({"kill", "st", "KILL"}).exit_code, 0);
  ASSERT_EQ(b.wait_for_status("st", "stopped"), "stopped");
  nlohmann::json stopped = b.oci({"state", "st"}).record;
  EXPECT_EQ(stopped["id"], "st");
  EXPECT_EQ(stopped["bundle"], b.dir());
  EXPECT_EQ(stopped["ociVersion"], created["ociVersion"]);
  EXPECT_EQ(b.oci({"delete", "st"}).exit_code, 0);
}

TEST(OciSpec, Create_RunsTheCreateHooksButNotTheProgram_StartRunsIt) {
  OciBundle b;
  std::string home = bind_home(b);
  b.config["process"]["args"] = {"sh", "-c", "touch /home/ran; exec sleep 1000"};
  for (const char* phase : {"prestart", "createRuntime", "createContainer"})
    b.config["hooks"][phase] = append_hook(phase, b.path("create-hooks"));
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "cr"}).exit_code, 0);
  EXPECT_EQ(read_text(b.path("create-hooks")), "prestart\ncreateRuntime\ncreateContainer\n")
      << "create's hooks have run when create returns";
  EXPECT_FALSE(fs::exists(home + "/ran")) << "create ran the program";
  pid_t pid = b.oci({"state", "cr"}).record["pid"];
  EXPECT_EQ(fs::read_symlink("/proc/" + std::to_string(pid) + "/exe").filename().string().find("sleep"),
            std::string::npos);
  ASSERT_EQ(b.oci({"start", "cr"}).exit_code, 0);
  EXPECT_TRUE(wait_for_file(home + "/ran")) << "start did not run the program";
}

TEST(OciSpec, ConfigJsonEditedAfterCreate_ChangesNothing) {
  OciBundle b;
  std::string home = bind_home(b);
  b.config["process"]["args"] = {"sh", "-c", "echo original > /home/program; exec sleep 1000"};
  b.config["hooks"]["poststart"] = append_hook("original", b.path("poststart"));
  b.config["hooks"]["poststop"] = append_hook("original", b.path("poststop"));
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "ed"}).exit_code, 0);
  b.config["process"]["args"] = {"sh", "-c", "echo edited > /home/program; exec sleep 1000"};
  b.config["hooks"]["poststart"] = append_hook("edited", b.path("poststart"));
  b.config["hooks"]["poststop"] = append_hook("edited", b.path("poststop"));
  b.write();
  ASSERT_EQ(b.oci({"start", "ed"}).exit_code, 0);
  EXPECT_EQ(read_text(b.path("poststart")), "original\n") << "poststart ran before start returned, as created";
  ASSERT_TRUE(wait_for_file(home + "/program"));
  EXPECT_EQ(read_text(home + "/program"), "original\n");
  ASSERT_EQ(b.oci({"kill", "ed", "KILL"}).exit_code, 0);
  ASSERT_EQ(b.wait_for_status("ed", "stopped"), "stopped");
  ASSERT_EQ(b.oci({"delete", "ed"}).exit_code, 0);
  EXPECT_EQ(read_text(b.path("poststop")), "original\n") << "poststop ran before delete returned, as created";
}

TEST(OciSpec, Operations_WithoutAnIdOrOnAMissingContainer_AreErrors) {
  OciBundle b;
  b.write();
  for (const char* verb : {"state", "start", "kill", "delete"}) {
    EXPECT_NE(b.oci({verb}).exit_code, 0) << verb << " without an id";
    CliRun missing = b.oci({verb, "missing"});
    EXPECT_EQ(missing.exit_code, 125) << verb;
    EXPECT_NE(missing.err.find("container missing does not exist"), std::string::npos) << verb << ": " << missing.err;
  }
  EXPECT_NE(b.oci({"create", "-b", b.dir()}).exit_code, 0) << "create without an id";
  EXPECT_EQ(b.oci({"create", "-b", b.path("no-such-bundle"), "nb"}).exit_code, 125);
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, Create_WithATakenOrInvalidId_FailsAndLeavesTheOtherAlone) {
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "taken"}).exit_code, 0);
  pid_t pid = b.oci({"state", "taken"}).record["pid"];
  CliRun again = b.oci({"create", "-b", b.dir(), "taken"});
  EXPECT_EQ(again.exit_code, 125);
  EXPECT_NE(again.err.find("already exists"), std::string::npos) << again.err;
  EXPECT_EQ(b.status("taken"), "created");
  EXPECT_EQ(b.oci({"state", "taken"}).record["pid"], pid);
  for (const char* id : {"", "..", "../escape", "a/b", "with space", "new\nline"}) {
    CliRun bad = b.oci({"create", "-b", b.dir(), id});
    EXPECT_NE(bad.exit_code, 0) << "id '" << id << "'";
  }
  EXPECT_FALSE(fs::exists(b.path("escape")));
  EXPECT_EQ(b.oci({"list", "-q"}).out, "taken\n");
}

TEST(OciSpec, Kill_SendsTheNamedSignal_AStoppedContainerCannotBeStartedOrSignalled) {
  OciBundle b;
  std::string home = bind_home(b);
  b.config["process"]["args"] = {"sh", "-c", "trap 'echo got-usr1 > /home/got; exit 0' USR1; touch /home/ready; "
                                             "while :; do sleep 0.1; done"};
  b.write();
  ASSERT_EQ(b.oci({"run", "-d", "-b", b.dir(), "sig"}).exit_code, 0);
  ASSERT_TRUE(wait_for_file(home + "/ready"));
  ASSERT_EQ(b.oci({"kill", "sig", "USR1"}).exit_code, 0);
  EXPECT_EQ(b.wait_for_status("sig", "stopped"), "stopped");
  EXPECT_EQ(read_text(home + "/got"), "got-usr1\n");
  CliRun start = b.oci({"start", "sig"});
  EXPECT_EQ(start.exit_code, 125);
  EXPECT_NE(start.err.find("is stopped, not created"), std::string::npos) << start.err;
  EXPECT_EQ(b.oci({"kill", "sig", "TERM"}).exit_code, 125);
  EXPECT_EQ(b.status("sig"), "stopped");
}

TEST(OciSpec, FailingPoststartHook_IsAnErrorAndStopsTheContainer_PoststopStillRuns) {
  OciBundle b;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.config["hooks"]["poststart"] = {{{"path", "/bin/false"}}};
  b.config["hooks"]["poststop"] = append_hook("poststop", b.path("poststop"));
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "ps"}).exit_code, 0);
  CliRun start = b.oci({"start", "ps"});
  EXPECT_EQ(start.exit_code, 125);
  EXPECT_NE(start.err.find("hooks.poststart[0] (/bin/false) failed"), std::string::npos) << start.err;
  EXPECT_EQ(b.wait_for_status("ps", "stopped"), "stopped");
  ASSERT_EQ(b.oci({"delete", "ps"}).exit_code, 0);
  EXPECT_EQ(read_text(b.path("poststop")), "poststop\n");
  // `run` does the same and destroys the container itself.
  CliRun run = b.oci({"run", "-b", b.dir(), "ps2"});
  EXPECT_EQ(run.exit_code, 125);
  EXPECT_EQ(read_text(b.path("poststop")), "poststop\npoststop\n");
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, FailingPoststopHook_IsAWarning_DeleteSucceeds) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  b.config["hooks"]["poststop"] = nlohmann::json::array({{{"path", "/bin/false"}}});
  b.config["hooks"]["poststop"].push_back(append_hook("second", b.path("poststop"))[0]);
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "pst"}).exit_code, 0);
  CliRun del = b.oci({"delete", "pst"});
  EXPECT_EQ(del.exit_code, 0) << del.err;
  EXPECT_NE(del.err.find("warning: hook hooks.poststop[0] (/bin/false) failed"), std::string::npos) << del.err;
  EXPECT_EQ(read_text(b.path("poststop")), "second\n") << "the hooks after the failed one ran";
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, FailedCreate_IsDestroyedThenRunsThePoststopHooks) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  b.config["hooks"]["createRuntime"] = {{{"path", "/bin/false"}}};
  b.config["hooks"]["poststop"] = {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "cat > " + b.path("poststop.json")}}}};
  b.write();
  CliRun create = b.oci({"create", "-b", b.dir(), "fc"});
  EXPECT_EQ(create.exit_code, 125);
  EXPECT_NE(create.err.find("hooks.createRuntime[0] (/bin/false) failed"), std::string::npos) << create.err;
  ASSERT_TRUE(fs::exists(b.path("poststop.json")));
  nlohmann::json state = nlohmann::json::parse(read_text(b.path("poststop.json")));
  EXPECT_EQ(state["id"], "fc");
  EXPECT_EQ(state["status"], "stopped");
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, DefaultDevicesAndDevLinks_AreThere) {
  OciBundle b;
  b.config["process"]["args"] = {"sh", "-c",
      "for d in null zero full random urandom tty; do stat -c '%n %F %t:%T' /dev/$d; done; "
      "for l in fd stdin stdout stderr ptmx; do echo /dev/$l '->' $(readlink /dev/$l); done; "
      "echo x > /dev/null && echo null-writes; head -c 3 /dev/zero | wc -c; head -c 5 /dev/urandom | wc -c; "
      "echo x > /dev/full 2>/dev/null || echo full-is-full"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "dev"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out,
            "/dev/null character special file 1:3\n"
            "/dev/zero character special file 1:5\n"
            "/dev/full character special file 1:7\n"
            "/dev/random character special file 1:8\n"
            "/dev/urandom character special file 1:9\n"
            "/dev/tty character special file 5:0\n"
            "/dev/fd -> /proc/self/fd\n"
            "/dev/stdin -> /proc/self/fd/0\n"
            "/dev/stdout -> /proc/self/fd/1\n"
            "/dev/stderr -> /proc/self/fd/2\n"
            "/dev/ptmx -> pts/ptmx\n"
            "null-writes\n3\n5\nfull-is-full\n");
}

TEST(OciSpec, DeviceOverAnExistingFileOfAnotherKind_IsAnError) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  // /dev/shm is a directory (a mount of the default config): not the device asked for.
  b.config["linux"]["devices"] = {{{"path", "/dev/shm"}, {"type", "c"}, {"major", 1}, {"minor", 3}}};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "devclash"});
  EXPECT_NE(run.exit_code, 0) << run.out;
  EXPECT_NE(run.err.find("/dev/shm"), std::string::npos) << run.err;
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, Mounts_InTheListedOrder_ARelativeDestinationIsFromTheRoot) {
  OciBundle b;
  // Two mounts on one destination: the later one is on top. "tmp" is deprecated but MUST be "/tmp".
  b.config["mounts"].push_back({{"destination", "/home"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"size=1m"}}});
  b.config["mounts"].push_back({{"destination", "/home"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"size=2m"}}});
  // With every option of the spec's MUST list that is not a flag tested elsewhere.
  b.config["mounts"].push_back({{"destination", "tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                                {"options", {"defaults", "iversion", "noiversion", "lazytime", "nolazytime", "silent",
                                             "loud", "async", "dirsync", "size=3m"}}});
  b.config["process"]["args"] = {"sh", "-c", "df -k /home /tmp | awk 'NR > 1 { print $6, $2 }'"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "order"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "/home 2048\n/tmp 3072\n");
}

TEST(OciSpec, UnlistedNamespacesAreTheRuntimes_APathOfTheWrongTypeIsAnError) {
  OciBundle b;
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& ns : b.config["linux"]["namespaces"])
    if (ns["type"] != "network" && ns["type"] != "ipc") kept.push_back(ns);
  b.config["linux"]["namespaces"] = kept;
  b.config["process"]["args"] = {"sh", "-c", "for n in net ipc uts; do readlink /proc/self/ns/$n; done"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "inherit"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string host = fs::read_symlink("/proc/self/ns/net").string() + "\n" +
                     fs::read_symlink("/proc/self/ns/ipc").string() + "\n";
  EXPECT_EQ(run.out.substr(0, host.size()), host) << "network and ipc are not listed: the runtime's";
  EXPECT_NE(run.out.substr(host.size()), fs::read_symlink("/proc/self/ns/uts").string() + "\n")
      << "uts is listed without a path: a new one";

  b.config["linux"]["namespaces"].push_back({{"type", "network"}, {"path", "/proc/self/ns/ipc"}});
  b.write();
  CliRun wrong = b.oci({"create", "-b", b.dir(), "wrongtype"});
  EXPECT_EQ(wrong.exit_code, 125) << "a network namespace path naming an ipc namespace";
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, OomScoreAdj_WhenUnsetIsLeftAsTheCallersWhenSetIsWritten) {
  OciBundle b;
  b.config["process"].erase("oomScoreAdj");
  b.config["process"]["args"] = {"cat", "/proc/self/oom_score_adj"};
  b.write();
  // Raising one's own oom_score_adj needs no privilege: the caller runs at 234.
  auto run_at_234 = [&](const std::string& id) {
    return run_program({"/bin/sh", "-c", "echo 234 > /proc/self/oom_score_adj && exec \"$@\"", "sh", oci_binary(),
                        "--root", b.state_root(), "run", "-b", b.dir(), id});
  };
  CliRun unset = run_at_234("oom1");
  EXPECT_EQ(unset.exit_code, 0) << unset.err;
  EXPECT_EQ(unset.out, "234\n");
  b.config["process"]["oomScoreAdj"] = 567;
  b.write();
  CliRun set = run_at_234("oom2");
  EXPECT_EQ(set.exit_code, 0) << set.err;
  EXPECT_EQ(set.out, "567\n");
}

TEST(OciSpec, ConsoleSize_IsIgnoredWithoutATerminal) {
  OciBundle b;
  b.config["process"]["terminal"] = false;
  b.config["process"]["consoleSize"] = {{"height", 25}, {"width", 80}};
  b.config["process"]["args"] = {"echo", "no-tty"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "nocons"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "no-tty\n");
}

// With a terminal the init's pty is bound on /dev/console (OciPodman.Terminal_* sees it). A
// rootfs whose /dev/console is a link (here to a file of the rootfs, with no /dev tmpfs over it)
// is refused before anything is mounted on it: the link's target stays as it was.
TEST(OciSpec, Terminal_ADevConsoleThatIsALinkIsRefused) {
  OciBundle b;
  const fs::path rootfs = b.path("rootfs");
  fs::copy(b.config["root"]["path"].get<std::string>(), rootfs, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::create_directories(rootfs / "dev");
  { std::ofstream(rootfs / "etc/target") << "untouched\n"; }
  fs::create_symlink("/etc/target", rootfs / "dev/console");
  b.config["root"] = {{"path", rootfs.string()}, {"readonly", false}};
  nlohmann::json mounts = nlohmann::json::array();
  for (const nlohmann::json& m : b.config["mounts"])
    if (m["destination"] != "/dev") mounts.push_back(m);
  b.config["mounts"] = mounts;
  b.config["process"]["terminal"] = true;
  b.config["process"]["args"] = {"true"};
  b.write();
  const std::string socket = b.path("console.sock");
  int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(socket.size(), sizeof address.sun_path);
  std::memcpy(address.sun_path, socket.c_str(), socket.size() + 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  CliRun create = b.oci({"create", "-b", b.dir(), "--console-socket", socket, "linkcons"});
  close(listener);
  EXPECT_NE(create.exit_code, 0);
  EXPECT_NE(create.err.find("/dev/console is neither a file nor a device"), std::string::npos) << create.err;
  EXPECT_EQ(read_text((rootfs / "etc/target").string()), "untouched\n");
  EXPECT_TRUE(fs::is_symlink(rootfs / "dev/console"));
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
}

TEST(OciSpec, UnknownCapability_IsAWarningNotAFailure) {
  OciBundle b;
  b.config["process"]["capabilities"]["bounding"].push_back("CAP_NOT_IN_THIS_KERNEL");
  b.config["process"]["args"] = {"echo", "ran"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "unknowncap"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "ran\n");
  EXPECT_NE(run.err.find("warning: process.capabilities.bounding: unknown capability 'CAP_NOT_IN_THIS_KERNEL' is ignored"),
            std::string::npos) << run.err;
}

// Each invalid or unsupported value: create fails naming it, and nothing is made.
TEST(OciSpec, InvalidOrUnsupportedValues_AreErrorsThatCreateNothing) {
  struct Case {
    const char* what;
    std::function<void(nlohmann::json&)> edit;
    const char* error;
  };
  const Case cases[] = {
      {"duplicate rlimit", [](nlohmann::json& c) {
         c["process"]["rlimits"] = {{{"type", "RLIMIT_NOFILE"}, {"soft", 10}, {"hard", 10}},
                                    {{"type", "RLIMIT_NOFILE"}, {"soft", 20}, {"hard", 20}}};
       }, "process.rlimits[1].type: listed twice"},
      {"unknown rlimit", [](nlohmann::json& c) {
         c["process"]["rlimits"] = {{{"type", "RLIMIT_WARP"}, {"soft", 1}, {"hard", 1}}};
       }, "unknown rlimit type 'RLIMIT_WARP'"},
      {"duplicate namespace", [](nlohmann::json& c) { c["linux"]["namespaces"].push_back({{"type", "pid"}}); },
       "namespace 'pid' listed twice"},
      {"relative cwd", [](nlohmann::json& c) { c["process"]["cwd"] = "tmp"; }, "process.cwd: must be an absolute path"},
      {"no args", [](nlohmann::json& c) { c["process"]["args"] = nlohmann::json::array(); }, "process.args: at least one"},
      {"no process", [](nlohmann::json& c) { c.erase("process"); }, "process: missing"},
      {"relative hook path", [](nlohmann::json& c) { c["hooks"]["poststart"] = {{{"path", "bin/true"}}}; },
       "hooks.poststart[0].path: must be absolute"},
      {"zero hook timeout", [](nlohmann::json& c) { c["hooks"]["prestart"] = {{{"path", "/bin/true"}, {"timeout", 0}}}; },
       "hooks.prestart[0].timeout: must be positive"},
      {"relative masked path", [](nlohmann::json& c) { c["linux"]["maskedPaths"] = {"proc/kcore"}; },
       "linux.maskedPaths: 'proc/kcore' is not absolute"},
      {"relative readonly path", [](nlohmann::json& c) { c["linux"]["readonlyPaths"] = {"proc/sys"}; },
       "linux.readonlyPaths: 'proc/sys' is not absolute"},
      {"empty annotation key", [](nlohmann::json& c) { c["annotations"] = {{"", "x"}}; },
       "annotations: a key must not be empty"},
      {"annotation value not a string", [](nlohmann::json& c) { c["annotations"] = {{"k", 1}}; },
       "annotations.k: expected a string"},
      {"missing root directory", [](nlohmann::json& c) { c["root"]["path"] = "/no/such/rootfs"; }, "/no/such/rootfs"},
      {"seccomp rule without names", [](nlohmann::json& c) {
         c["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                                  {"syscalls", {{{"names", nlohmann::json::array()}, {"action", "SCMP_ACT_ERRNO"}}}}};
       }, "names"},
      {"idmapped mount", [](nlohmann::json& c) {
         c["mounts"].push_back({{"destination", "/home"}, {"type", "bind"}, {"source", "/tmp"},
                                {"options", {"rbind", "idmap"}},
                                {"uidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}},
                                {"gidMappings", {{{"containerID", 0}, {"hostID", 1000}, {"size", 1}}}}});
       }, "idmapped mounts are not supported"},
      {"intelRdt without resctrl support", [](nlohmann::json& c) { c["linux"]["intelRdt"] = {{"closID", "x"}}; },
       "linux.intelRdt: Intel RDT (resctrl) is not supported"},
      {"process.scheduler", [](nlohmann::json& c) { c["process"]["scheduler"] = {{"policy", "SCHED_BATCH"}}; },
       "process.scheduler: not supported"},
      {"process.ioPriority", [](nlohmann::json& c) {
         c["process"]["ioPriority"] = {{"class", "IOPRIO_CLASS_IDLE"}, {"priority", 4}};
       }, "process.ioPriority: not supported"},
      {"relative namespace path", [](nlohmann::json& c) {
         nlohmann::json kept = nlohmann::json::array();
         for (const auto& ns : c["linux"]["namespaces"])
           if (ns["type"] != "network") kept.push_back(ns);
         kept.push_back({{"type", "network"}, {"path", "proc/self/ns/net"}});
         c["linux"]["namespaces"] = kept;
       }, "linux.namespaces[5].path: 'proc/self/ns/net' is not absolute"},
      {"memory.checkBeforeUpdate", [](nlohmann::json& c) {
         c["linux"]["resources"]["memory"] = {{"limit", 1 << 26}, {"checkBeforeUpdate", true}};
       }, "linux.resources.memory.checkBeforeUpdate: not supported"},
      {"weightDevice entry without a weight", [](nlohmann::json& c) {
         c["linux"]["resources"]["blockIO"] = {{"weightDevice", {{{"major", 8}, {"minor", 0}}}}};
       }, "linux.resources.blockIO.weightDevice[0]: needs weight or leafWeight"},
      {"rdma entry without a limit", [](nlohmann::json& c) {
         c["linux"]["resources"]["rdma"] = {{"mlx5_1", nlohmann::json::object()}};
       }, "linux.resources.rdma.mlx5_1: needs hcaHandles or hcaObjects"},
      {"seccomp listenerPath", [](nlohmann::json& c) {
         c["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"listenerPath", "/run/agent.sock"}};
       }, "linux.seccomp.listenerPath"},
  };
  for (const Case& test : cases) {
    OciBundle b;
    b.config["process"]["args"] = {"true"};
    test.edit(b.config);
    b.write();
    CliRun create = b.oci({"create", "-b", b.dir(), "invalid"});
    EXPECT_EQ(create.exit_code, 125) << test.what;
    EXPECT_NE(create.err.find(test.error), std::string::npos) << test.what << ": " << create.err;
    EXPECT_EQ(b.oci({"list", "-q"}).out, "") << test.what;
  }
}

}  // namespace
}  // namespace sandcell::test
