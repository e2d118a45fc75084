// config.json features through the real sandcell-oci binary: hooks, masked and read-only paths,
// sysctl, rlimits, devices, uid mappings, cgroup resources, joining namespaces, CVE-2019-5736.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <sys/capability.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

nlohmann::json hook(const std::string& name, const std::string& dir) {
  // Each hook appends its name to `order` and keeps the state it read on stdin.
  return {{"path", "/bin/sh"},
          {"args", {"sh", "-c", "cat > " + dir + "/" + name + ".json; echo " + name + " >> " + dir + "/order"}}};
}

TEST(OciConfig, Hooks_RunInOrderWithTheStateOnStdin) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  std::string dir = b.path("");
  for (const char* phase : {"prestart", "createRuntime", "createContainer", "poststart", "poststop"})
    b.config["hooks"][phase] = nlohmann::json::array({hook(phase, dir)});  // {json} copies under clang
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "hooked"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_text(dir + "/order"), "prestart\ncreateRuntime\ncreateContainer\npoststart\npoststop\n");
  auto prestart = nlohmann::json::parse(read_text(dir + "/prestart.json"));
  EXPECT_EQ(prestart["id"], "hooked");
  EXPECT_EQ(prestart["status"], "creating");
  EXPECT_GT(prestart["pid"].get<int>(), 0);
  EXPECT_EQ(prestart["bundle"], b.dir());
  EXPECT_EQ(nlohmann::json::parse(read_text(dir + "/poststop.json"))["status"], "stopped");
}

TEST(OciConfig, StartContainerHook_RunsInsideTheContainerBeforeTheProgram) {
  OciBundle b;
  b.config["hostname"] = "hooked-host";
  b.config["process"]["args"] = {"cat", "/tmp/hook-saw"};
  b.config["root"]["readonly"] = false;
  b.config["mounts"].push_back({{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                                {"options", {"size=1m"}}});
  // Runs the container's own busybox: it sees the container's hostname and gets the state.
  b.config["hooks"]["startContainer"] = {
      {{"path", "/bin/sh"}, {"args", {"sh", "-c", "echo $(hostname) $(grep -o '\"status\":\"created\"') > /tmp/hook-saw"}}}};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "starthook"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "hooked-host \"status\":\"created\"\n");
  b.config["hooks"]["startContainer"] = {{{"path", "/bin/false"}}};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "starthook2"}).exit_code, 0);
  CliRun start = b.oci({"start", "starthook2"});
  EXPECT_EQ(start.exit_code, 125);
  EXPECT_NE(start.err.find("hooks.startContainer[0] (/bin/false) failed"), std::string::npos) << start.err;
}

// The namespaces a process is in, one readlink per line, in a fixed order.
std::string namespaces_of(const std::string& proc_dir) {
  std::string out;
  for (const char* ns : {"mnt", "net", "uts", "ipc", "pid", "user"})
    out += std::filesystem::read_symlink(proc_dir + "/ns/" + ns).string() + "\n";
  return out;
}

// runtime-spec config.md: createRuntime in the runtime's namespaces, createContainer in the
// container's (its path resolved in the runtime's), both after the mounts are made and before
// pivot_root, with the state ("creating") on stdin. The observable for "before pivot_root": a
// mount point in /proc/<pid>/mountinfo is shown relative to that process' root, so the
// container's /proc is listed as <rootfs>/proc until the init pivots and as /proc after.
TEST(OciConfig, CreateHooks_RunBeforePivotRoot_CreateContainerInTheContainersNamespaces) {
  OciBundle b;
  b.config["linux"]["namespaces"].push_back({{"type", "user"}});
  b.config["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
  b.config["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
  b.config["process"]["args"] = {"sleep", "1000"};
  // The createContainer hook is root of the container's user namespace (200000 outside).
  std::filesystem::permissions(b.path(""), std::filesystem::perms::others_exec,
                               std::filesystem::perm_options::add);
  std::string out = b.path("out");
  std::filesystem::create_directories(out);
  std::filesystem::permissions(out, std::filesystem::perms::all);
  std::ofstream(out + "/order").flush();  // both hooks append to it
  std::filesystem::permissions(out + "/order", std::filesystem::perms::all);
  std::string rootfs =
      std::filesystem::canonical(b.config["root"]["path"].get<std::string>()).string();
  std::string container_proc = " " + rootfs + "/proc ";  // a mount point in mountinfo
  // Each hook keeps its state and its namespaces, counts the container's /proc in a mountinfo
  // (the init's for createRuntime, its own for createContainer) and appends its name to `order`.
  auto script = [&](const std::string& name, const std::string& mountinfo) {
    return "cat > " + out + "/" + name + ".json; " +
           "for n in mnt net uts ipc pid user; do readlink /proc/self/ns/$n; done > " + out + "/" +
           name + "-ns; " + "grep -c '" + container_proc + "' " + mountinfo + " > " + out + "/" +
           name + "-mounts; " + "echo " + name + " >> " + out + "/order";
  };
  std::string init_mountinfo =
      "/proc/$(sed 's/.*\"pid\":\\([0-9]*\\).*/\\1/' " + out + "/createRuntime.json)/mountinfo";
  b.config["hooks"]["createRuntime"] = {
      {{"path", "/bin/sh"}, {"args", {"sh", "-c", script("createRuntime", init_mountinfo)}}}};
  b.config["hooks"]["createContainer"] = {
      {{"path", "/bin/sh"},
       {"args", {"sh", "-c", script("createContainer", "/proc/self/mountinfo")}}}};
  b.write();
  CliRun create = b.oci({"create", "-b", b.dir(), "nshooks"});
  ASSERT_EQ(create.exit_code, 0) << create.err;
  EXPECT_EQ(read_text(out + "/order"), "createRuntime\ncreateContainer\n");
  pid_t pid = b.oci({"state", "nshooks"}).record["pid"];
  std::string init = "/proc/" + std::to_string(pid);

  std::string host = namespaces_of("/proc/self");
  EXPECT_EQ(read_text(out + "/createRuntime-ns"), host)
      << "createRuntime runs in the runtime's namespaces";
  std::string container = namespaces_of(init);
  EXPECT_EQ(read_text(out + "/createContainer-ns"), container)
      << "createContainer runs in the container's";
  std::istringstream host_lines(host), container_lines(container);
  for (std::string h, c; std::getline(host_lines, h) && std::getline(container_lines, c);)
    EXPECT_NE(h, c) << "the container has a namespace of its own of each type";

  EXPECT_EQ(read_text(out + "/createRuntime-mounts"), "1\n")
      << "createRuntime: the init has mounted the container's /proc and not pivoted yet";
  EXPECT_EQ(read_text(out + "/createContainer-mounts"), "1\n")
      << "createContainer: its mount namespace has /proc under the rootfs' host path";
  EXPECT_EQ(read_text(init + "/mountinfo").find(container_proc), std::string::npos)
      << "after create the init has pivoted: the same observable then says so";

  auto runtime_state = nlohmann::json::parse(read_text(out + "/createRuntime.json"));
  EXPECT_EQ(runtime_state["status"], "creating");
  EXPECT_EQ(runtime_state["pid"], pid);
  auto container_state = nlohmann::json::parse(read_text(out + "/createContainer.json"));
  EXPECT_EQ(container_state["status"], "creating");
  EXPECT_EQ(container_state["pid"], 1)
      << "the init's pid in the container's pid namespace, as runc";
  EXPECT_EQ(container_state["id"], "nshooks");
}

// A failing create-time hook fails create and leaves nothing, not the container nor its cgroup:
// one sandcell-oci runs (prestart) and ones the init runs before pivot_root (createContainer),
// failing or killed at their timeout.
TEST(OciConfig, FailingHook_FailsCreateAndLeavesNothing) {
  struct Case {
    const char* id;
    const char* phase;
    nlohmann::json hook;
    const char* error;
  };
  const Case cases[] = {
      {"badhook", "prestart", {{"path", "/bin/false"}}, "hooks.prestart[0] (/bin/false) failed"},
      {"ccfail",
       "createContainer",
       {{"path", "/bin/false"}},
       "hooks.createContainer[0] (/bin/false) failed with status 1"},
      {"ccslow",
       "createContainer",
       {{"path", "/bin/sleep"}, {"args", {"sleep", "30"}}, {"timeout", 1}},
       "hooks.createContainer[0] (/bin/sleep) timed out after 1s"},
  };
  for (const Case& c : cases) {
    OciBundle b;
    b.config["process"]["args"] = {"true"};
    b.config["hooks"][c.phase] = nlohmann::json::array({c.hook});
    b.write();
    auto begun = std::chrono::steady_clock::now();
    CliRun create = b.oci({"create", "-b", b.dir(), c.id});
    EXPECT_EQ(create.exit_code, 125) << c.id;
    EXPECT_NE(create.err.find(c.error), std::string::npos) << create.err;
    EXPECT_LT(std::chrono::steady_clock::now() - begun, std::chrono::seconds(10)) << c.id;
    EXPECT_EQ(b.oci({"list", "-q"}).out, "") << c.id;
    EXPECT_FALSE(std::filesystem::exists(std::string("/sys/fs/cgroup/pids/sandcell/oci-") + c.id))
        << c.id;
  }
}

TEST(OciConfig, MaskedReadonlySysctlRlimitsAndDevices_AreApplied) {
  OciBundle b;
  b.config["linux"]["maskedPaths"] = {"/proc/cpuinfo", "/proc/kcore"};  // kcore: absent on some kernels
  b.config["linux"]["readonlyPaths"] = {"/proc/sys"};
  b.config["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}};
  b.config["process"]["rlimits"] = {{{"type", "RLIMIT_NOFILE"}, {"soft", 321}, {"hard", 654}}};
  b.config["linux"]["devices"] = {{{"path", "/dev/extra-null"}, {"type", "c"}, {"major", 1}, {"minor", 3},
                                   {"fileMode", 0600}, {"uid", 0}, {"gid", 0}}};
  b.config["process"]["args"] = {"sh", "-c",
      "wc -c < /proc/cpuinfo; cat /proc/sys/net/ipv4/ip_forward; echo 0 > /proc/sys/net/ipv4/ip_forward || echo ro; "
      "ulimit -n; ulimit -Hn; ls -ln /dev/extra-null | cut -c1-10; echo x > /dev/extra-null && echo wrote"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "cfg"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "0\n1\nro\n321\n654\ncrw-------\nwrote\n") << run.err;
}

TEST(OciConfig, PersonalityOomUmaskReadonlyRoot_NoPivotAndPreservedFds) {
  OciBundle b;
  b.config["linux"]["personality"] = {{"domain", "LINUX32"}};
  b.config["process"]["oomScoreAdj"] = 500;
  b.config["process"]["user"]["umask"] = 077;
  b.config["process"]["args"] = {"sh", "-c",
      "uname -m; cat /proc/self/oom_score_adj; umask; touch /new-file 2>/dev/null || echo read-only; cat <&3"};
  b.write();
  // fd 3 of sandcell-oci is passed on with --preserve-fds 1; --no-pivot uses MS_MOVE + chroot.
  std::ofstream(b.path("fd3")) << "from-fd-3\n";
  CliRun run = run_program({"/bin/sh", "-c", "exec 3<\"$0\"; exec \"$@\"", b.path("fd3"), oci_binary(),
                     "--root", b.state_root(), "run", "--no-pivot", "--preserve-fds", "1", "-b", b.dir(), "attrs"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "i686\n500\n0077\nread-only\nfrom-fd-3\n");
}

bool has_cap_sys_resource() {
  cap_t caps = cap_get_proc();
  cap_flag_value_t value = CAP_CLEAR;
  cap_get_flag(caps, CAP_SYS_RESOURCE, CAP_EFFECTIVE, &value);
  cap_free(caps);
  return value == CAP_SET;
}

TEST(OciConfig, RlimitAboveTheHardLimit_NamesTheLimitWithoutCapSysResource) {
  rlimit current{};
  getrlimit(RLIMIT_NPROC, &current);
  if (current.rlim_max == RLIM_INFINITY) GTEST_SKIP() << "RLIMIT_NPROC is unlimited here: nothing is above it";
  OciBundle b;
  b.config["process"]["rlimits"] = {{{"type", "RLIMIT_NPROC"}, {"soft", 1}, {"hard", current.rlim_max + 1}}};
  b.config["process"]["args"] = {"true"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "rl"});
  if (has_cap_sys_resource()) {
    EXPECT_EQ(run.exit_code, 0) << run.err;  // may be raised: it is
  } else {
    EXPECT_EQ(run.exit_code, 125);
    EXPECT_NE(run.err.find("RLIMIT_NPROC hard limit"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("--ulimit nproc="), std::string::npos) << run.err;
  }
}

TEST(OciConfig, UidMappings_RunTheContainerInAUserNamespace) {
  OciBundle b;
  b.config["linux"]["namespaces"].push_back({{"type", "user"}});
  b.config["linux"]["uidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
  b.config["linux"]["gidMappings"] = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  ASSERT_EQ(b.oci({"run", "-d", "-b", b.dir(), "userns"}).exit_code, 0);
  CliRun exec = b.oci({"exec", "userns", "--", "sh", "-c", "cat /proc/self/uid_map; id -u"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_NE(exec.out.find("0     200000      65536"), std::string::npos) << exec.out;
  EXPECT_EQ(exec.out.substr(exec.out.rfind('\n', exec.out.size() - 2) + 1), "0\n");
  pid_t pid = b.oci({"state", "userns"}).record["pid"];
  std::string status = read_text("/proc/" + std::to_string(pid) + "/status");
  EXPECT_NE(status.find("Uid:\t200000\t200000\t200000\t200000"), std::string::npos) << "root inside is 200000 outside";
}

TEST(OciConfig, Resources_AreWrittenToTheContainersCgroup) {
  OciBundle b;
  b.config["linux"]["resources"]["memory"] = {{"limit", 64 << 20}};
  b.config["linux"]["resources"]["pids"] = {{"limit", 20}};
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "res"}).exit_code, 0);
  EXPECT_EQ(read_text("/sys/fs/cgroup/memory/sandcell/oci-res/memory.limit_in_bytes"), std::to_string(64 << 20) + "\n");
  EXPECT_EQ(read_text("/sys/fs/cgroup/pids/sandcell/oci-res/pids.max"), "20\n");
  ASSERT_EQ(b.oci({"update", "--memory", "32m", "--pids-limit", "10", "res"}).exit_code, 0);
  EXPECT_EQ(read_text("/sys/fs/cgroup/memory/sandcell/oci-res/memory.limit_in_bytes"), std::to_string(32 << 20) + "\n");
  EXPECT_EQ(read_text("/sys/fs/cgroup/pids/sandcell/oci-res/pids.max"), "10\n");
}

std::string sha256_of(const std::string& path) {
  std::string data = read_text(path);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr);
  return std::string(reinterpret_cast<char*>(digest), length);
}

// A detached container running `sleep 1000` named `hostname`, for others to join; its init's pid.
pid_t run_sleeper(OciBundle& b, const std::string& hostname, const std::string& id) {
  b.config["hostname"] = hostname;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  CliRun run = b.oci({"run", "-d", "-b", b.dir(), id});
  if (run.exit_code != 0) throw std::runtime_error("run -d " + id + ": " + run.err);
  return b.oci({"state", id}).record["pid"];
}

// B joins A's pid and uts namespaces by path and waits for `start` as a sandcell-oci image:
// from inside A, every visible /proc/<pid>/exe is opened for writing (CVE-2019-5736). Nothing
// may open, and the binary on the host is unchanged.
TEST(OciConfig, JoinedNamespaces_AndNoWritablePathBackToTheRuntime) {
  std::string before = sha256_of(oci_binary());
  OciBundle a;
  pid_t a_pid = run_sleeper(a, "host-a", "a");
  std::string ns = "/proc/" + std::to_string(a_pid) + "/ns/";
  nlohmann::json& namespaces = a.config["linux"]["namespaces"];
  for (auto& entry : namespaces)
    if (entry["type"] == "pid" || entry["type"] == "uts") entry["path"] = ns + entry["type"].get<std::string>();
  a.config.erase("hostname");
  std::filesystem::create_directories(a.path("out"));
  a.config["mounts"].push_back({{"destination", "/home"}, {"type", "bind"}, {"source", a.path("out")},
                                {"options", {"rbind", "rw"}}});
  a.config["process"]["args"] = {"sh", "-c", "hostname > /home/hostname"};
  a.write();
  ASSERT_EQ(a.oci({"create", "-b", a.dir(), "b"}).exit_code, 0);
  CliRun attack = a.oci({"exec", "a", "--", "sh", "-c",
      "n=0; for p in /proc/[0-9]*; do n=$((n+1)); if echo pwned 2>/dev/null > $p/exe; then echo OPENED $p; fi; done; echo seen $n"});
  EXPECT_EQ(attack.out.find("OPENED"), std::string::npos) << attack.out;
  EXPECT_NE(attack.out.find("seen 3"), std::string::npos) << "sleep, b's waiting init and sh: " << attack.out;
  CliRun start = a.oci({"start", "b"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(a.wait_for_status("b", "stopped"), "stopped");
  EXPECT_EQ(read_text(a.path("out/hostname")), "host-a\n") << "b joined a's uts namespace";
  EXPECT_EQ(sha256_of(oci_binary()), before);
}

// A mount namespace kept by a bind mount (what `ip netns`-style tools and some sandboxes hand a
// runtime), unmounted at the end so the namespace goes away.
struct PersistentMountNamespace {
  std::string file;
  explicit PersistentMountNamespace(std::string f) : file(std::move(f)) {
    std::ofstream(file).flush();
    CliRun made = run_program({"/usr/bin/unshare", "--mount=" + file, "--propagation", "private", "true"});
    if (made.exit_code != 0) throw std::runtime_error("unshare --mount=" + file + ": " + made.err);
  }
  ~PersistentMountNamespace() { umount2(file.c_str(), MNT_DETACH); }
};

// runc's semantics: a mount namespace given by path is joined and the root is set up inside it
// (the host's mounts stay as they were); a hostname with a joined uts namespace is set in that
// namespace, so the container it belongs to sees it too.
TEST(OciConfig, JoinedMountAndUtsNamespaces_RootIsSetUpInsideAndHostnameIsSetInTheJoinedOne) {
  OciBundle a;
  pid_t a_pid = run_sleeper(a, "host-a", "a");
  PersistentMountNamespace mnt(a.path("mntns"));
  struct stat ns_file {};
  ASSERT_EQ(stat(mnt.file.c_str(), &ns_file), 0);
  // The host's mounts under this test's tree (other tests may mount elsewhere meanwhile: ctest -j2).
  auto bundle_mounts = [&] {
    std::istringstream all(read_text("/proc/self/mountinfo"));
    std::string mine;
    for (std::string line; std::getline(all, line);)
      if (line.find(a.path("")) != std::string::npos) mine += line + "\n";
    return mine;
  };
  const std::string host_mounts = bundle_mounts();

  for (auto& entry : a.config["linux"]["namespaces"]) {
    if (entry["type"] == "uts") entry["path"] = "/proc/" + std::to_string(a_pid) + "/ns/uts";
    if (entry["type"] == "mount") entry["path"] = mnt.file;
  }
  a.config["hostname"] = "host-b";
  a.config["process"]["args"] = {
      "sh", "-c", "hostname; readlink /proc/self/ns/mnt; test -x /bin/sh && echo root-ok"};
  a.write();
  CliRun b = a.oci({"run", "-b", a.dir(), "b"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "host-b\nmnt:[" + std::to_string(ns_file.st_ino) + "]\nroot-ok\n");
  EXPECT_EQ(a.oci({"exec", "a", "--", "hostname"}).out, "host-b\n")
      << "the hostname was set in a's uts namespace";
  EXPECT_EQ(bundle_mounts(), host_mounts)
      << "the root was set up in the joined namespace";

  a.config["linux"]["namespaces"] = {{{"type", "pid"}}};
  a.write();
  CliRun no_uts = a.oci({"create", "-b", a.dir(), "c"});
  EXPECT_EQ(no_uts.exit_code, 125);
  EXPECT_NE(no_uts.err.find("hostname: setting it needs a uts namespace"), std::string::npos)
      << no_uts.err;
  a.config.erase("hostname");
  a.write();
  CliRun no_mnt = a.oci({"create", "-b", a.dir(), "c"});
  EXPECT_EQ(no_mnt.exit_code, 125);
  EXPECT_NE(no_mnt.err.find("needs a mount namespace"), std::string::npos) << no_mnt.err;
}

// A created container's init waits in the sealed copy of sandcell-oci, not the file on disk. The
// copy holds only what the loader maps (no debug info or section table): it is sealed against
// writes, smaller than the binary, and a well-formed ELF without section headers.
TEST(OciConfig, WaitingInitRunsASealedCopyHoldingOnlyTheLoadedPartOfTheRuntime) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  b.write();
  ASSERT_EQ(b.oci({"create", "-b", b.dir(), "sealed"}).exit_code, 0);
  pid_t pid = b.oci({"state", "sealed"}).record["pid"];
  int fd = open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << strerror(errno);
  int seals = fcntl(fd, F_GET_SEALS);
  // The kernel may allow a write-open of the running memfd; the seals refuse the write itself.
  int writable = open(("/proc/" + std::to_string(pid) + "/exe").c_str(), O_WRONLY | O_CLOEXEC);
  if (writable >= 0) {
    errno = 0;
    EXPECT_EQ(pwrite(writable, "x", 1, 0), -1);
    EXPECT_EQ(errno, EPERM) << strerror(errno);
    close(writable);
  }
  struct stat copy {
  }, binary{};
  fstat(fd, &copy);
  Elf64_Ehdr header{};
  ssize_t n = pread(fd, &header, sizeof header, 0);
  close(fd);
  ASSERT_EQ(stat(oci_binary().c_str(), &binary), 0);
  EXPECT_TRUE(seals >= 0 && (seals & F_SEAL_WRITE) && (seals & F_SEAL_SEAL)) << seals;
  EXPECT_LT(copy.st_size, binary.st_size)
      << "this build has debug info: the copy should leave it out";
  ASSERT_EQ(n, static_cast<ssize_t>(sizeof header));
  EXPECT_EQ(memcmp(header.e_ident, ELFMAG, SELFMAG), 0);
  EXPECT_EQ(header.e_shoff, 0u);
  EXPECT_EQ(header.e_shnum, 0u);
  // Whatever the program headers point at is inside the copy.
  EXPECT_LE(header.e_phoff + header.e_phnum * sizeof(Elf64_Phdr),
            static_cast<uint64_t>(copy.st_size));
  CliRun start = b.oci({"start", "sealed"});
  ASSERT_EQ(start.exit_code, 0) << start.err;
  EXPECT_EQ(b.wait_for_status("sealed", "stopped"), "stopped");
}

}  // namespace
}  // namespace sandcell::test
