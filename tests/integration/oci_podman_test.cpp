// podman drives sandcell-oci through conmon: run --rm, -t, --memory/--pids-limit, exec, stop,
// kill. The image is built by buildah from a busybox Dockerfile into a private storage (temp
// --root/--runroot/--tmpdir), so the host's default store is never touched.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

class OciPodman : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tree_ = new TempTree("sc-podman");
    std::string ctx = path("context");
    std::filesystem::create_directories(ctx);
    std::filesystem::copy_file("/bin/busybox", ctx + "/busybox");
    std::ofstream(ctx + "/Dockerfile") << "FROM scratch\nCOPY busybox /bin/busybox\n"
                                          "RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nENV PATH=/bin\n";
    std::vector<std::string> build{"/usr/bin/buildah"};
    for (const auto& flag : storage()) build.push_back(flag);
    for (const char* arg : {"bud", "--isolation", "chroot", "-t", "localhost/sc-oci-busybox"}) build.push_back(arg);
    build.push_back(ctx);
    CliRun built = run_program(build);
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }
  static void TearDownTestSuite() {
    podman({"rm", "--all", "--force"});
    podman({"rmi", "--all", "--force"});
    delete tree_;
  }

  static std::string path(const std::string& name) { return (tree_->path / name).string(); }
  static std::vector<std::string> storage() {
    return {"--root", path("storage"), "--runroot", path("runroot"), "--storage-driver", "vfs"};
  }
  // podman with the flags this host needs (documented in docs/oci.md).
  static CliRun podman(const std::vector<std::string>& args) {
    std::vector<std::string> full{"/usr/bin/podman"};
    for (const auto& flag : storage()) full.push_back(flag);
    for (const std::string& flag : {std::string("--tmpdir"), path("tmp"), std::string("--cgroup-manager"),
                                    std::string("cgroupfs"), std::string("--events-backend"), std::string("file"),
                                    std::string("--runtime"), oci_binary()})
      full.push_back(flag);
    full.insert(full.end(), args.begin(), args.end());
    return run_program(full);
  }
  static CliRun podman_run(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
    std::vector<std::string> args{"run", "--network", "none", "--ulimit", "nofile=1024:1024", "--ulimit",
                                  "nproc=1024:1024"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("localhost/sc-oci-busybox");
    args.insert(args.end(), command.begin(), command.end());
    return podman(args);
  }

  static TempTree* tree_;
};

TempTree* OciPodman::tree_ = nullptr;

TEST_F(OciPodman, RunRm_EchoHi) {
  CliRun run = podman_run({"--rm"}, {"echo", "hi"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "hi\n");
  EXPECT_EQ(podman_run({"--rm"}, {"sh", "-c", "exit 7"}).exit_code, 7);
}

TEST_F(OciPodman, Terminal_GivesThePseudoTerminalFromTheConsoleSocket) {
  // The init's pty is on /dev/console too (runtime-spec config.md "process"); an exec's is not.
  CliRun run = podman_run({"--rm", "-t"}, {"sh", "-c", "tty; [ /dev/console -ef /dev/pts/0 ] && echo console; echo on-tty"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "/dev/pts/0\r\nconsole\r\non-tty\r\n");
}

TEST_F(OciPodman, MemoryAndPidsLimits_ExecPauseUpdateStopAndKill) {
  CliRun started = podman_run({"-d", "--memory", "64m", "--pids-limit", "50"}, {"sleep", "1000"});
  ASSERT_EQ(started.exit_code, 0) << started.err;
  std::string id = started.out.substr(0, started.out.find('\n'));
  // podman's cgroupfs manager names the container's cgroup in linux.cgroupsPath; it is followed
  // on either layout (this host's v1 hierarchies; a pure v2 host's one tree, tests/vm variant A).
  std::string cgroup = "/libpod_parent/libpod-" + id;
  const bool v2 = pure_cgroup_v2_host();
  std::string memory = v2 ? "/sys/fs/cgroup" + cgroup : "/sys/fs/cgroup/memory" + cgroup;
  std::string memory_max = memory + (v2 ? "/memory.max" : "/memory.limit_in_bytes");
  EXPECT_EQ(read_text(memory_max), "67108864\n");
  EXPECT_EQ(read_text((v2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/pids") + cgroup + "/pids.max"),
            "50\n");

  CliRun exec = podman({"exec", id, "sh", "-c", "echo from-exec; cat /proc/1/cmdline"});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(exec.out, std::string("from-exec\nsleep\0" "1000\0", 21));

  CliRun tty = podman({"exec", "-t", id, "tty"});
  EXPECT_EQ(tty.out, "/dev/pts/0\r\n") << tty.err;
  ASSERT_EQ(podman({"pause", id}).exit_code, 0);
  EXPECT_EQ(podman({"inspect", "--format", "{{.State.Status}}", id}).out, "paused\n");
  if (v2)
    EXPECT_NE(read_text(memory + "/cgroup.events").find("frozen 1\n"), std::string::npos);
  else
    EXPECT_EQ(read_text("/sys/fs/cgroup/freezer" + cgroup + "/freezer.state"), "FROZEN\n");
  ASSERT_EQ(podman({"unpause", id}).exit_code, 0);
  ASSERT_EQ(podman({"update", "--memory", "128m", id}).exit_code, 0);
  EXPECT_EQ(read_text(memory_max), "134217728\n");

  // sleep as pid 1 ignores SIGTERM: stop falls back to SIGKILL after the timeout.
  CliRun stop = podman({"stop", "-t", "1", id});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(podman({"inspect", "--format", "{{.State.Status}}", id}).out, "exited\n");
  ASSERT_EQ(podman({"start", id}).exit_code, 0);
  CliRun kill = podman({"kill", id});
  EXPECT_EQ(kill.exit_code, 0) << kill.err;
  EXPECT_EQ(podman({"wait", id}).out, "137\n");
  EXPECT_EQ(podman({"rm", id}).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(memory));
}

}  // namespace
}  // namespace sandcell::test
