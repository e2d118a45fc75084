// libsandcell-confine.so (runtime/confine/sandcell_confine.h) as a zygote's child would use it:
// dlopen'ed by its path and called in a forked child of this (root) test, which then reports
// what it has become, one "key value" line each, through a pipe; the parent asserts. Nothing is
// left behind: the namespace target is killed and reaped, the cgroup removed.
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/fd_passing.hpp"
#include "sandcell_confine.h"
#include "temp_tree.hpp"

// A namespace of its own: unity builds put several test files in one translation unit.
namespace sandcell::test::confine_library_tests {
namespace {

using runtime::UniqueFd;
using ConfineCall = int (*)(const sandcell_confine_plan*, const sandcell_confine_fds*,
                            const char**);

#if defined(__x86_64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr uint32_t kNativeArch = AUDIT_ARCH_AARCH64;
#endif
constexpr uint32_t kUnprivileged = 1000;
constexpr uint32_t kNamespaces = CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET;

ConfineCall confine_call() {
  static const ConfineCall call = [] {
    void* library = dlopen(SANDCELL_CONFINE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    return library ? reinterpret_cast<ConfineCall>(dlsym(library, "sandcell_confine")) : nullptr;
  }();
  return call;
}

struct Filter {
  uint32_t flags = 0;
  std::vector<sock_filter> program;
};

sandcell_confine_plan blank_header() {
  sandcell_confine_plan header{};
  header.magic = SANDCELL_CONFINE_MAGIC;
  header.version = SANDCELL_CONFINE_VERSION;
  return header;
}

// A plan as the engine writes one: the header, then each part at an offset aligned to 8, the
// cwd last (so that a test can cut its NUL off).
struct PlanBuilder {
  sandcell_confine_plan header = blank_header();
  std::vector<uint32_t> groups;
  std::vector<sandcell_confine_rlimit> rlimits;
  std::vector<std::string> writable;
  std::vector<Filter> filters;
  std::string cwd = "/";

  std::vector<uint64_t> buffer;  // the plan, once built: 8-aligned

  sandcell_confine_plan& build() {
    std::string parts;
    auto append = [&](const void* data, size_t size) {
      parts.resize((parts.size() + 7) / 8 * 8);
      const auto offset = static_cast<uint32_t>(sizeof header + parts.size());
      parts.append(static_cast<const char*>(data), size);
      return offset;
    };
    header.group_count = static_cast<uint32_t>(groups.size());
    header.groups_offset = append(groups.data(), groups.size() * sizeof(uint32_t));
    header.rlimit_count = static_cast<uint32_t>(rlimits.size());
    header.rlimit_offset = append(rlimits.data(), rlimits.size() * sizeof(sandcell_confine_rlimit));
    std::string paths;
    for (const auto& path : writable) paths.append(path).push_back('\0');
    header.landlock_writable_count = static_cast<uint32_t>(writable.size());
    header.landlock_writable_offset = append(paths.data(), paths.size());
    std::vector<sandcell_confine_filter> entries;
    for (const auto& f : filters)
      entries.push_back({.flags = f.flags,
                         .count = static_cast<uint32_t>(f.program.size()),
                         .offset = append(f.program.data(), f.program.size() * sizeof(sock_filter)),
                         .reserved = 0});
    header.filter_count = static_cast<uint32_t>(entries.size());
    header.filter_offset = append(entries.data(), entries.size() * sizeof(sandcell_confine_filter));
    header.cwd_offset = append(cwd.c_str(), cwd.size() + 1);
    header.size = static_cast<uint32_t>(sizeof header + parts.size());
    buffer.assign((header.size + 7) / 8, 0);
    std::memcpy(buffer.data(), &header, sizeof header);
    std::memcpy(reinterpret_cast<char*>(buffer.data()) + sizeof header, parts.data(), parts.size());
    return *reinterpret_cast<sandcell_confine_plan*>(buffer.data());
  }
};

// The strict defaults: uid/gid 1000, no capabilities anywhere, no_new_privs, the umask as it is.
PlanBuilder unprivileged_plan() {
  PlanBuilder plan;
  plan.header.uid = plan.header.gid = kUnprivileged;
  plan.groups = {kUnprivileged};
  plan.header.bounding_drop = ~0ull;
  plan.header.no_new_privs = 1;
  plan.header.umask = 01000;  // > 0777: left alone
  return plan;
}

// No fds but `report` (the report pipe, kept open): the child writes its lines there.
sandcell_confine_fds fds_keeping(int report) {
  sandcell_confine_fds fds{};
  fds.report_fd = -1;
  for (int32_t& fd : fds.namespace_fds) fd = -1;
  fds.stdio[0] = fds.stdio[1] = fds.stdio[2] = -1;
  fds.keep[0] = report;
  fds.keep_count = 1;
  return fds;
}

// Native system calls allowed but getppid, which gets `action`; another ABI is killed.
std::vector<sock_filter> getppid_filter(uint32_t action) {
  return {BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
          BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
          BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
          BPF_STMT(BPF_RET | BPF_K, action),
          BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
}

int landlock_abi() {
  return static_cast<int>(syscall(SYS_landlock_create_ruleset, nullptr, 0, 1 /* VERSION */));
}

void say(int fd, const std::string& key, const std::string& value) {
  const std::string line = key + " " + value + "\n";
  ssize_t ignored = write(fd, line.data(), line.size());
  (void)ignored;
}

std::string confine_result(int ret, const char* step) {
  return std::to_string(ret) + " " + (step ? step : "(none)");
}

// The library's answer, "0 (none)" or "-errno step".
std::string confine(const sandcell_confine_plan& plan, const sandcell_confine_fds& fds) {
  const char* step = nullptr;
  const int ret = confine_call()(&plan, &fds, &step);
  return confine_result(ret, step);
}

std::string errno_of(long ret) {
  return ret < 0 ? strerrorname_np(errno) : "none";
}

std::string link_target(const std::string& path) {
  char target[256] = {};
  const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  return n < 0 ? "errno " + errno_of(n) : std::string(target, n);
}

// The /proc/self/status lines a plan decides, each as a "key value" line.
void say_status(int fd) {
  static const std::set<std::string> fields = {"Uid",    "Gid",        "Groups", "CapInh",
                                               "CapPrm", "CapEff",     "CapBnd", "CapAmb",
                                               "Umask",  "NoNewPrivs", "Seccomp"};
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos || !fields.contains(line.substr(0, colon))) continue;
    std::string value = line.substr(colon + 1);
    std::replace(value.begin(), value.end(), '\t', ' ');
    value.erase(0, value.find_first_not_of(' '));
    value.erase(value.find_last_not_of(' ') + 1);
    say(fd, line.substr(0, colon), value);
  }
}

struct ChildReport {
  std::map<std::string, std::string> values;
  int status = -1;
  std::string operator[](const std::string& key) const {
    auto it = values.find(key);
    return it == values.end() ? "(not reported)" : it->second;
  }
};

// Runs `body` in a forked child, given the write end of the report pipe; returns its lines.
ChildReport run_in_child(const std::function<void(int report)>& body) {
  int ends[2];
  if (pipe(ends) < 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(ends[0]);
    body(ends[1]);
    _exit(0);
  }
  close(ends[1]);
  UniqueFd reading(ends[0]);
  std::string text;
  char chunk[4096];
  for (ssize_t n; (n = read(reading.get(), chunk, sizeof chunk)) > 0;) text.append(chunk, n);
  ChildReport report;
  if (pid > 0) waitpid(pid, &report.status, 0);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto space = line.find(' ');
    report.values[line.substr(0, space)] = space == std::string::npos ? "" : line.substr(space + 1);
  }
  return report;
}

// What a sandbox's init is to the library: a process in new UTS, IPC and network namespaces
// with a hostname of its own, waiting. Killed and reaped with the test.
class NamespaceTarget {
 public:
  explicit NamespaceTarget(const char* hostname) {
    int ready[2];
    if (pipe(ready) < 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (unshare(kNamespaces) < 0 || sethostname(hostname, strlen(hostname)) < 0) _exit(1);
      if (write(ready[1], "r", 1) != 1) _exit(1);
      for (;;) pause();
    }
    close(ready[1]);
    char ack = 0;
    if (pid_ > 0 && read(ready[0], &ack, 1) == 1) {
      const std::string dir = "/proc/" + std::to_string(pid_) + "/ns/";
      ipc_.reset(open((dir + "ipc").c_str(), O_RDONLY | O_CLOEXEC));
      uts_.reset(open((dir + "uts").c_str(), O_RDONLY | O_CLOEXEC));
      net_.reset(open((dir + "net").c_str(), O_RDONLY | O_CLOEXEC));
    }
    close(ready[0]);
  }
  ~NamespaceTarget() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  NamespaceTarget(const NamespaceTarget&) = delete;
  NamespaceTarget& operator=(const NamespaceTarget&) = delete;

  bool ready() const { return ipc_ && uts_ && net_; }
  // Its namespaces, as the supervisor gives a sandbox's to the library.
  void give(sandcell_confine_fds& fds) const {
    fds.namespace_fds[SANDCELL_CONFINE_NS_IPC] = ipc_.get();
    fds.namespace_fds[SANDCELL_CONFINE_NS_UTS] = uts_.get();
    fds.namespace_fds[SANDCELL_CONFINE_NS_NET] = net_.get();
  }
  std::string ns(const char* name) const {
    return link_target("/proc/" + std::to_string(pid_) + "/ns/" + name);
  }

 private:
  pid_t pid_ = -1;
  UniqueFd ipc_, uts_, net_;
};

// A v1 pids cgroup of the test's own under /sys/fs/cgroup/pids/sandcell (and that parent, if
// the test made it), removed at the end.
class ThrowawayCgroup {
 public:
  static constexpr const char* kParent = "/sys/fs/cgroup/pids/sandcell";

  explicit ThrowawayCgroup(const std::string& name)
      : made_parent_(mkdir(kParent, 0755) == 0), path_(std::string(kParent) + "/" + name) {
    made_ = mkdir(path_.c_str(), 0755) == 0;
  }
  ~ThrowawayCgroup() {
    remove();
    if (made_parent_) rmdir(kParent);
  }
  ThrowawayCgroup(const ThrowawayCgroup&) = delete;
  ThrowawayCgroup& operator=(const ThrowawayCgroup&) = delete;

  bool made() const { return made_; }
  std::string tasks() const { return path_ + "/tasks"; }
  bool remove() {
    if (made_ && rmdir(path_.c_str()) == 0) made_ = false;
    return !made_;
  }

 private:
  bool made_parent_;
  std::string path_;
  bool made_ = false;
};

int64_t elapsed_ns(const timespec& from, const timespec& to) {
  return (to.tv_sec - from.tv_sec) * 1'000'000'000ll + (to.tv_nsec - from.tv_nsec);
}

std::string write_file_in(const std::filesystem::path& dir) {
  const int fd = open((dir / "file").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  return errno_of(fd);
}

TEST(ConfineLibrary, FullPlan_JoinsTheNamespacesAndLeavesAConfinedUnprivilegedProcess) {
  ASSERT_NE(confine_call(), nullptr) << dlerror();
  const int abi = landlock_abi();
  if (abi <= 0) GTEST_SKIP() << "no Landlock on this kernel";
  NamespaceTarget target("sc-confine-target");
  ASSERT_TRUE(target.ready());
  TempTree writable("sc-confine-writable"), elsewhere("sc-confine-elsewhere");
  // Both the plan user's, so that only Landlock can refuse the write elsewhere.
  ASSERT_EQ(chown(writable.path.c_str(), kUnprivileged, kUnprivileged), 0);
  ASSERT_EQ(chown(elsewhere.path.c_str(), kUnprivileged, kUnprivileged), 0);
  PlanBuilder plan = unprivileged_plan();
  plan.header.join_namespaces = kNamespaces;
  plan.groups = {kUnprivileged, 2000};
  plan.rlimits = {{.resource = RLIMIT_NOFILE, .reserved = 0, .soft = 64, .hard = 64}};
  plan.header.umask = 027;
  plan.header.landlock_abi = static_cast<uint32_t>(std::min(abi, 7));
  plan.writable = {writable.path};
  plan.filters = {{.program = getppid_filter(SECCOMP_RET_ERRNO | EPERM)}};
  plan.cwd = "/tmp";
  const sandcell_confine_plan& built = plan.build();
  int stdin_pipe[2];
  ASSERT_EQ(pipe(stdin_pipe), 0);
  UniqueFd stdin_end(stdin_pipe[0]);
  ASSERT_EQ(write(stdin_pipe[1], "to stdin", 8), 8);
  close(stdin_pipe[1]);

  ChildReport r = run_in_child([&](int report) {
    const int unlisted = open("/dev/null", O_RDONLY);
    sandcell_confine_fds fds = fds_keeping(report);
    target.give(fds);
    fds.stdio[0] = stdin_end.get();
    fds.stdio[1] = fds.stdio[2] = report;
    const char* step = nullptr;
    timespec start{}, end{};
    clock_gettime(CLOCK_MONOTONIC, &start);
    const int ret = confine_call()(&built, &fds, &step);
    clock_gettime(CLOCK_MONOTONIC, &end);
    say(report, "confine", confine_result(ret, step));
    say(report, "confine_ns", std::to_string(elapsed_ns(start, end)));
    for (const char* ns : {"uts", "ipc", "net"})
      say(report, ns, link_target(std::string("/proc/self/ns/") + ns));
    char hostname[64] = {};
    gethostname(hostname, sizeof hostname - 1);
    say(report, "hostname", hostname);
    char input[16] = {};
    say(report, "stdin", read(0, input, sizeof input - 1) > 0 ? input : "(nothing)");
    say(1, "stdout", "reaches the pipe");
    say(report, "kept_fd_flags", std::to_string(fcntl(report, F_GETFD)));
    say(report, "unlisted_fd", errno_of(fcntl(unlisted, F_GETFD)));
    rlimit nofile{};
    getrlimit(RLIMIT_NOFILE, &nofile);
    say(report, "nofile", std::to_string(nofile.rlim_cur) + "/" + std::to_string(nofile.rlim_max));
    char cwd[256] = {};
    say(report, "cwd", getcwd(cwd, sizeof cwd) ? cwd : "(none)");
    say(report, "write_writable", write_file_in(writable.path));
    say(report, "write_elsewhere", write_file_in(elsewhere.path));
    say(report, "getppid", errno_of(syscall(SYS_getppid)));
    say_status(report);
  });

  ASSERT_EQ(r["confine"], "0 (none)");
  EXPECT_EQ(r.status, 0);
  RecordProperty("confine_ns", r["confine_ns"]);
  for (const char* ns : {"uts", "ipc", "net"}) EXPECT_EQ(r[ns], target.ns(ns)) << ns;
  EXPECT_EQ(r["hostname"], "sc-confine-target");
  EXPECT_EQ(r["stdin"], "to stdin");
  EXPECT_EQ(r["stdout"], "reaches the pipe");
  EXPECT_EQ(r["kept_fd_flags"], std::to_string(FD_CLOEXEC));
  EXPECT_EQ(r["unlisted_fd"], "EBADF");
  EXPECT_EQ(r["nofile"], "64/64");
  EXPECT_EQ(r["cwd"], "/tmp");
  EXPECT_EQ(r["write_writable"], "none");
  EXPECT_EQ(r["write_elsewhere"], "EACCES");
  EXPECT_EQ(r["getppid"], "EPERM");
  EXPECT_EQ(r["Uid"], "1000 1000 1000 1000");
  EXPECT_EQ(r["Gid"], "1000 1000 1000 1000");
  EXPECT_EQ(r["Groups"], "1000 2000");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(r[set], "0000000000000000") << set;
  EXPECT_EQ(r["Umask"], "0027");
  EXPECT_EQ(r["NoNewPrivs"], "1");
  EXPECT_EQ(r["Seccomp"], "2");
}

// The fd SCM_RIGHTS carried in one byte read from `socket`, and that byte.
std::pair<UniqueFd, char> receive_fd(int socket) {
  char byte = 0;
  int fd = -1;
  if (runtime::receive_with_fd(socket, &byte, 1, MSG_DONTWAIT, &fd) != 1) return {};
  return {UniqueFd(fd), byte};
}

TEST(ConfineLibrary, NewListener_IsSentOverTheReportFdAndNotKept) {
  ASSERT_NE(confine_call(), nullptr) << dlerror();
  PlanBuilder plan = unprivileged_plan();
  plan.filters = {{.flags = SECCOMP_FILTER_FLAG_NEW_LISTENER,
                   .program = getppid_filter(SECCOMP_RET_USER_NOTIF)}};
  const sandcell_confine_plan& built = plan.build();
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd supervisor_end(pair[0]), child_end(pair[1]);

  ChildReport r = run_in_child([&](int report) {
    sandcell_confine_fds fds = fds_keeping(report);
    fds.stdio[0] = open("/dev/null", O_RDONLY);
    fds.stdio[1] = fds.stdio[2] = report;
    fds.report_fd = child_end.get();
    say(report, "confine", confine(built, fds));
    say(report, "report_pipe", std::to_string(report));
    DIR* dir = opendir("/proc/self/fd");
    std::string numbers, targets;
    for (dirent* entry; dir && (entry = readdir(dir));) {
      if (entry->d_name[0] == '.' || atoi(entry->d_name) == dirfd(dir)) continue;
      numbers += std::string(numbers.empty() ? "" : " ") + entry->d_name;
      targets += link_target(std::string("/proc/self/fd/") + entry->d_name) + ";";
    }
    say(report, "open_fds", numbers);
    say(report, "open_fd_targets", targets);
  });
  child_end.reset();

  ASSERT_EQ(r["confine"], "0 (none)");
  // stdio and the kept report pipe: the listener and report_fd are closed.
  EXPECT_EQ(r["open_fds"], "0 1 2 " + r["report_pipe"]);
  EXPECT_EQ(r["open_fd_targets"].find("seccomp"), std::string::npos) << r["open_fd_targets"];
  auto [listener, byte] = receive_fd(supervisor_end.get());
  EXPECT_EQ(byte, 'L');
  ASSERT_TRUE(listener);
  EXPECT_EQ(link_target("/proc/self/fd/" + std::to_string(listener.get())),
            "anon_inode:seccomp notify");
}

TEST(ConfineLibrary, CgroupFd_MovesTheProcessIntoThatCgroup) {
  ASSERT_NE(confine_call(), nullptr) << dlerror();
  if (access("/sys/fs/cgroup/pids/tasks", W_OK) != 0) GTEST_SKIP() << "no v1 pids hierarchy";
  const std::string name = "confine-test-" + std::to_string(getpid());
  ThrowawayCgroup cgroup(name);
  ASSERT_TRUE(cgroup.made());
  PlanBuilder plan = unprivileged_plan();
  const sandcell_confine_plan& built = plan.build();
  UniqueFd tasks(open(cgroup.tasks().c_str(), O_WRONLY | O_CLOEXEC));
  ASSERT_TRUE(tasks);

  ChildReport r = run_in_child([&](int report) {
    sandcell_confine_fds fds = fds_keeping(report);
    fds.cgroup_fds[0] = tasks.get();
    fds.cgroup_count = 1;
    say(report, "confine", confine(built, fds));
    std::ifstream cgroups("/proc/self/cgroup");
    for (std::string line; std::getline(cgroups, line);)
      if (line.find(":pids:") != std::string::npos)
        say(report, "pids", line.substr(line.find(":/") + 1));
  });

  ASSERT_EQ(r["confine"], "0 (none)");
  EXPECT_EQ(r["pids"], "/sandcell/" + name);
  EXPECT_TRUE(cgroup.remove()) << "the child was reaped, so its cgroup is empty";
}

struct BadPlan {
  const char* name;
  std::function<void(PlanBuilder&)> before = [](PlanBuilder&) {};
  std::function<void(sandcell_confine_plan&)> after = [](sandcell_confine_plan&) {};
};

TEST(ConfineLibrary, BadPlans_AreRefusedWithEinvalBeforeAnythingChanges) {
  ASSERT_NE(confine_call(), nullptr) << dlerror();
  const std::vector<BadPlan> plans = {
      {.name = "wrong magic", .after = [](auto& p) { p.magic ^= 1; }},
      {.name = "size smaller than the header", .after = [](auto& p) { p.size = sizeof p - 8; }},
      {.name = "groups past the end",
       .after = [](auto& p) { p.groups_offset = (p.size + 7) / 8 * 8; }},
      {.name = "cwd unterminated", .after = [](auto& p) { p.size = p.cwd_offset + 4; }},
      {.name = "cwd relative", .before = [](auto& p) { p.cwd = "tmp"; }},
      {.name = "groups over the max",
       .before = [](auto& p) { p.groups.assign(SANDCELL_CONFINE_MAX_GROUPS + 1, 1000); }},
  };
  for (const BadPlan& bad : plans) {
    SCOPED_TRACE(bad.name);
    PlanBuilder plan = unprivileged_plan();
    plan.cwd = "/tmp";
    bad.before(plan);
    sandcell_confine_plan& built = plan.build();
    bad.after(built);
    ChildReport r = run_in_child([&](int report) {
      const pid_t session = getsid(0);
      sandcell_confine_fds fds = fds_keeping(report);
      say(report, "confine", confine(built, fds));
      say(report, "uid", std::to_string(getuid()));
      say(report, "same_session", getsid(0) == session ? "yes" : "no");
    });
    EXPECT_EQ(r["confine"], std::to_string(-EINVAL) + " check the plan");
    EXPECT_EQ(r["uid"], "0");
    EXPECT_EQ(r["same_session"], "yes");
  }
}

TEST(ConfineLibrary, CapAmbient_KeepsTheCapabilityForAnUnprivilegedUser) {
  ASSERT_NE(confine_call(), nullptr) << dlerror();
  const uint64_t bind = 1ull << CAP_NET_BIND_SERVICE;
  PlanBuilder plan = unprivileged_plan();
  plan.header.bounding_drop = ~bind;
  plan.header.cap_effective = plan.header.cap_permitted = plan.header.cap_inheritable = bind;
  plan.header.cap_ambient = bind;
  const sandcell_confine_plan& built = plan.build();

  ChildReport r = run_in_child([&](int report) {
    sandcell_confine_fds fds = fds_keeping(report);
    say(report, "confine", confine(built, fds));
    say_status(report);
  });

  ASSERT_EQ(r["confine"], "0 (none)");
  EXPECT_EQ(r["Uid"], "1000 1000 1000 1000");
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"})
    EXPECT_EQ(r[set], "0000000000000400") << set;
}

}  // namespace
}  // namespace sandcell::test::confine_library_tests
