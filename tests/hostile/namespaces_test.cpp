// Hostile namespace games: signals to everything, host pids, the kernel log, host names, SysV IPC
// and the cgroup path. (Pid 1 and the visible process count are in integration/isolation_test.cpp.)
#include <signal.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hostile.hpp"

namespace sandcell::test {
namespace {

// A process on the host, outside any sandbox, that the sandboxed program will try to reach.
class HostBystander : public ::testing::Test {
 protected:
  void SetUp() override {
    pid_ = fork();
    if (pid_ == 0) {
      execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
      _exit(127);
    }
    ASSERT_GT(pid_, 0);
  }
  void TearDown() override {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  bool alive() const { return waitpid(pid_, nullptr, WNOHANG) == 0 && kill(pid_, 0) == 0; }
  pid_t pid_ = -1;
};

TEST_F(HostBystander, KillMinus9Minus1StaysInside) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "/bin/sc-probe sleep 100 & sleep 0.2; kill -9 -1; echo kill=$?; wait $!; echo child=$?"});
  EXPECT_EQ(stdout_of(r), "kill=0\nchild=137\n");  // the sandbox's own child died, nothing else
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_TRUE(alive()) << "kill -9 -1 inside the sandbox reached a host process";
}

TEST_F(HostBystander, HostPidsCannotBeSignalledOrSeen) {
  std::string pid = std::to_string(pid_);
  auto r = run_in_sandbox({}, {"/bin/sh", "-c",
      "kill -9 " + pid + " 2>/dev/null; echo kill=$?; ls /proc/" + pid + " >/dev/null 2>&1; echo ls=$?; "
      "ps -o comm | grep -c '^sleep$' || true"});
  // The host's pid may happen to exist inside as a small number only if the sandbox has that
  // many processes; it has three.
  EXPECT_EQ(stdout_of(r), "kill=1\nls=1\n0\n") << pid;
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_TRUE(alive());
}

TEST(HostileNamespaces, DmesgIsDeniedAndReported) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "dmesg >/dev/null 2>&1; echo $?"});
  EXPECT_EQ(stdout_of(r), "1\n");
  EXPECT_GE(denied_count(r, "syslog"), 1u) << r.record["events"].dump();
  EXPECT_EQ(status_of(r), "ok");
}

TEST(HostileNamespaces, SethostnameIsDeniedAndReported) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "hostname evil 2>/dev/null; echo $?; hostname"});
  EXPECT_EQ(stdout_of(r), "1\nsandcell\n");
  EXPECT_EQ(denied_count(r, "sethostname"), 1u) << r.record["events"].dump();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  EXPECT_NE(std::string(host), "evil");
}

TEST(HostileNamespaces, HostSysvSharedMemoryIsInvisible) {
  int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0666);
  ASSERT_GE(id, 0);
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "tail -n +2 /proc/sysvipc/shm | wc -l"});
  shmctl(id, IPC_RMID, nullptr);
  EXPECT_EQ(stdout_of(r), "0\n") << r.record.value("stderr", "");
  EXPECT_EQ(status_of(r), "ok");
}

TEST(HostileNamespaces, CgroupPathDoesNotRevealTheHostHierarchy) {
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", "cat /proc/self/cgroup"});
  std::string out = stdout_of(r);
  EXPECT_FALSE(out.empty());
  EXPECT_EQ(out.find("sandcell"), std::string::npos) << out;
  for (size_t line = 0; line < out.size(); line = out.find('\n', line) + 1) {
    std::string text = out.substr(line, out.find('\n', line) - line);
    EXPECT_EQ(text.substr(text.rfind(':') + 1), "/") << text;
  }
}

}  // namespace
}  // namespace sandcell::test
