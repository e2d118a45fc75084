// linux.namespaces through the real sandcell-oci binary: a user namespace joined by path (runc's
// order: the new namespaces belong to it; mappings checked against it), namespace paths that are
// not namespaces or not of the entry's type, and a new time namespace with linux.timeOffsets.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

const nlohmann::json kMapping = {{{"containerID", 0}, {"hostID", 200000}, {"size", 65536}}};

ino_t inode_of(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) throw std::runtime_error("stat " + path);
  return st.st_ino;
}

// The inode of the user namespace that owns namespace file `path` (NS_GET_USERNS).
ino_t owner_of(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("open " + path);
  int owner = ioctl(fd, NS_GET_USERNS);
  close(fd);
  if (owner < 0) throw std::runtime_error("NS_GET_USERNS " + path);
  struct stat st {};
  fstat(owner, &st);
  close(owner);
  return st.st_ino;
}

std::string proc(pid_t pid, const std::string& rest) { return "/proc/" + std::to_string(pid) + "/" + rest; }

// A detached container in a user namespace of its own (0 → 200000), for others to join.
pid_t run_userns_owner(OciBundle& b, const std::string& id) {
  b.config["linux"]["namespaces"].push_back({{"type", "user"}});
  b.config["linux"]["uidMappings"] = kMapping;
  b.config["linux"]["gidMappings"] = kMapping;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  CliRun run = b.oci({"run", "-d", "-b", b.dir(), id});
  if (run.exit_code != 0) throw std::runtime_error("run -d " + id + ": " + run.err);
  return b.oci({"state", id}).record["pid"];
}

// `b`'s namespaces as `spec` makes them, with the user namespace joined by path (last entry).
void join_user_namespace(OciBundle& b, pid_t owner) {
  nlohmann::json namespaces = nlohmann::json::array();
  for (const auto& entry : b.config["linux"]["namespaces"])
    if (entry["type"] != "user") namespaces.push_back(entry);
  namespaces.push_back({{"type", "user"}, {"path", proc(owner, "ns/user")}});
  b.config["linux"]["namespaces"] = namespaces;
  b.config["linux"].erase("uidMappings");
  b.config["linux"].erase("gidMappings");
}

// runc's semantics: the user namespace is joined first and every namespace the container makes
// (pid, network, ipc, uts, mount, cgroup) belongs to it; the init is root of it (200000 outside).
TEST(OciNamespaces, JoinedUserNamespace_OwnsTheNewNamespacesAndTheInitIsItsRoot) {
  OciBundle b;
  pid_t owner = run_userns_owner(b, "owner");
  const ino_t userns = inode_of(proc(owner, "ns/user"));
  ASSERT_NE(userns, inode_of("/proc/self/ns/user"));
  join_user_namespace(b, owner);
  b.write();
  CliRun run = b.oci({"run", "-d", "-b", b.dir(), "joiner"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  pid_t joiner = b.oci({"state", "joiner"}).record["pid"];
  EXPECT_EQ(inode_of(proc(joiner, "ns/user")), userns);
  for (const char* ns : {"pid", "net", "ipc", "uts", "mnt", "cgroup"}) {
    EXPECT_NE(inode_of(proc(joiner, std::string("ns/") + ns)), inode_of(proc(owner, std::string("ns/") + ns)))
        << ns << " is new";
    EXPECT_EQ(owner_of(proc(joiner, std::string("ns/") + ns)), userns) << ns << " belongs to the joined user namespace";
  }
  std::string status = read_text(proc(joiner, "status"));
  EXPECT_NE(status.find("Uid:\t200000\t200000\t200000\t200000"), std::string::npos) << status;
  CliRun exec = b.oci({"exec", "joiner", "--", "sh", "-c", "readlink /proc/self/ns/user; id -u"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(exec.out, "user:[" + std::to_string(userns) + "]\n0\n");
}

// A pid namespace the host's user namespace owns (another container's, made without a user
// namespace) is joined together with a user namespace: the spawner joins it before the user
// namespace, from where it still may. (A proc mount there is the kernel's EPERM, as with runc:
// mounting proc needs CAP_SYS_ADMIN over the pid namespace's owner; the joiner goes without.)
TEST(OciNamespaces, JoinedUserNamespace_WithAPidNamespaceTheHostOwns) {
  OciBundle b;
  pid_t owner = run_userns_owner(b, "owner");
  OciBundle plain_bundle;
  plain_bundle.config["process"]["args"] = {"sleep", "1000"};
  plain_bundle.write();
  ASSERT_EQ(plain_bundle.oci({"run", "-d", "-b", plain_bundle.dir(), "plain"}).exit_code, 0);
  pid_t plain = plain_bundle.oci({"state", "plain"}).record["pid"];
  join_user_namespace(b, owner);
  for (auto& entry : b.config["linux"]["namespaces"])
    if (entry["type"] == "pid") entry["path"] = proc(plain, "ns/pid");
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& m : b.config["mounts"])
    if (m["destination"] != "/proc") mounts.push_back(m);
  b.config["mounts"] = mounts;
  b.write();
  CliRun run = b.oci({"run", "-d", "-b", b.dir(), "joiner"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  pid_t joiner = b.oci({"state", "joiner"}).record["pid"];
  EXPECT_EQ(inode_of(proc(joiner, "ns/pid")), inode_of(proc(plain, "ns/pid")));
  EXPECT_EQ(inode_of(proc(joiner, "ns/user")), inode_of(proc(owner, "ns/user")));
  std::string status = read_text(proc(joiner, "status"));
  size_t nspid = status.find("NSpid:\t" + std::to_string(joiner) + "\t");
  EXPECT_NE(nspid, std::string::npos) << "a pid in the host's and in plain's pid namespace: " << status;
}

// runc (specconv setupUserNamespace): mappings next to a joined user namespace must be the
// namespace's own, uid and gid both, in order; anything else is refused before anything is made.
TEST(OciNamespaces, JoinedUserNamespace_MappingsMustMatchItsMaps) {
  OciBundle b;
  pid_t owner = run_userns_owner(b, "owner");
  join_user_namespace(b, owner);
  const std::string field = "linux.namespaces[" + std::to_string(b.config["linux"]["namespaces"].size() - 1) + "].path";
  b.config["linux"]["uidMappings"] = kMapping;
  b.config["linux"]["gidMappings"] = kMapping;
  b.config["process"]["args"] = {"sh", "-c", "readlink /proc/self/ns/user"};
  b.write();
  CliRun same = b.oci({"run", "-b", b.dir(), "same"});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_EQ(same.out, "user:[" + std::to_string(inode_of(proc(owner, "ns/user"))) + "]\n");

  b.config["linux"]["uidMappings"][0]["hostID"] = 300000;
  b.write();
  CliRun other = b.oci({"create", "-b", b.dir(), "other"});
  EXPECT_EQ(other.exit_code, 125);
  EXPECT_NE(other.err.find("linux.uidMappings: 0 300000 65536 does not match the uid_map of the user namespace "
                           "joined by " + field + " (0 200000 65536)"),
            std::string::npos)
      << other.err;

  b.config["linux"]["uidMappings"] = kMapping;
  b.config["linux"].erase("gidMappings");
  b.write();
  CliRun half = b.oci({"create", "-b", b.dir(), "half"});
  EXPECT_EQ(half.exit_code, 125);
  EXPECT_NE(half.err.find("linux.gidMappings: nothing does not match the gid_map"), std::string::npos) << half.err;
  EXPECT_EQ(b.oci({"list", "-q"}).out, "owner\n") << "nothing was left by the refusals";
}

// The runtime-spec: an error if `path` is not a namespace of type `type`. Checked before anything
// is made; a FIFO at the path is not opened for reading (which would block).
TEST(OciNamespaces, NamespacePaths_NotANamespaceOrOfAnotherType_AreRefusedNamingTheEntry) {
  OciBundle b;
  b.config["process"]["args"] = {"true"};
  std::ofstream(b.path("plain")) << "not a namespace\n";
  ASSERT_EQ(mkfifo(b.path("fifo").c_str(), 0600), 0);
  const size_t uts = [&] {
    for (size_t i = 0; i < b.config["linux"]["namespaces"].size(); ++i)
      if (b.config["linux"]["namespaces"][i]["type"] == "uts") return i;
    throw std::runtime_error("no uts entry");
  }();
  const std::string field = "linux.namespaces[" + std::to_string(uts) + "].path";
  struct Case {
    std::string path, expected;
  } cases[] = {
      {b.path("plain"), field + ": " + b.path("plain") + " is not a namespace file"},
      {b.path("fifo"), field + ": " + b.path("fifo") + " is not a namespace file"},
      {"/proc/self/ns/net", field + ": /proc/self/ns/net is a network namespace, not uts"},
      {"/proc/self/ns/user", field + ": /proc/self/ns/user is a user namespace, not uts"},
      {b.path("missing"), field + ": open " + b.path("missing") + ": No such file or directory"},
      {"relative/ns", field + ": 'relative/ns' is not absolute"},
  };
  for (const Case& c : cases) {
    b.config["linux"]["namespaces"][uts]["path"] = c.path;
    b.write();
    CliRun create = b.oci({"create", "-b", b.dir(), "bad"});
    EXPECT_EQ(create.exit_code, 125) << c.path;
    EXPECT_NE(create.err.find(c.expected), std::string::npos) << create.err;
  }
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/memory/sandcell/oci-bad"));
}

// Whole seconds of the probe's "monotonic S boottime S".
std::pair<long long, long long> clocks_of(const std::string& out) {
  std::istringstream in(out);
  std::string m, bt;
  long long monotonic = -1, boottime = -1;
  in >> m >> monotonic >> bt >> boottime;
  return {monotonic, boottime};
}

// A new time namespace with linux.timeOffsets: the offsets are written before the init enters it,
// so the container's CLOCK_MONOTONIC and CLOCK_BOOTTIME (and /proc/uptime) are shifted; `exec`
// enters the same time namespace. Lower bounds only: the offsets are far above this host's uptime.
TEST(OciNamespaces, TimeOffsets_ShiftTheContainersClocks) {
  const long long host_boottime = std::stoll(read_text("/proc/uptime"));
  OciBundle b;
  b.config["linux"]["namespaces"].push_back({{"type", "time"}});
  b.config["linux"]["timeOffsets"] = {{"monotonic", {{"secs", 100000000}, {"nanosecs", 5}}},
                                      {"boottime", {{"secs", 200000000}}}};
  b.config["process"]["args"] = {"sh", "-c", "sc-probe clocks; cut -d. -f1 /proc/uptime; cat /proc/self/timens_offsets"};
  b.write();
  CliRun run = b.oci({"run", "-b", b.dir(), "timens"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::istringstream lines(run.out);
  std::string probe, uptime;
  std::getline(lines, probe);
  std::getline(lines, uptime);
  auto [monotonic, boottime] = clocks_of(probe);
  EXPECT_GE(monotonic, 100000000) << run.out;
  EXPECT_GE(boottime, 200000000) << run.out;
  EXPECT_GE(std::stoll(uptime), 200000000) << "/proc/uptime is CLOCK_BOOTTIME";
  EXPECT_LT(host_boottime, 100000000) << "this host's own clocks are below the offsets";
  std::string offsets, word;
  for (std::istringstream rest(lines.str().substr(static_cast<size_t>(lines.tellg()))); rest >> word;)
    offsets += word + " ";
  EXPECT_EQ(offsets, "monotonic 100000000 5 boottime 200000000 0 ") << "timens_offsets inside";

  // A detached one, entered by `exec`; with a user namespace of its own too.
  b.config["linux"]["namespaces"].push_back({{"type", "user"}});
  b.config["linux"]["uidMappings"] = kMapping;
  b.config["linux"]["gidMappings"] = kMapping;
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  ASSERT_EQ(b.oci({"run", "-d", "-b", b.dir(), "timens-d"}).exit_code, 0);
  CliRun exec = b.oci({"exec", "timens-d", "--", "sc-probe", "clocks"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_GE(clocks_of(exec.out).first, 100000000) << exec.out;
  EXPECT_GE(clocks_of(exec.out).second, 200000000) << exec.out;
}

// With a joined user namespace the time namespace is made after joining it, so it belongs to it.
TEST(OciNamespaces, TimeOffsets_WithAJoinedUserNamespace_TheTimeNamespaceBelongsToIt) {
  OciBundle b;
  pid_t owner = run_userns_owner(b, "owner");
  join_user_namespace(b, owner);
  b.config["linux"]["namespaces"].push_back({{"type", "time"}});
  b.config["linux"]["timeOffsets"] = {{"boottime", {{"secs", 300000000}}}};
  b.config["process"]["args"] = {"sleep", "1000"};
  b.write();
  CliRun run = b.oci({"run", "-d", "-b", b.dir(), "joined-time"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  pid_t pid = b.oci({"state", "joined-time"}).record["pid"];
  EXPECT_EQ(owner_of(proc(pid, "ns/time")), inode_of(proc(owner, "ns/user")));
  CliRun exec = b.oci({"exec", "joined-time", "--", "sc-probe", "clocks"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_GE(clocks_of(exec.out).second, 300000000) << exec.out;
}

// An offset the kernel refuses (it would put the clock below 0) fails `create` naming the clock,
// and nothing is left: no container, no cgroup, no process.
TEST(OciNamespaces, TimeOffsets_TheKernelsRefusal_NamesTheClockAndLeavesNothing) {
  OciBundle b;
  b.config["linux"]["namespaces"].push_back({{"type", "time"}});
  b.config["linux"]["timeOffsets"] = {{"boottime", {{"secs", -4000000000LL}}}};
  b.config["process"]["args"] = {"true"};
  b.write();
  CliRun create = b.oci({"create", "-b", b.dir(), "negative"});
  EXPECT_EQ(create.exit_code, 125);
  EXPECT_NE(create.err.find("linux.timeOffsets.boottime: the kernel refused -4000000000 s 0 ns (the clock may not go "
                            "below 0 or beyond about 146 years)"),
            std::string::npos)
      << create.err;
  EXPECT_EQ(b.oci({"list", "-q"}).out, "");
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/memory/sandcell/oci-negative"));
}

}  // namespace
}  // namespace sandcell::test
