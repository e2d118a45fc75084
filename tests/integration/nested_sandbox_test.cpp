// RunOptions::nest_under (docs/architecture.md, "Design B, in the order to build it", step 3):
// the sandbox's user and pid namespaces made children of a zygote's, so that the zygote, which
// holds its capabilities only in its own user namespace, can fork into the sandbox; the forked
// process then joins and confines itself (RunOptions::outside_program, libsandcell-confine.so).
// The zygote here is C++, a fork of the test in a user namespace U_Z and a pid namespace P_Z of
// its own, serving one request at a time on a socket, as a skill's zygote will.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/nsfs.h>
#include <linux/sched.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "outside_support.hpp"
#include "run_state.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/fd_passing.hpp"
#include "sandcell/runtime/result.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell_cli.hpp"
#include "userns_pool.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
// A request to the zygote: the plan's size, which of the sandbox's namespaces come (bit i:
// namespace_fds[i]) and how many cgroup fds. Its fds, in order: the pid namespace, stdin,
// stdout, stderr, the report socket, the namespaces, the cgroups; the plan's bytes follow.
struct Request {
  uint32_t plan_size = 0;
  uint32_t namespaces = 0;
  uint32_t cgroup_count = 0;
};
constexpr size_t kMaxPlan = 64 * 1024;
constexpr size_t kFixedFds = 5;
constexpr size_t kMaxFds = kFixedFds + SANDCELL_CONFINE_NS_COUNT + 8;

// Says why the zygote stops (on the test's stderr), then exits with `code`.
[[noreturn]] void zygote_exit(int code) {
  char line[64];
  const int n = snprintf(line, sizeof line, "test zygote: exit %d, errno %d\n", code, errno);
  ssize_t ignored = write(2, line, static_cast<size_t>(n));
  (void)ignored;
  _exit(code);
}

// The zygote's loop (a fork of the test: system calls only). For each request: fork into the
// init's pid namespace; the child confines itself and execs `argv`; the zygote sends the child's
// pidfd back, then its wait status.
[[noreturn]] void serve_as_zygote(int channel, int release, char* const* argv, ConfineFn confine) {
  char ready;
  if (read(release, &ready, 1) != 1) zygote_exit(1);  // the test has written our maps
  if (syscall(SYS_setresgid, 0, 0, 0) < 0 || syscall(SYS_setresuid, 0, 0, 0) < 0) zygote_exit(2);
  const int own_pid_ns = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  alignas(8) static unsigned char plan[kMaxPlan];
  static char* const env[] = {const_cast<char*>("PATH=/bin:/usr/bin"), nullptr};
  while (true) {
    Request request;
    iovec data[2] = {{.iov_base = &request, .iov_len = sizeof request},
                     {.iov_base = plan, .iov_len = sizeof plan}};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFds)] = {};
    msghdr header{};
    header.msg_iov = data;
    header.msg_iovlen = 2;
    header.msg_control = control;
    header.msg_controllen = sizeof control;
    if (recvmsg(channel, &header, 0) <= 0) zygote_exit(0);
    int fds[kMaxFds];
    size_t count = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&header); c != nullptr; c = CMSG_NXTHDR(&header, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
        count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fds, CMSG_DATA(c), count * sizeof(int));
      }
    sandcell_confine_fds entry{};
    size_t next = kFixedFds;
    for (int i = 0; i < SANDCELL_CONFINE_NS_COUNT; ++i)
      entry.namespace_fds[i] = (request.namespaces >> i) & 1 ? fds[next++] : -1;
    if (count < kFixedFds || request.cgroup_count > 8 || count != next + request.cgroup_count)
      zygote_exit(3);
    entry.stdio[0] = fds[1];
    entry.stdio[1] = fds[2];
    entry.stdio[2] = fds[3];
    entry.report_fd = fds[4];
    entry.cgroup_count = request.cgroup_count;
    for (uint32_t i = 0; i < request.cgroup_count; ++i) entry.cgroup_fds[i] = fds[next + i];
    if (setns(fds[0], CLONE_NEWPID) < 0) zygote_exit(4);
    int pidfd = -1;
    clone_args args{};
    args.flags = CLONE_PIDFD;
    args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
    args.exit_signal = SIGCHLD;
    const long child = syscall(SYS_clone3, &args, sizeof args);
    if (child == 0) {
      const char* step = nullptr;
      if (confine(reinterpret_cast<const sandcell_confine_plan*>(plan), &entry, &step) < 0)
        _exit(125);
      execve(argv[0], argv, env);
      _exit(127);
    }
    setns(own_pid_ns, CLONE_NEWPID);
    for (size_t i = 0; i < count; ++i) close(fds[i]);
    if (child < 0) zygote_exit(5);
    char byte = 'p';
    iovec answer{.iov_base = &byte, .iov_len = 1};
    if (runtime::send_with_fds(channel, {&answer, 1}, {&pidfd, 1}) < 0) zygote_exit(6);
    close(pidfd);
    int status = 0;
    while (waitpid(static_cast<pid_t>(child), &status, 0) < 0 && errno == EINTR) {
    }
    if (send(channel, &status, sizeof status, MSG_NOSIGNAL) < 0) zygote_exit(7);
  }
}

// The zygote: its own user namespace (two claimed slots of sandcell's id pool: its 0..65535 on
// the first, 65536..131071, the sandboxes' range, on the second) and pid namespace (pid 1 there).
class CppZygote {
 public:
  explicit CppZygote(std::vector<std::string> argv)
      : args_(std::move(argv)),
        own_(runtime::userns_pool(), runtime::default_state_root(), runtime::new_run_id()),
        sandboxes_(runtime::userns_pool(), runtime::default_state_root(), runtime::new_run_id()) {
    for (std::string& arg : args_) argv_.push_back(arg.data());
    argv_.push_back(nullptr);
    ConfineFn confine = confine_function();
    if (confine == nullptr) throw Error(ENOENT, "dlopen " SANDCELL_CONFINE_LIBRARY);
    int pair[2], release[2];
    check(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), "socketpair");
    check(pipe2(release, O_CLOEXEC), "pipe");
    channel_.reset(pair[0]);
    clone_args args{};
    args.flags = CLONE_NEWUSER | CLONE_NEWPID;
    args.exit_signal = SIGCHLD;
    const long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
      close(pair[0]);
      close(release[1]);
      serve_as_zygote(pair[1], release[0], argv_.data(), confine);
    }
    close(pair[1]);
    close(release[0]);
    check(pid, "clone3 the zygote");
    pid_ = static_cast<pid_t>(pid);
    const runtime::UsernsMapping& a = own_.mapping();
    const runtime::UsernsMapping& b = sandboxes_.mapping();
    write_file("uid_map", "0 " + std::to_string(a.uid_base) + " 65536\n65536 " +
                              std::to_string(b.uid_base) + " 65536\n");
    write_file("gid_map", "0 " + std::to_string(a.gid_base) + " 65536\n65536 " +
                              std::to_string(b.gid_base) + " 65536\n");
    check(write(release[1], "g", 1), "release the zygote");
    close(release[1]);
    userns_.reset(
        open(("/proc/" + std::to_string(pid_) + "/ns/user").c_str(), O_RDONLY | O_CLOEXEC));
    pidns_.reset(open(("/proc/" + std::to_string(pid_) + "/ns/pid").c_str(), O_RDONLY | O_CLOEXEC));
    nesting_.userns_fd = userns_.get();
    nesting_.pidns_fd = pidns_.get();
    nesting_.base = 65536;
    nesting_.size = 65536;
    nesting_.host = b;
    program_.start = [this](const runtime::OutsideEntry& entry) { return start(entry); };
    program_.wait_status = [this] {
      int status = -1;
      while (recv(channel_.get(), &status, sizeof status, 0) < 0 && errno == EINTR) {
      }
      return status;
    };
  }
  ~CppZygote() {
    if (pid_ <= 0) return;
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

  const runtime::Nesting* nesting() const { return &nesting_; }
  const runtime::OutsideProgram* program() const { return &program_; }
  pid_t pid() const { return pid_; }
  uint32_t own_host_uid() const { return own_.mapping().uid_base; }
  pid_t last_child_host_pid() const { return child_host_pid_; }

 private:
  void write_file(const char* name, const std::string& text) {
    std::ofstream out("/proc/" + std::to_string(pid_) + "/" + name);
    out << text;
    out.flush();
    if (!out) throw Error(EIO, std::string("write the zygote's ") + name);
  }

  runtime::UniqueFd start(const runtime::OutsideEntry& entry) {
    Request request{.plan_size = static_cast<uint32_t>(entry.plan.size()),
                    .namespaces = 0,
                    .cgroup_count = static_cast<uint32_t>(entry.cgroup_fds.size())};
    std::vector<int> fds = {entry.pid_namespace_fd, entry.stdin_fd, entry.stdout_fd,
                            entry.stderr_fd, entry.report_fd};
    for (size_t i = 0; i < entry.namespace_fds.size(); ++i)
      if (entry.namespace_fds[i] >= 0) {
        request.namespaces |= 1u << i;
        fds.push_back(entry.namespace_fds[i]);
      }
    fds.insert(fds.end(), entry.cgroup_fds.begin(), entry.cgroup_fds.end());
    iovec data[2] = {
        {.iov_base = &request, .iov_len = sizeof request},
        {.iov_base = const_cast<unsigned char*>(entry.plan.data()), .iov_len = entry.plan.size()}};
    check(runtime::send_with_fds(channel_.get(), data, fds), "ask the zygote for a program");
    char byte = 0;
    int pidfd = -1;
    const ssize_t got = runtime::receive_with_fd(channel_.get(), &byte, 1, 0, &pidfd);
    runtime::UniqueFd program(pidfd);
    if (got != 1 || byte != 'p') {
      const int err = errno;
      int status = 0;
      // Not a blocking wait: a zygote that is pid 1 of its namespace finishes its exit only once
      // the sandboxes nested in it are reaped, by their supervisor, which is waiting here.
      const bool gone = waitpid(pid_, &status, WNOHANG) == pid_;
      if (gone) pid_ = -1;
      throw Error(EPIPE,
                  "the zygote did not answer (" + std::to_string(got) + " bytes, errno " +
                      std::to_string(err) +
                      (gone ? ", its wait status " + std::to_string(status) : ", still running") +
                      ")");
    }
    std::ifstream info("/proc/self/fdinfo/" + std::to_string(pidfd));
    for (std::string line; std::getline(info, line);)
      if (line.starts_with("Pid:")) child_host_pid_ = std::stoi(line.substr(4));
    return program;
  }

  std::vector<std::string> args_;
  std::vector<char*> argv_;
  runtime::UsernsClaim own_, sandboxes_;
  runtime::UniqueFd channel_, userns_, pidns_;
  pid_t pid_ = -1;
  pid_t child_host_pid_ = 0;
  runtime::Nesting nesting_;
  runtime::OutsideProgram program_;
};

// The inode of the namespace `path`'s parent (NS_GET_PARENT), 0 if there is none to us.
ino_t parent_namespace(const std::string& path) {
  runtime::UniqueFd ns(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return 0;
  runtime::UniqueFd parent(ioctl(ns.get(), NS_GET_PARENT));
  struct stat st {};
  return parent && fstat(parent.get(), &st) == 0 ? st.st_ino : 0;
}

ino_t namespace_inode(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

// The host's view of a process: its uid line and its namespaces' parents.
struct Seen {
  runtime::Result result;
  std::string out, err;
  pid_t init = 0;
  std::string uid_line;  // the program's Uid as the host sees it
  bool user_parent_is_zygotes = false, pid_parent_is_zygotes = false, init_is_our_child = false;
};

std::string uid_line(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("Uid:")) return line;
  return "";
}

const std::string kNestedPortrait =
    self_portrait("ls -ln /bin/busybox | cut -c1-24; touch /tmp/f && ls -ln /tmp/f | cut -c1-24; ");

Seen run_nested(const std::string& script, CppZygote* zygote, bool from_outside) {
  Seen r;
  runtime::Spec spec = spec_with_seccomp();
  spec.user_namespace = runtime::UserNamespace::Auto;
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/sh", "-c", script};
  spec.limits.wall_s = 20;
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  runtime::UniqueFd stdin_read(fds[0]), stdin_write(fds[1]);
  runtime::RunOptions options;
  options.stdin_fd = stdin_read.get();
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    std::string& to = s == runtime::Stream::Stdout ? r.out : r.err;
    to.append(data.data(), data.size());
    if (s != runtime::Stream::Stdout || r.out.find("ready\n") == std::string::npos ||
        !r.uid_line.empty())
      return;
    pid_t program = from_outside ? zygote->last_child_host_pid() : 0;
    if (program == 0) {
      std::ifstream children("/proc/" + std::to_string(r.init) + "/task/" + std::to_string(r.init) +
                             "/children");
      children >> program;
    }
    r.uid_line = uid_line(program);
    if (zygote != nullptr) {
      const std::string init = "/proc/" + std::to_string(r.init) + "/ns/";
      const std::string z = "/proc/" + std::to_string(zygote->pid()) + "/ns/";
      r.user_parent_is_zygotes = parent_namespace(init + "user") == namespace_inode(z + "user");
      r.pid_parent_is_zygotes = parent_namespace(init + "pid") == namespace_inode(z + "pid");
    }
    std::ifstream stat("/proc/" + std::to_string(r.init) + "/status");
    for (std::string line; std::getline(stat, line);)
      if (line.starts_with("PPid:")) r.init_is_our_child = std::stoi(line.substr(5)) == getpid();
    ssize_t n = write(stdin_write.get(), "go\n", 3);
    (void)n;
  };
  options.on_started = [&](pid_t init, const std::vector<std::string>&) { r.init = init; };
  if (zygote != nullptr) options.nest_under = zygote->nesting();
  if (from_outside) options.outside_program = zygote->program();
  r.result = runtime::run_sandbox(spec, options);
  return r;
}

TEST(NestedSandbox, ItsNamespacesAreTheZygotesChildrenAndItsProgramSeesWhatAColdOneSees) {
  ASSERT_NE(confine_function(), nullptr) << dlerror();
  Seen cold = run_nested(kNestedPortrait, nullptr, false);
  CppZygote zygote({"/bin/sh", "-c", kNestedPortrait});
  Seen nested = run_nested(kNestedPortrait, &zygote, false);
  Seen forked = run_nested(kNestedPortrait, &zygote, true);
  for (const Seen* r : {&cold, &nested, &forked})
    ASSERT_EQ(r->result.status, runtime::Status::Ok) << r->result.error << r->err;
  EXPECT_EQ(nested.out, cold.out);
  EXPECT_EQ(forked.out, cold.out);
  EXPECT_EQ(forked.err, cold.err);
  EXPECT_NE(cold.out.find("Uid:\t0\t0\t0\t0\n"), std::string::npos) << cold.out;
  EXPECT_NE(cold.out.find("after go\n"), std::string::npos) << cold.out;
  for (const Seen* r : {&nested, &forked}) {
    EXPECT_TRUE(r->user_parent_is_zygotes);
    EXPECT_TRUE(r->pid_parent_is_zygotes);
    EXPECT_TRUE(r->init_is_our_child);
    // The program is the sandbox's root, which the host sees as the sandboxes' slot: not the
    // zygote's ids.
    const std::string host = std::to_string(zygote.nesting()->host.uid_base);
    EXPECT_EQ(r->uid_line, "Uid:\t" + host + "\t" + host + "\t" + host + "\t" + host);
    ASSERT_TRUE(r->result.isolation.userns.has_value());
    EXPECT_EQ(r->result.isolation.userns->uid_base, zygote.nesting()->host.uid_base);
  }
  EXPECT_NE(zygote.own_host_uid(), zygote.nesting()->host.uid_base);
}

TEST(NestedSandbox, WithoutAUserNamespaceOfItsOwnIsRefused) {
  CppZygote zygote({"/bin/true"});
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/true"};
  spec.user_namespace = runtime::UserNamespace::Host;
  runtime::RunOptions options;
  options.output = [](runtime::Stream, std::span<const char>) {};
  options.nest_under = zygote.nesting();
  const runtime::Result result = runtime::run_sandbox(spec, options);
  EXPECT_EQ(result.status, runtime::Status::RuntimeError);
  EXPECT_NE(result.error.find("user namespace of its own"), std::string::npos) << result.error;
}

TEST(NestedSandbox, AZygoteGoneIsARuntimeErrorAndLeavesNothing) {
  auto zygote = std::make_unique<CppZygote>(std::vector<std::string>{"/bin/true"});
  const runtime::Nesting nesting = *zygote->nesting();
  runtime::UniqueFd userns(dup(nesting.userns_fd)), pidns(dup(nesting.pidns_fd));
  zygote.reset();  // its pid namespace is empty now: nothing can be made in it
  runtime::Nesting gone = nesting;
  gone.userns_fd = userns.get();
  gone.pidns_fd = pidns.get();
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = {test_rootfs()};
  spec.args = {"/bin/true"};
  spec.user_namespace = runtime::UserNamespace::Auto;
  runtime::RunOptions options;
  options.output = [](runtime::Stream, std::span<const char>) {};
  options.nest_under = &gone;
  const runtime::Result result = runtime::run_sandbox(spec, options);
  EXPECT_EQ(result.status, runtime::Status::RuntimeError);
  EXPECT_NE(result.error.find("zygote"), std::string::npos) << result.error;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG | __WALL), -1) << "a helper or an init left unreaped";
}

}  // namespace
}  // namespace sandcell::test
