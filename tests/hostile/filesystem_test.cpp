// Hostile filesystem games: kernel knobs, cgroupfs, the known container-escape CVEs, leaked fds
// and working directories, host sockets and disks, and symlinks planted for the build to follow.
// (The rootfs-unchanged, masked-path, sysrq and /dev checks are in integration/isolation_test.cpp.)
#include <fcntl.h>
#include <openssl/sha.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hostile.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(HostileFilesystem, KernelKnobsUnderProcSysAreReadOnly) {
  // core_pattern with a leading '|' runs a host program as root on the next crash.
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "open-write", "/proc/sys/kernel/core_pattern",
                               "/proc/sys/kernel/core_uses_pid", "/proc/sys/kernel/panic",
                               "/proc/sys/kernel/randomize_va_space", "/proc/sys/vm/overcommit_memory"});
  EXPECT_EQ(stdout_of(r),
            "/proc/sys/kernel/core_pattern errno=EROFS\n/proc/sys/kernel/core_uses_pid errno=EROFS\n"
            "/proc/sys/kernel/panic errno=EROFS\n/proc/sys/kernel/randomize_va_space errno=EROFS\n"
            "/proc/sys/vm/overcommit_memory errno=EROFS\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_EQ(file_text("/proc/sys/kernel/core_pattern").find("sc-probe"), std::string::npos);
}

TEST(HostileFilesystem, SysAndCgroupfsAreReadOnly) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "mkdir /sys/fs/cgroup/evil 2>/dev/null; echo mkdir=$?; "
      "echo 1 > /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null; echo thp=$?; "
      "/bin/sc-probe open-write /sys/power/state /sys/kernel/profiling"});
  EXPECT_EQ(stdout_of(r), "mkdir=1\nthp=1\n/sys/power/state errno=EROFS\n/sys/kernel/profiling errno=EROFS\n");
  EXPECT_FALSE(fs::exists("/sys/fs/cgroup/evil"));
  EXPECT_EQ(status_of(r), "ok");
}

// CVE-2022-0492: mount cgroup v1 (directly, or after unshare(CLONE_NEWUSER|NEWCGROUP|NEWNS)),
// set notify_on_release and point release_agent at a script. Each step must fail.
TEST(HostileFilesystem, Cve2022_0492ReleaseAgentChainFails) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "mkdir -p /tmp/cg; mount -t cgroup -o rdma cgroup /tmp/cg 2>/dev/null; echo mount=$?; "
      "unshare -Urm sh -c 'mount -t cgroup -o rdma cgroup /tmp/cg' 2>/dev/null; echo unshare=$?; "
      "for f in $(find / -name release_agent 2>/dev/null); do /bin/sc-probe open-write $f; done; "
      "echo done"});
  EXPECT_EQ(stdout_of(r), "mount=1\nunshare=1\ndone\n") << r.record.value("stderr", "");
  EXPECT_EQ(denied_count(r, "mount"), 1u) << r.record["events"].dump();
  EXPECT_EQ(denied_count(r, "unshare"), 1u) << r.record["events"].dump();
  EXPECT_EQ(status_of(r), "ok");
}

// CVE-2019-5736: a program overwriting the runtime binary through /proc/<pid>/exe. The supervisor
// is not visible; the init (a fork of sandcell) is not dumpable, so its exe link cannot even be
// opened or read; every other exe (the sandbox's own programs) refuses writes.
TEST(HostileFilesystem, Cve2019_5736NoProcExeIsWritable) {
  std::string before = file_text(sandcell_binary());
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "/bin/sc-probe sleep 5 & sleep 0.2; "
      "for e in /proc/self/exe /proc/[0-9]*/exe; do /bin/sc-probe open-write $e; done; "
      "for e in /proc/[0-9]*/exe; do readlink $e; done | sort -u; kill $!"});
  std::string out = stdout_of(r);
  EXPECT_EQ(out.find(" ok\n"), std::string::npos) << out;
  EXPECT_NE(out.find("/proc/1/exe errno=EACCES"), std::string::npos) << out;
  EXPECT_NE(out.find("/proc/2/exe errno=ETXTBSY"), std::string::npos) << out;
  // Only the sandbox's own binaries: busybox (sh, sleep) and sc-probe.
  EXPECT_NE(out.find("/bin/busybox\n/bin/sc-probe\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("sandcell"), std::string::npos) << out;
  EXPECT_EQ(before, file_text(sandcell_binary()));
  EXPECT_EQ(status_of(r), "ok");
}

// The init keeps a few fds for the whole run (the sync socket and, on v1 hosts, the `tasks`
// files of the `sandcell` parents it leaves by at the end): the program must reach none of them,
// or it could move itself out of its limits. The init is not dumpable, so neither /proc/1/fd/N
// nor pidfd_getfd() (both need ptrace access) let it in, even as uid 0 of the sandbox (which may
// list the numbers: the directory is root's).
TEST(HostileFilesystem, InitFdsAreOutOfTheProgramsReach) {
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "init-fds"});
  EXPECT_EQ(stdout_of(r), "proc-fd opened 0 of some errno=EACCES\npidfd_getfd got 0 errno=EPERM\n")
      << r.record.value("stderr", "");
  EXPECT_EQ(status_of(r), "ok");
}

// CVE-2024-21626: an fd the runtime leaks (here: one the caller leaks into sandcell) must not
// reach the program, and the working directory must not be a path through it.
TEST(HostileFilesystem, Cve2024_21626LeakedFdsAndWorkdirThroughProcFd) {
  int leaked = open("/", O_PATH | O_DIRECTORY);  // no O_CLOEXEC: sandcell inherits it
  ASSERT_GE(leaked, 3);
  auto fds = run_in_sandbox({}, {"/bin/sc-probe", "fds"});
  EXPECT_EQ(stdout_of(fds), "0 1 2\n");
  // runc's CVE: a working directory through a leaked fd is the host's "/". sandcell refuses it
  // with a message (getcwd() shows it is unreachable from the sandbox root).
  std::string fd_dir = "/proc/self/fd/" + std::to_string(leaked);
  auto cwd = run_sandcell({"run", "--rootfs", test_rootfs(), "--workdir", fd_dir, "--", "/bin/sh", "-c", "ls"});
  EXPECT_EQ(cwd.exit_code, 125);
  EXPECT_EQ(cwd.out, "");
  EXPECT_NE(cwd.err.find("sandcell: working directory " + fd_dir + " is outside the sandbox root"),
            std::string::npos) << cwd.err;
  auto climb = run_in_sandbox({}, {"/bin/sh", "-c",
      "cd /../../../..; pwd; cat etc/sandcell-test; cd /proc/1/root/../../..; cat etc/sandcell-test"});
  EXPECT_EQ(stdout_of(climb), "/\nsandcell test rootfs\nsandcell test rootfs\n");
  close(leaked);
}

TEST(HostileFilesystem, NoHostSocketsOrDisksAreVisible) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "find / -path /proc -prune -o -path /sys -prune -o \\( -type s -o -type b \\) -print; "
      "tail -n +2 /proc/net/unix | wc -l; ls /run /var/run 2>/dev/null | wc -l"});
  EXPECT_EQ(stdout_of(r), "0\n0\n") << r.record.value("stderr", "");
  EXPECT_EQ(status_of(r), "ok");
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  std::string hex;
  char byte[3];
  for (unsigned char c : digest) {
    snprintf(byte, sizeof byte, "%02x", c);
    hex += byte;
  }
  return hex;
}

TEST(HostileFilesystem, ReadingTheRootfsFromInsideCannotChangeItsHostFiles) {
  std::string before = sha256_hex(file_text(test_rootfs() + "/bin/sc-probe"));
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "cat /bin/sc-probe > /tmp/p; echo x >> /bin/sc-probe; echo $?; truncate -s 0 /bin/busybox; echo $?"});
  EXPECT_EQ(stdout_of(r), "1\n1\n");
  EXPECT_EQ(before, sha256_hex(file_text(test_rootfs() + "/bin/sc-probe")));
  EXPECT_GT(fs::file_size(test_rootfs() + "/bin/busybox"), 0u);
}

// A build step plants symlinks that point at host paths; later steps and the layer writer must
// treat them as what they are inside the image, never follow them on the host.
class PlantedSymlinks : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-hostile-links-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ctx");
    fs::copy_file(test_rootfs() + "/bin/busybox", dir_ / "ctx/busybox");
    std::ofstream(dir_ / "ctx/payload") << "payload\n";
    target_ = dir_ / "host-target";
    fs::create_directories(target_);
    std::ofstream(dir_ / "host-secret") << "host secret\n";
    setenv("SANDCELL_ROOT", (dir_ / "store").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("SANDCELL_ROOT");
    fs::remove_all(dir_);
  }
  fs::path dir_, target_;
};

TEST_F(PlantedSymlinks, BuildNeverFollowsThemOnTheHost) {
  std::ofstream(dir_ / "ctx/Dockerfile")
      << "FROM scratch\nCOPY busybox /bin/busybox\n"
      << "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox ln -s " << target_.string()
      << " /into && /bin/busybox ln -s " << (dir_ / "host-secret").string()
      << " /leak && /bin/busybox ln -s ../../../../../../.." << target_.string() << " /up\"]\n"
      << "COPY payload /into/\nCOPY payload /up/\n";
  auto b = run_sandcell({"build", "-t", "links:1", (dir_ / "ctx").string()});
  // Either the COPY lands inside the image (following the link there) or the build refuses:
  // both are fine, writing to the host is not.
  EXPECT_TRUE(fs::is_empty(target_)) << "a planted symlink redirected a COPY to the host";
  EXPECT_EQ(file_text(dir_ / "host-secret"), "host secret\n");
  if (b.exit_code != 0) {
    EXPECT_EQ(b.exit_code, 125);
    EXPECT_NE(b.err.find("sandcell:"), std::string::npos) << b.err;
    return;
  }
  // Both COPYs landed inside the image, where the links point there, and made the same layer
  // twice (which the run must still be able to stack).
  auto run = run_sandcell({"run", "links:1", "/bin/busybox", "sh", "-c",
                           "/bin/busybox readlink /leak; /bin/busybox cat /leak 2>/dev/null || echo dangling; "
                           "/bin/busybox cat /into/payload /up/payload"});
  EXPECT_EQ(run.out, (dir_ / "host-secret").string() + "\ndangling\npayload\npayload\n") << run.err;
  EXPECT_EQ(run.exit_code, 0);
}

}  // namespace
}  // namespace sandcell::test
