// `--userns=auto` (root mode hardening, issue 11): inside, the program is root and the image's
// files keep their owners; outside, it is an unprivileged host id of a range no other live run
// holds, and that is who owns what it writes to a bind mount.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"
#include "userns_pool.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

const std::string kPool = "/run/sandcell/userns";

std::string out_of(const CliRun& r) {
  return r.record.is_object() ? r.record.value("stdout", "") : "";
}

std::string details(const CliRun& r) {
  return r.record.is_object() ? r.record.dump() : r.out + r.err;
}

uint32_t uid_base_of(const CliRun& r) {
  return r.record["isolation"]["userns"]["uid_base"].get<uint32_t>();
}

// The slot a mapping's uid base belongs to, as named under /run/sandcell/userns.
std::string slot_of(uint32_t uid_base) {
  runtime::UsernsPool pool = runtime::userns_pool();
  return std::to_string((uid_base - pool.uid_start) / runtime::kUsernsSize);
}

// The slot claimed by a run whose supervisor is `pid`, or "" (waits up to 2 s for it to appear).
// The bounds of these waits only end a failing test: under emulation on one loaded CPU (tests/vm
// in CI) a supervisor took more than the 2 s they once were to claim its range.
std::string claim_of(pid_t supervisor) {
  std::string prefix = std::to_string(supervisor) + "-";
  for (int i = 0; i < 1500; ++i) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(kPool, ec))
      if (fs::read_symlink(entry.path(), ec).string().rfind(prefix, 0) == 0)
        return entry.path().filename();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return "";
}

bool wait_for_process(const std::string& prefix, bool present) {
  for (int i = 0; i < 1500 && processes_matching(prefix).empty() == present; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return processes_matching(prefix).empty() != present;
}

// The "Uid:" or "Gid:" line of /proc/PID/status: real, effective, saved, fs.
std::string status_line(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return line;
  return "";
}

class TempDir {
 public:
  explicit TempDir(const std::string& parent = "/tmp") {
    std::string tmpl = parent + "/sandcell-userns-XXXXXX";
    path_ = mkdtemp(tmpl.data());
    chmod(path_.c_str(), 0777);  // the sandbox's root is an unprivileged host id
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(Userns, InsideTheProgramIsRootAndImageFilesKeepTheirOwners) {
  auto r = run_in_sandbox(
      {"--userns", "auto"},
      {"/bin/sh", "-c", "id -u; id -g; stat -c %u:%g /bin/busybox /etc/passwd /root"});
  ASSERT_EQ(r.exit_code, 0) << details(r);
  EXPECT_EQ(out_of(r), "0\n0\n0:0\n0:0\n0:0\n");
  const auto& isolation = r.record["isolation"];
  EXPECT_NE(std::find(isolation["namespaces"].begin(), isolation["namespaces"].end(), "user"),
            isolation["namespaces"].end())
      << isolation.dump();
  runtime::UsernsPool pool = runtime::userns_pool();
  uint32_t uid_base = uid_base_of(r), gid_base = isolation["userns"]["gid_base"].get<uint32_t>();
  EXPECT_EQ(isolation["userns"]["size"], 65536);
  EXPECT_EQ((uid_base - pool.uid_start) % runtime::kUsernsSize, 0u);
  EXPECT_LT((uid_base - pool.uid_start) / runtime::kUsernsSize, pool.slots);
  EXPECT_EQ(gid_base - pool.gid_start, uid_base - pool.uid_start);
}

TEST(Userns, WithoutTheOptionThereIsNoUserNamespace) {
  auto r = run_in_sandbox({}, {"/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << details(r);
  EXPECT_TRUE(r.record["isolation"]["userns"].is_null());
}

// The kernel's release as (major, minor).
std::pair<unsigned, unsigned> kernel_release() {
  utsname host{};
  unsigned major = 0, minor = 0;
  if (uname(&host) != 0 || sscanf(host.release, "%u.%u", &major, &minor) != 2) return {0, 0};
  return {major, minor};
}

// Copy-up keeps the owner, a deleted file becomes a whiteout and a directory made over a deleted
// one is opaque. --workdir /usr: Landlock lets the program write there.
CliRun overlay_exercise() {
  return run_in_sandbox(
      {"--userns", "auto", "--workdir", "/usr"},
      {"/bin/sh", "-c",
       "touch /usr/new && stat -c %u:%g /usr/new; "
       "rm -rf /usr/sbin && mkdir /usr/sbin && touch /usr/sbin/x && ls /usr/sbin; "
       "rm /usr/new && ls /usr"});
}

// SANDCELL_USERNS_OVERLAY for the sandcell runs of one test (userns_mounts.hpp).
class OverlaySetting {
 public:
  explicit OverlaySetting(const char* value) { setenv("SANDCELL_USERNS_OVERLAY", value, 1); }
  ~OverlaySetting() { unsetenv("SANDCELL_USERNS_OVERLAY"); }
};

// By default on every kernel: inside the namespace with user.* xattrs where tmpfs has them (6.6),
// else made by the supervisor in the host's user namespace (tests/vm runs 6.1).
TEST(Userns, TheOverlayWorksOverIdmappedLayers) {
  auto r = overlay_exercise();
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 0) << details(r);
  EXPECT_EQ(out_of(r), "0:0\nx\nbin\nsbin\n") << details(r);
  EXPECT_FALSE(r.record.contains("warnings")) << details(r);
}

// The overlay the supervisor makes (what a kernel before 6.6 gets), chosen here on any kernel:
// the same behaviour, the same owners, and it is the sandbox's root.
TEST(Userns, TheOverlayMadeInTheHostsUserNamespaceWorksTheSame) {
  OverlaySetting host("host");
  auto r = overlay_exercise();
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(out_of(r), "0:0\nx\nbin\nsbin\n") << details(r);
  EXPECT_FALSE(r.record.contains("warnings")) << details(r);
  auto mounts =
      run_in_sandbox({"--userns", "auto"}, {"/bin/sh", "-c", "grep ' / / ' /proc/self/mountinfo"});
  EXPECT_NE(
      out_of(mounts).find(" - overlay overlay rw,lowerdir=l0,upperdir=rw/upper,workdir=rw/work"),
      std::string::npos)
      << details(mounts);
  EXPECT_NE(out_of(mounts).find("nosuid,nodev"), std::string::npos) << details(mounts);
}

// The overlay in the sandbox's namespace, chosen on any kernel: before 6.6 its tmpfs upper has no
// user xattrs, an image directory cannot be removed ("rm: can't remove '/usr/sbin': Permission
// denied", then mkdir: "File exists"), and the record says so.
TEST(Userns, AnOverlayInTheSandboxsNamespaceSaysWhatItCannotDoBeforeLinux66) {
  OverlaySetting in_namespace("namespace");
  auto r = overlay_exercise();
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  const auto warnings = r.record.value("warnings", nlohmann::json::array());
  if (kernel_release() >= std::make_pair(6u, 6u)) {
    EXPECT_EQ(out_of(r), "0:0\nx\nbin\nsbin\n") << details(r);
    EXPECT_TRUE(warnings.empty()) << details(r);
  } else {
    EXPECT_TRUE(out_of(r).starts_with("0:0\n")) << details(r);
    ASSERT_EQ(warnings.size(), 1u) << details(r);
    EXPECT_NE(
        warnings[0].get<std::string>().find("has no user xattrs on tmpfs (Linux 6.6 has them)"),
        std::string::npos)
        << details(r);
  }
}

TEST(Userns, OutsideTheSandboxRunsAsTheMappedHostIds) {
  std::string report = "/tmp/sandcell-userns-report-" + std::to_string(getpid()) + ".json";
  pid_t supervisor = spawn_sandcell({"run", "--userns", "auto", "--report", report, "--rootfs",
                                     test_rootfs(), "--", "/bin/sc-probe", "sleep", "3011"});
  ASSERT_TRUE(wait_for_process("/bin/sc-probe sleep 3011", true));
  pid_t sandboxed = processes_matching("/bin/sc-probe sleep 3011").at(0);
  std::string uid_line = status_line(sandboxed, "Uid:"), gid_line = status_line(sandboxed, "Gid:");
  kill(supervisor, SIGTERM);  // the supervisor kills its sandbox and writes the report
  waitpid(supervisor, nullptr, 0);
  auto record = nlohmann::json::parse(std::ifstream(report), nullptr, false);
  fs::remove(report);
  ASSERT_TRUE(record.is_object());
  std::string uid = std::to_string(record["isolation"]["userns"]["uid_base"].get<uint32_t>());
  std::string gid = std::to_string(record["isolation"]["userns"]["gid_base"].get<uint32_t>());
  EXPECT_EQ(uid_line, "Uid:\t" + uid + "\t" + uid + "\t" + uid + "\t" + uid);
  EXPECT_EQ(gid_line, "Gid:\t" + gid + "\t" + gid + "\t" + gid + "\t" + gid);
}

TEST(Userns, FilesWrittenToABindMountAreOwnedByTheMappedIds) {
  TempDir dir;
  std::ofstream(dir.path() + "/host-file") << "host\n";  // owned by the host's root, mode 0644
  auto r = run_in_sandbox({"--userns", "auto", "--mount", dir.path() + ":/data"},
                          {"/bin/sh", "-c",
                           "echo hi > /data/new && mkdir /data/dir && stat -c %u /data/host-file; "
                           "echo x >> /data/host-file || echo refused"});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  // The host's root is nobody inside, and its files are not the sandbox root's to write.
  EXPECT_EQ(out_of(r), "65534\nrefused\n") << details(r);
  struct stat file {
  }, subdir{};
  ASSERT_EQ(stat((dir.path() + "/new").c_str(), &file), 0);
  ASSERT_EQ(stat((dir.path() + "/dir").c_str(), &subdir), 0);
  EXPECT_EQ(file.st_uid, uid_base_of(r));
  EXPECT_EQ(file.st_gid, r.record["isolation"]["userns"]["gid_base"].get<uint32_t>());
  EXPECT_EQ(subdir.st_uid, uid_base_of(r));
}

// `:idmap` binds the directory idmapped with the sandbox's namespace, as the layers are: the
// host's ids are the sandbox's there, and what the sandbox writes is owned by the same ids on
// the host (its root's files are root's), whatever range the run got.
TEST(Userns, IdmappedBindMountKeepsTheHostsIds) {
  // /var/tmp: a disk filesystem on Debian (/tmp may be a tmpfs, which takes idmapped mounts from
  // Linux 6.3 only: the next test).
  TempDir dir("/var/tmp");
  std::ofstream(dir.path() + "/host-file") << "host\n";  // owned by the host's root, mode 0644
  fs::create_directory(dir.path() + "/shared");
  fs::permissions(dir.path() + "/shared", fs::perms::all);
  auto r = run_in_sandbox(
      {"--userns", "auto", "--mount", dir.path() + ":/data:idmap"},
      {"/bin/sh", "-c",
       "echo x >> /data/host-file && stat -c %u /data/host-file && echo hi > /data/new"});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(out_of(r), "0\n") << details(r);
  EXPECT_TRUE(r.record["isolation"]["userns"].is_object());
  auto user = run_in_sandbox(
      {"--userns", "auto", "--user", "1000:1000", "--mount", dir.path() + ":/data:idmap"},
      {"/bin/sh", "-c", "echo hi > /data/shared/by-1000"});
  EXPECT_EQ(user.exit_code, 0) << details(user);
  struct stat file {
  }, by_user{};
  ASSERT_EQ(stat((dir.path() + "/new").c_str(), &file), 0);
  ASSERT_EQ(stat((dir.path() + "/shared/by-1000").c_str(), &by_user), 0);
  EXPECT_EQ(file.st_uid, 0u);
  EXPECT_EQ(by_user.st_uid, 1000u);
  EXPECT_EQ(by_user.st_gid, 1000u);
  std::ifstream host_file(dir.path() + "/host-file");
  std::string first, second;
  host_file >> first >> second;
  EXPECT_EQ(first + second, "hostx");
}

// A tmpfs source (/dev/shm, or /tmp where it is a tmpfs) is idmapped from Linux 6.3 on; an older
// kernel (Debian 12's 6.1, the VM guest's) refuses it with EINVAL, and the error says why.
TEST(Userns, IdmappedTmpfsSourceWorksOrTheErrorNamesTheKernelItNeeds) {
  TempDir dir("/dev/shm");
  auto r = run_in_sandbox({"--userns", "auto", "--mount", dir.path() + ":/data:idmap"},
                          {"/bin/sh", "-c", "echo hi > /data/new && stat -c %u /data/new"});
  utsname host{};
  ASSERT_EQ(uname(&host), 0);
  unsigned major = 0, minor = 0;
  ASSERT_EQ(sscanf(host.release, "%u.%u", &major, &minor), 2) << host.release;
  if (major > 6 || (major == 6 && minor >= 3)) {
    EXPECT_EQ(out_of(r), "0\n") << details(r);
    struct stat file {};
    ASSERT_EQ(stat((dir.path() + "/new").c_str(), &file), 0);
    EXPECT_EQ(file.st_uid, 0u);
  } else {
    EXPECT_EQ(r.exit_code, 125) << details(r);
    ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
    EXPECT_EQ(r.record.value("status", ""), "runtime_error") << details(r);
    EXPECT_NE(r.record.value("error", "")
                  .find(dir.path() + " is on tmpfs, which has idmapped mounts from Linux 6.3 " +
                        "and this kernel is " + host.release),
              std::string::npos)
        << details(r);
  }
}

TEST(Userns, ReadOnlyBindMountsStayReadOnly) {
  TempDir dir;
  auto r = run_in_sandbox({"--userns", "auto", "--mount", dir.path() + ":/data:ro"},
                          {"/bin/sh", "-c", "touch /data/x 2>/dev/null || echo read-only"});
  EXPECT_EQ(out_of(r), "read-only\n") << details(r);
  EXPECT_FALSE(fs::exists(dir.path() + "/x"));
}

TEST(Userns, ConcurrentSandboxesGetDifferentRanges) {
  pid_t first = spawn_sandcell({"run", "--userns", "auto", "--rootfs", test_rootfs(), "--",
                                "/bin/sc-probe", "sleep", "3012"});
  std::string first_slot = claim_of(first);
  ASSERT_FALSE(first_slot.empty()) << "no claim under " << kPool << " for the first run";
  auto second = run_in_sandbox({"--userns", "auto"}, {"/bin/true"});
  ASSERT_EQ(second.exit_code, 0) << details(second);
  EXPECT_NE(slot_of(uid_base_of(second)), first_slot);
  EXPECT_TRUE(fs::is_symlink(kPool + "/" + first_slot)) << "the first run still holds its range";
  kill(first, SIGTERM);
  waitpid(first, nullptr, 0);
  EXPECT_FALSE(fs::is_symlink(kPool + "/" + first_slot)) << "freed when the run ended";
}

TEST(Userns, ManyParallelRunsNeverShareARange) {
  constexpr int kRuns = 6;
  std::vector<CliRun> runs(kRuns);
  std::vector<std::thread> threads;
  for (int i = 0; i < kRuns; ++i)
    threads.emplace_back([&, i] {
      runs[i] = run_in_sandbox({"--userns", "auto"}, {"/bin/sc-probe", "sleep", "1"});
    });
  for (auto& t : threads) t.join();
  std::set<uint32_t> bases;
  for (const CliRun& r : runs) {
    ASSERT_EQ(r.exit_code, 0) << details(r);
    bases.insert(uid_base_of(r));
  }
  EXPECT_EQ(bases.size(), static_cast<size_t>(kRuns));
}

TEST(Userns, RangeIsFreedAfterTheRun) {
  auto r = run_in_sandbox({"--userns", "auto"}, {"/bin/true"});
  ASSERT_EQ(r.exit_code, 0) << details(r);
  EXPECT_FALSE(fs::is_symlink(kPool + "/" + slot_of(uid_base_of(r))));
}

TEST(Userns, RangeOfASigkilledSupervisorIsFreedByGc) {
  prctl(PR_SET_CHILD_SUBREAPER, 1);  // reap the orphaned sandbox pid 1 here
  pid_t supervisor = spawn_sandcell({"run", "--userns", "auto", "--rootfs", test_rootfs(), "--",
                                     "/bin/sc-probe", "sleep", "3013"});
  ASSERT_TRUE(wait_for_process("/bin/sc-probe sleep 3013", true));
  std::string slot = claim_of(supervisor);
  ASSERT_FALSE(slot.empty());
  kill(supervisor, SIGKILL);
  waitpid(supervisor, nullptr, 0);
  EXPECT_TRUE(wait_for_process("/bin/sc-probe sleep 3013", false))
      << "the sandbox outlived its supervisor";
  EXPECT_TRUE(fs::is_symlink(kPool + "/" + slot))
      << "expected the killed run's claim to remain until gc";
  auto gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("userns range " + slot + " "), std::string::npos) << gc.out;
  EXPECT_FALSE(fs::is_symlink(kPool + "/" + slot));
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(Userns, IsolationStillHolds) {
  auto r = run_in_sandbox({"--userns", "auto"},
                          {"/bin/sh", "-c",
                           "sc-probe caps; cat /proc/kcore | wc -c; hostname; "
                           "echo x > /proc/sys/kernel/hostname 2>/dev/null || echo proc-sys-ro"});
  ASSERT_EQ(r.exit_code, 0) << details(r);
  std::string out = out_of(r);
  for (const char* line :
       {"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
        "\n0\nsandcell\nproc-sys-ro\n"})
    EXPECT_NE(out.find(line), std::string::npos) << line << " missing in:\n" << out;
}

TEST(Userns, CgroupLimitsStillHold) {
  auto r = run_in_sandbox({"--userns", "auto", "--memory", "32m"}, {"/bin/sc-probe", "mem", "128"});
  EXPECT_EQ(r.record.value("status", ""), "oom") << details(r);
}

TEST(Userns, IdsOutsideTheMappedRangeAreRefused) {
  auto r = run_sandcell(
      {"run", "--userns", "auto", "--user", "70000", "--rootfs", test_rootfs(), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("maps ids 0-65535"), std::string::npos) << r.err;
}

TEST(Userns, NonRootUserInsideMapsIntoTheRange) {
  auto r = run_in_sandbox({"--userns", "auto", "--user", "1000:1000"}, {"/bin/sc-probe", "ids"});
  ASSERT_EQ(r.exit_code, 0) << details(r);
  EXPECT_EQ(out_of(r), "uid 1000 1000 1000 gid 1000 1000 1000\n");
}

// Hostile: the sandbox's root holds no capability, and even a namespaced CAP_SYS_ADMIN would
// only reach namespaces the sandbox owns. Both layers are checked: the seccomp filter (the
// default profile) and, with seccomp off, the capabilities alone.
TEST(UsernsHostile, MountAndNamespaceCallsFailUnderTheDefaultProfile) {
  for (const char* call :
       {"mount", "umount2", "unshare", "clone-newuser", "setns", "open_tree", "fsopen",
        "mount_setattr", "move_mount", "pivot_root", "sethostname", "capset-raise"}) {
    auto r = run_in_sandbox({"--userns", "auto"}, {"/bin/sc-probe", "syscall", call});
    EXPECT_EQ(out_of(r), std::string(call) + " errno=EPERM\n") << details(r);
  }
}

TEST(UsernsHostile, WithoutSeccompCapabilitiesAloneStopMountTricks) {
  auto r = run_in_sandbox({"--userns", "auto", "--seccomp", "unconfined"},
                          {"/bin/sh", "-c",
                           "mount -t tmpfs none /tmp 2>/dev/null || echo mount-refused; "
                           "unshare -m true 2>/dev/null || echo unshare-refused; "
                           "mount -o remount,rw /proc/sys 2>/dev/null || echo remount-refused; "
                           "umount /proc/kcore 2>/dev/null || echo umount-refused; "
                           "sc-probe syscall sethostname; sc-probe syscall capset-raise"});
  EXPECT_EQ(out_of(r),
            "mount-refused\nunshare-refused\nremount-refused\numount-refused\n"
            "sethostname errno=EPERM\ncapset-raise errno=EPERM\n")
      << details(r);
}

}  // namespace
}  // namespace sandcell::test

namespace sandcell::test {
namespace {

// RunOptions::extra_userns_slots (a zygote's sandbox, sandcell/agent/zygote.hpp): more slots of
// the pool, claimed for the run and mapped after its own at 65536 each, as on_userns reports them;
// refused without a user namespace of the sandbox's own.
TEST(Userns, ExtraSlotsAreClaimedAndMappedAfterTheRunsOwn) {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.user_namespace = runtime::UserNamespace::Auto;
  spec.args = {"/bin/cat", "/proc/self/uid_map", "/proc/self/gid_map"};
  spec.limits.wall_s = 20;
  std::string out;
  std::vector<runtime::UsernsMapping> slots;
  runtime::RunOptions options;
  options.stdin_fd = -1;
  options.extra_userns_slots = 2;
  options.on_userns = [&](const std::vector<runtime::UsernsMapping>& all) { slots = all; };
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    if (s == runtime::Stream::Stdout) out.append(data.data(), data.size());
  };
  runtime::Result result = runtime::run_sandbox(spec, options);
  ASSERT_EQ(result.status, runtime::Status::Ok) << result.error << out;
  ASSERT_EQ(slots.size(), 3u);
  ASSERT_TRUE(result.isolation.userns);
  EXPECT_EQ(result.isolation.userns->uid_base, slots[0].uid_base);
  std::set<uint32_t> distinct;
  std::string uid_map, gid_map;
  for (size_t i = 0; i < slots.size(); ++i) {
    distinct.insert(slots[i].uid_base);
    EXPECT_EQ(slots[i].size, runtime::kUsernsSize);
    uid_map += std::to_string(i * 65536) + " " + std::to_string(slots[i].uid_base) + " 65536\n";
    gid_map += std::to_string(i * 65536) + " " + std::to_string(slots[i].gid_base) + " 65536\n";
  }
  EXPECT_EQ(distinct.size(), 3u);
  // The kernel's own format pads the columns; compare the numbers.
  std::istringstream seen(out);
  std::string expected = uid_map + gid_map, line, numbers;
  for (int i = 0; i < 6 && std::getline(seen, line); ++i) {
    std::istringstream words(line);
    std::string a, b, c;
    words >> a >> b >> c;
    numbers += a + " " + b + " " + c + "\n";
  }
  EXPECT_EQ(numbers, expected);
  // Released with the run: none of the three slots is claimed now.
  for (const runtime::UsernsMapping& slot : slots)
    EXPECT_FALSE(fs::exists(kPool + "/" + slot_of(slot.uid_base))) << slot.uid_base;

  runtime::Spec host = spec;
  host.user_namespace = runtime::UserNamespace::Host;
  runtime::Result refused = runtime::run_sandbox(host, options);
  EXPECT_EQ(refused.status, runtime::Status::RuntimeError);
  EXPECT_NE(refused.error.find("extra id slots need a user namespace"), std::string::npos)
      << refused.error;
}

}  // namespace
}  // namespace sandcell::test
