// containerd runs sandcell-oci through its runc shim (io.containerd.runc.v2 --runc-binary). The
// test starts its own containerd on a private socket, root and state in a temp directory,
// without the CRI plugin, imports an OCI archive (skopeo from a buildah image) and runs it.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

class PrivateContainerd {
 public:
  explicit PrivateContainerd(const TempTree& tree) : dir_(tree.path.string()) {
    created_run_dir_ = !std::filesystem::exists("/run/containerd");
    std::ofstream(dir_ + "/config.toml")
        << "version = 2\nroot = \"" << dir_ << "/root\"\nstate = \"" << dir_ << "/state\"\n"
        << "disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n"
        << "[grpc]\n  address = \"" << socket() << "\"\n[ttrpc]\n  address = \"" << socket() << ".ttrpc\"\n";
    std::vector<std::string> args{"/usr/bin/containerd", "--config", dir_ + "/config.toml"};
    pid_ = spawn_quiet(args);
    for (int i = 0; i < 250 && !std::filesystem::exists(socket()); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ~PrivateContainerd() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    // The shims' socket and fifo directories are under /run/containerd whatever the config
    // says; remove them if this test made them.
    if (created_run_dir_) std::filesystem::remove_all("/run/containerd");
  }
  std::string socket() const { return dir_ + "/containerd.sock"; }
  CliRun ctr(const std::vector<std::string>& args) const {
    std::vector<std::string> full{"/usr/bin/ctr", "-a", socket()};
    full.insert(full.end(), args.begin(), args.end());
    return run_program(full);
  }

 private:
  static pid_t spawn_quiet(std::vector<std::string> args) {
    pid_t pid = fork();
    if (pid == 0) {
      freopen("/dev/null", "w", stdout);
      freopen("/dev/null", "w", stderr);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    return pid;
  }
  std::string dir_;
  pid_t pid_ = -1;
  bool created_run_dir_ = false;
};

TEST(OciContainerd, CtrRunRm_EchoHi) {
  TempTree tree("sc-containerd");
  std::string ctx = (tree.path / "context").string(), store = (tree.path / "storage").string();
  std::filesystem::create_directories(ctx);
  std::filesystem::copy_file("/bin/busybox", ctx + "/busybox");
  std::ofstream(ctx + "/Dockerfile") << "FROM scratch\nCOPY busybox /bin/busybox\n";
  std::vector<std::string> storage{"--root", store, "--runroot", store + "-run", "--storage-driver", "vfs"};
  std::vector<std::string> build{"/usr/bin/buildah"};
  build.insert(build.end(), storage.begin(), storage.end());
  for (const char* arg : {"bud", "-t", "localhost/sc-ctr-busybox"}) build.push_back(arg);
  build.push_back(ctx);
  ASSERT_EQ(run_program(build).exit_code, 0);
  std::string archive = (tree.path / "image.tar").string();
  CliRun copy = run_program({"/usr/bin/skopeo", "copy",
                             "containers-storage:[vfs@" + store + "+" + store + "-run]localhost/sc-ctr-busybox:latest",
                             "oci-archive:" + archive + ":localhost/sc-ctr-busybox:latest"});
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  run_program({"/usr/bin/buildah", "--root", store, "--runroot", store + "-run", "--storage-driver", "vfs",
               "rmi", "--all", "--force"});

  PrivateContainerd containerd(tree);
  ASSERT_TRUE(std::filesystem::exists(containerd.socket())) << "containerd did not start";
  CliRun import = containerd.ctr({"images", "import", archive});
  ASSERT_EQ(import.exit_code, 0) << import.err;
  std::string runc_root = (tree.path / "runc-root").string(), fifos = (tree.path / "fifo").string();
  CliRun run = containerd.ctr({"run", "--rm", "--runc-binary", oci_binary(), "--runc-root", runc_root,
                               "--fifo-dir", fifos, "localhost/sc-ctr-busybox:latest", "sc-ctr-test",
                               "/bin/busybox", "echo", "hi"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "hi\n");
  CliRun failing = containerd.ctr({"run", "--rm", "--runc-binary", oci_binary(), "--runc-root", runc_root,
                                   "--fifo-dir", fifos, "localhost/sc-ctr-busybox:latest", "sc-ctr-test2",
                                   "/bin/busybox", "sh", "-c", "exit 5"});
  EXPECT_EQ(failing.exit_code, 5) << failing.err;
  EXPECT_EQ(containerd.ctr({"containers", "ls", "-q"}).out, "");
  EXPECT_FALSE(std::filesystem::exists("/sys/fs/cgroup/memory/sandcell/oci-sc-ctr-test"));
}

}  // namespace
}  // namespace sandcell::test
