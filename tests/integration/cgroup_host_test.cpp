// The cgroup layer on the real kernel (root): the unified tree (on our hybrid CI host it has only
// hugetlb) and the v1 hierarchies that enforce memory, pids and cpu there. Every test removes
// what it made, also when an assertion fails: the cgroup and child guards are RAII.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/sched.h>  // struct clone_args, CLONE_INTO_CGROUP
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sandcell/runtime/cgroup.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

std::string unique_run_id() {
  std::random_device random;
  std::ostringstream id;
  id << "test-" << std::hex << random() << random();
  return id.str();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<pid_t> listed_pids(const std::string& dir) {
  std::istringstream in(read_file(dir + "/cgroup.procs"));
  std::vector<pid_t> pids;
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

bool lists(const std::string& dir, pid_t pid) {
  const auto pids = listed_pids(dir);
  return std::find(pids.begin(), pids.end(), pid) != pids.end();
}

Limits limits(uint64_t memory, uint64_t pids, double cpus) {
  Limits l;
  l.memory_bytes = memory;
  l.pids = pids;
  l.cpus = cpus;
  return l;
}

// A forked child that waits for start() (so it can be put in a cgroup first), runs `body` with
// a pipe to report one number back, and is SIGKILLed and reaped by the destructor if the test
// did not reap it.
class Child {
 public:
  explicit Child(const std::function<void(int report_fd)>& body) {
    int go[2], report[2];
    if (::pipe2(go, O_CLOEXEC) < 0 || ::pipe2(report, O_CLOEXEC) < 0)
      throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork");
    if (pid_ == 0) {
      ::close(go[1]);
      ::close(report[0]);
      char byte;
      if (::read(go[0], &byte, 1) != 1) ::_exit(100);
      body(report[1]);
      ::_exit(0);
    }
    ::close(go[0]);
    ::close(report[1]);
    go_fd_ = go[1];
    report_fd_ = report[0];
  }
  ~Child() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(go_fd_);
    ::close(report_fd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void start() { ASSERT_EQ(::write(go_fd_, "g", 1), 1); }
  // The number the child reported, or nullopt if it died first.
  std::optional<long> report() {
    long value = 0;
    if (::read(report_fd_, &value, sizeof value) != sizeof value) return std::nullopt;
    return value;
  }
  int wait() {
    int status = 0;
    EXPECT_EQ(::waitpid(pid_, &status, 0), pid_);
    reaped_ = true;
    return status;
  }

 private:
  pid_t pid_ = -1;
  int go_fd_ = -1;
  int report_fd_ = -1;
  bool reaped_ = false;
};

void report(int fd, long value) {
  if (::write(fd, &value, sizeof value) != sizeof value) ::_exit(101);
}

bool killed_by_sigkill(int status) {
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

// Orphans of a test (grandchildren) are reparented to us instead of the host's pid 1, and are
// reaped when the scope ends, so no zombie outlives the test. Declare before the cgroup: the
// cgroup's destructor kills them first.
class SubreaperScope {
 public:
  SubreaperScope() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }
  ~SubreaperScope() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    for (;;) {
      const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid < 0 || std::chrono::steady_clock::now() > deadline) break;
      if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, 0);
  }
  SubreaperScope(const SubreaperScope&) = delete;
  SubreaperScope& operator=(const SubreaperScope&) = delete;
};

[[noreturn]] void sleep_forever() {
  for (;;) ::pause();
}

std::string unified_root() {
  const std::string root = probe_cgroups().v2_root;
  if (root.empty()) ADD_FAILURE() << "no cgroup2 mount on this host";
  return root;
}

// The statfs probe on the way to every run against the mount table: the same mode, unified
// root and v1 hierarchies on this host (systemd's hybrid layout; a unified one on v2 hosts).
TEST(CgroupProbe, StandardLayoutGivesWhatTheMountTableGives) {
  const std::optional<CgroupHost> standard = probe_standard_cgroups();
  ASSERT_TRUE(standard.has_value()) << "/sys/fs/cgroup is not in a layout systemd makes";
  const CgroupHost table = probe_cgroups();
  EXPECT_EQ(standard->mode, table.mode);
  EXPECT_EQ(standard->v2_root, table.v2_root);
  EXPECT_EQ(standard->v1_roots, table.v1_roots);
}

// What it does not recognize it leaves to the mount table: here a tmpfs whose "memory" is only
// a directory, and one with a cgroup mount not named by its controllers.
TEST(CgroupProbe, AnythingElseIsLeftToTheMountTable) {
  const fs::path base = fs::temp_directory_path() / ("sc-probe-" + unique_run_id());
  fs::create_directories(base);
  ASSERT_EQ(mount("sc-probe", base.c_str(), "tmpfs", 0, "size=1m"), 0) << strerror(errno);
  fs::create_directories(base / "memory");
  EXPECT_FALSE(probe_standard_cgroups(base.string()).has_value());
  fs::remove(base / "memory");
  fs::create_directories(base / "odd-name");
  int mounted =
      mount("cgroup", (base / "odd-name").c_str(), "cgroup", 0, "none,name=sc-probe-test");
  int why = errno;
  if (mounted == 0) {
    EXPECT_FALSE(probe_standard_cgroups(base.string()).has_value());
    umount2((base / "odd-name").c_str(), 0);
  }
  umount2(base.c_str(), 0);
  fs::remove_all(base);
  EXPECT_EQ(mounted, 0) << strerror(why);
  EXPECT_FALSE(probe_standard_cgroups((base / "missing").string()).has_value());
}

TEST(CgroupHostV2, UnifiedTree_AddKillAll_KillsChildAndRemoveDeletesDirectory) {
  const std::string root = unified_root();
  if (root.empty()) return;
  auto cgroup = create_cgroup_v2(root, unique_run_id());
  const std::string dir = cgroup->paths().at(0);
  ASSERT_TRUE(fs::is_directory(dir));
  EXPECT_EQ(fs::path(dir).parent_path(), fs::path(root) / kCgroupParent);

  Child child([](int) { sleep_forever(); });
  cgroup->add_process(child.pid());
  EXPECT_TRUE(lists(dir, child.pid()));

  cgroup->kill_all();
  EXPECT_TRUE(killed_by_sigkill(child.wait()));

  cgroup->remove();
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_TRUE(fs::is_directory(fs::path(root) / kCgroupParent));  // the shared parent stays
  EXPECT_NO_THROW(cgroup->remove());                              // idempotent
}

TEST(CgroupHostV2, UnifiedTree_ReportsOnlyLimitsItsControllersEnforce) {
  const std::string root = unified_root();
  if (root.empty()) return;
  auto cgroup = create_cgroup_v2(root, unique_run_id());
  const bool has_memory =
      read_file(root + "/cgroup.controllers").find("memory") != std::string::npos;

  const auto enforced = cgroup->apply(limits(64ull << 20, 16, 0.5));

  // Our hybrid CI host's unified tree has only hugetlb: nothing may claim cgroup-v2 there.
  EXPECT_EQ(enforced.contains("memory_bytes"), has_memory);
  if (!has_memory) {
    EXPECT_FALSE(fs::exists(cgroup->paths().at(0) + "/memory.max"));
  }
}

TEST(CgroupHostV2, UnifiedTree_CloneIntoCgroupFd_StartsChildInside) {
  const std::string root = unified_root();
  if (root.empty()) return;
  auto cgroup = create_cgroup_v2(root, unique_run_id());
  ASSERT_GE(cgroup->clone_into_fd(), 0);

  clone_args args{};
  args.flags = CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>(cgroup->clone_into_fd());
  const long pid = ::syscall(SYS_clone3, &args, sizeof args);
  ASSERT_GE(pid, 0) << std::strerror(errno);
  if (pid == 0) sleep_forever();

  EXPECT_TRUE(lists(cgroup->paths().at(0), static_cast<pid_t>(pid)));
  cgroup->kill_all();
  int status = 0;
  ASSERT_EQ(::waitpid(static_cast<pid_t>(pid), &status, 0), pid);
  EXPECT_TRUE(killed_by_sigkill(status));
}

// v1 tests need a host where memory and pids are v1 hierarchies (our hybrid CI host).
class CgroupHostV1 : public ::testing::Test {
 protected:
  void SetUp() override {
    host_ = probe_cgroups();
    if (host_.mode != CgroupHost::Mode::V1) GTEST_SKIP() << "host cgroup mode is not v1";
    cgroup_ = create_cgroup(host_, unique_run_id());
    enforced_ = cgroup_->apply(limits(64ull << 20, 16, 0.5));
  }
  void TearDown() override {
    if (!cgroup_) return;
    const auto dirs = cgroup_->paths();
    cgroup_->remove();
    for (const auto& dir : dirs) EXPECT_FALSE(fs::exists(dir)) << dir;
  }
  std::string dir_of(const std::string& controller) const {
    return host_.v1_roots.at(controller) + "/" + kCgroupParent + "/" +
           fs::path(cgroup_->paths().at(0)).filename().string();
  }

  SubreaperScope subreaper_;  // first member: destroyed after the cgroup
  CgroupHost host_;
  std::unique_ptr<Cgroup> cgroup_;
  std::map<std::string, Enforcement> enforced_;
};

TEST_F(CgroupHostV1, ApplyLimits_WritesControlFilesAndReportsCgroupV1) {
  EXPECT_EQ(enforced_.at("memory_bytes"), Enforcement::CgroupV1);
  EXPECT_EQ(enforced_.at("pids"), Enforcement::CgroupV1);
  EXPECT_EQ(enforced_.at("cpus"), Enforcement::CgroupV1);
  const std::string memory = dir_of("memory");
  EXPECT_EQ(read_file(memory + "/memory.limit_in_bytes"), "67108864\n");
  if (fs::exists(memory + "/memory.memsw.limit_in_bytes")) {
    EXPECT_EQ(read_file(memory + "/memory.memsw.limit_in_bytes"), "67108864\n");
  }
  EXPECT_EQ(read_file(dir_of("pids") + "/pids.max"), "16\n");
  EXPECT_EQ(read_file(dir_of("cpu") + "/cpu.cfs_period_us"), "100000\n");
  EXPECT_EQ(read_file(dir_of("cpu") + "/cpu.cfs_quota_us"), "50000\n");
}

TEST_F(CgroupHostV1, ApplyLimits_RaisingMemoryAfterwards_KeepsMemswOrdering) {
  EXPECT_NO_THROW(cgroup_->apply(limits(256ull << 20, 16, 0.5)));
  EXPECT_EQ(read_file(dir_of("memory") + "/memory.limit_in_bytes"), "268435456\n");
  EXPECT_NO_THROW(cgroup_->apply(limits(32ull << 20, 16, 0.5)));
  EXPECT_EQ(read_file(dir_of("memory") + "/memory.limit_in_bytes"), "33554432\n");
}

TEST_F(CgroupHostV1, ForkBomb_HitsPidsLimit_ReportedInUsage) {
  Child child([](int fd) {
    long refused = 0;
    for (int i = 0; i < 40; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) sleep_forever();
      if (pid < 0) ++refused;
    }
    report(fd, refused);
    sleep_forever();
  });
  cgroup_->add_process(child.pid());
  child.start();

  const auto refused = child.report();
  ASSERT_TRUE(refused.has_value());
  EXPECT_GT(*refused, 0);
  EXPECT_GT(cgroup_->usage().pids_limit_hits, 0u);

  cgroup_->kill_all();
  EXPECT_TRUE(killed_by_sigkill(child.wait()));
}

TEST_F(CgroupHostV1, MemoryHog_IsOomKilled_ReportedInUsage) {
  Child child([](int fd) {
    constexpr size_t kSize = 200ull << 20;
    auto* block = static_cast<char*>(::malloc(kSize));
    if (block == nullptr) ::_exit(102);
    for (size_t i = 0; i < kSize; i += 4096) block[i] = 1;  // touch every page
    report(fd, 1);
    ::_exit(0);
  });
  cgroup_->add_process(child.pid());
  child.start();

  EXPECT_FALSE(child.report().has_value()) << "allocated 200 MB under a 64 MB limit";
  EXPECT_TRUE(killed_by_sigkill(child.wait()));
  const CgroupUsage usage = cgroup_->usage();
  EXPECT_GE(usage.oom_kills, 1u);
  EXPECT_GT(usage.peak_memory_bytes, 32ull << 20);
  EXPECT_LE(usage.peak_memory_bytes, 64ull << 20);
  EXPECT_GT(usage.cpu_ns, 0u);
}

TEST_F(CgroupHostV1, KillAll_KillsDoubleForkedSetsidGrandchild) {
  Child child([](int fd) {
    int pid_pipe[2];
    if (::pipe(pid_pipe) != 0) ::_exit(102);
    const pid_t middle = ::fork();
    if (middle == 0) {
      ::setsid();
      const pid_t escaped = ::fork();
      if (escaped == 0) sleep_forever();
      report(pid_pipe[1], escaped);
      ::_exit(0);  // orphans `escaped`: only the cgroup still ties it to the run
    }
    // Reported only once `middle` is reaped: `escaped` has been reparented to us by then, so
    // the waitpid below cannot come before the kernel has made it our child.
    long escaped = 0;
    if (::read(pid_pipe[0], &escaped, sizeof escaped) != sizeof escaped) ::_exit(103);
    ::waitpid(middle, nullptr, 0);
    report(fd, escaped);
    sleep_forever();
  });
  cgroup_->add_process(child.pid());
  child.start();
  const auto escaped = child.report();
  ASSERT_TRUE(escaped.has_value());
  const auto escaped_pid = static_cast<pid_t>(*escaped);
  EXPECT_TRUE(lists(dir_of("freezer"), escaped_pid));

  cgroup_->kill_all();

  EXPECT_TRUE(killed_by_sigkill(child.wait()));
  int status = 0;  // reparented to us by the subreaper scope
  ASSERT_EQ(::waitpid(escaped_pid, &status, 0), escaped_pid);
  EXPECT_TRUE(killed_by_sigkill(status));
}

TEST_F(CgroupHostV1, Remove_WithProcessesInside_KillsThemAndDeletesEveryDirectory) {
  Child child([](int) { sleep_forever(); });
  cgroup_->add_process(child.pid());
  const auto dirs = cgroup_->paths();
  std::set<std::string> mounts;  // co-mounted controllers ("cpu,cpuacct") share one directory
  for (const char* controller : {"memory", "pids", "cpu", "cpuacct", "freezer"}) {
    if (host_.v1_roots.contains(controller)) mounts.insert(host_.v1_roots.at(controller));
  }
  EXPECT_EQ(dirs.size(), mounts.size());

  cgroup_->remove();

  EXPECT_TRUE(killed_by_sigkill(child.wait()));
  for (const auto& dir : dirs) EXPECT_FALSE(fs::exists(dir)) << dir;
}

TEST_F(CgroupHostV1, Gc_RemoveCgroupDirOnFrozenLeftover_KillsAndRemovesEveryDirectory) {
  Child child([](int) { sleep_forever(); });
  cgroup_->add_process(child.pid());
  // What a supervisor killed between freeze and thaw leaves behind.
  const std::string state = dir_of("freezer") + "/freezer.state";
  std::ofstream(state) << "FROZEN";
  for (int i = 0; i < 200 && read_file(state) != "FROZEN\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_EQ(read_file(state), "FROZEN\n");

  for (const auto& dir : cgroup_->paths()) EXPECT_TRUE(remove_cgroup_dir(dir)) << dir;

  EXPECT_TRUE(killed_by_sigkill(child.wait()));
}

TEST(CgroupHostGc, RemoveCgroupDir_KillsAndRemovesALeftoverRun) {
  const std::string root = unified_root();
  if (root.empty()) return;
  const std::string dir = root + "/" + kCgroupParent + "/" + unique_run_id();
  auto cgroup = create_cgroup_v2(root, fs::path(dir).filename().string());
  Child child([](int) { sleep_forever(); });
  cgroup->add_process(child.pid());

  EXPECT_TRUE(remove_cgroup_dir(dir));

  EXPECT_TRUE(killed_by_sigkill(child.wait()));
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_FALSE(remove_cgroup_dir(root + "/" + kCgroupParent));
}

}  // namespace
}  // namespace sandcell::runtime
