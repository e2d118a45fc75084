// The Docker Engine API's disk bound (issue 32; docs/docker-api.md, "Disk"): each container's
// writable layer is its own ext4 image of `HostConfig.StorageOpt size` (the server's --disk when
// not given, at most --max-disk), mounted while the container runs and freed at rm. With the real
// docker CLI: a write past the size gets ENOSPC (and so does a file past the inode bound), the
// record and inspect say so, the layer outlives a restart, a killed supervisor's disk is
// unmounted by `sandcell gc` and rm, and nothing (mount, loop device, image) is left.
#include <sys/statvfs.h>

#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class DockerApiDisk : public DockerApi {
 protected:
  void TearDown() override {
    DockerApi::TearDown();  // removes what the test left through the API; the store goes too
    // Loop devices detach once the last user of the filesystem lets go (LO_FLAGS_AUTOCLEAR).
    for (int i = 0; i < 500 && !loops_backed_under(dir_.string()).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(loops_backed_under(dir_.string()).empty());
  }

  std::string container_dir(const std::string& id) const { return store() + "/docker/containers/" + id; }

  // Loop devices whose backing file is under `dir`, and mounts under it: host-global.
  static std::vector<std::string> loops_backed_under(const std::string& dir) {
    std::vector<std::string> found;
    std::error_code ec;
    for (const auto& dev : fs::directory_iterator("/sys/block", ec)) {
      std::ifstream backing(dev.path() / "loop/backing_file");
      std::string file;
      if (std::getline(backing, file) && file.rfind(dir, 0) == 0) found.push_back(file);
    }
    return found;
  }

  static std::vector<std::string> mounts_under(const std::string& dir) {
    std::vector<std::string> found;
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);)
      if (line.find(" " + dir + "/") != std::string::npos) found.push_back(line);
    return found;
  }

  static uint64_t allocated(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_blocks) * 512 : 0;
  }
};

TEST_F(DockerApiDisk, AWritePastStorageOptSizeGetsEnospcAndTheRecordSaysSo) {
  // The shell survives the full disk: the status is its own (ok).
  CliRun r = docker({"run", "--name", "fill", "--network", "none", "--storage-opt", "size=64m", "bb:1", "sh", "-c",
                     "dd if=/dev/zero of=/tmp/f bs=1M count=128; echo dd=$?; wc -c < /tmp/f"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 2u) << r.out;
  EXPECT_EQ(out[0], "dd=1");
  EXPECT_LT(std::stoull(out[1]), 64 * kMiB);
  EXPECT_GT(std::stoull(out[1]), 48 * kMiB);
  nlohmann::json c = inspect("fill");
  EXPECT_EQ(c["HostConfig"]["StorageOpt"]["size"], std::to_string(64 * kMiB));
  const nlohmann::json& record = c["Sandcell"];
  EXPECT_EQ(record["status"], "ok") << record;
  EXPECT_EQ(record["limits"]["disk_bytes"], 64 * kMiB);
  EXPECT_EQ(record["enforced"]["disk_bytes"], "ext4-loop");
  EXPECT_GT(record["usage"]["disk_bytes"].get<uint64_t>(), 48 * kMiB);
  // The host holds at most the image: the bound, not the 128 MiB asked for.
  const std::string id = c["Id"];
  EXPECT_LE(allocated(container_dir(id) + "/disk.img"), 64 * kMiB);
  EXPECT_TRUE(mounts_under(container_dir(id)).empty()) << "the disk stays mounted after the container exited";
  // A stopped container's size is what its image holds on the host.
  CliRun ps = docker({"ps", "-a", "-s", "--format", "{{.Size}}"});
  EXPECT_EQ(ps.exit_code, 0) << ps.err;
  EXPECT_NE(ps.out.find("MB"), std::string::npos) << ps.out;

  // The program that fails on the full disk: status disk_limit, its own exit code.
  r = docker({"run", "--name", "fail", "--network", "none", "--storage-opt", "size=16m", "bb:1", "sh", "-c",
              "dd if=/dev/zero of=/tmp/f bs=1M count=64 2>/dev/null"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  c = inspect("fail");
  EXPECT_EQ(c["State"]["ExitCode"], 1);
  EXPECT_EQ(c["Sandcell"]["status"], "disk_limit") << c["Sandcell"];
  EXPECT_EQ(c["Sandcell"]["exit_code"], 1);
}

TEST_F(DockerApiDisk, FilesPastTheInodeBoundGetEnospcAndAHoledFileHoldsOnlyWhatIsWritten) {
  // 8 MiB: 1024 inodes (one per 16 KiB, at least 1024). Creating files stops there, not at the
  // host's inodes. (`true`, not `:`: a failed redirection of a special builtin ends the shell.)
  CliRun r = docker({"run", "--rm", "--network", "none", "--storage-opt", "size=8m", "bb:1", "sh", "-c",
                     "mkdir /tmp/d; i=0; while true > /tmp/d/$i; do i=$((i+1)); done 2>/dev/null; echo files=$i; "
                     "rm -r /tmp/d; truncate -s 1099511627776 /tmp/sparse; echo truncate=$?; "
                     "dd if=/dev/zero of=/tmp/sparse bs=1M count=4 seek=500000 conv=notrunc 2>/dev/null; echo hole=$?; "
                     "dd if=/dev/zero of=/tmp/sparse bs=1M count=64 seek=900000 conv=notrunc 2>/dev/null; echo holes=$?"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 4u) << r.out;
  ASSERT_TRUE(out[0].starts_with("files=")) << r.out;
  EXPECT_GT(std::stoi(out[0].substr(6)), 900);
  EXPECT_LE(std::stoi(out[0].substr(6)), 1024);
  // A sparse 1 TB file is allowed (ext4's file size limit is 16 TiB): only what is written into
  // its holes takes blocks, and that is bounded.
  EXPECT_EQ(out[1], "truncate=0");
  EXPECT_EQ(out[2], "hole=0");
  EXPECT_EQ(out[3], "holes=1");
}

TEST_F(DockerApiDisk, TheLayerIsKeptAcrossRestartsAndFreedAtRm) {
  CliRun created = docker({"create", "--name", "keep", "--network", "none", "--storage-opt", "size=32m", "bb:1", "sh",
                           "-c", "echo x >> /tmp/count; wc -l < /tmp/count"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const std::string id = lines(created.out).at(0);
  // (start, then wait: `start -a` of an exited container does not always show its output yet)
  for (int run = 0; run < 2; ++run) {
    EXPECT_EQ(docker({"start", "keep"}).exit_code, 0);
    EXPECT_EQ(docker({"wait", "keep"}).out, "0\n");
    EXPECT_TRUE(mounts_under(container_dir(id)).empty()) << "mounted while stopped";
  }
  CliRun restarted = docker({"restart", "keep"});
  EXPECT_EQ(restarted.exit_code, 0) << restarted.err;
  EXPECT_EQ(docker({"wait", "keep"}).out, "0\n");
  EXPECT_EQ(lines(docker({"logs", "keep"}).out), (std::vector<std::string>{"1", "2", "3"}));
  ASSERT_TRUE(fs::exists(container_dir(id) + "/disk.img"));
  EXPECT_EQ(docker({"rm", "keep"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(container_dir(id)));
  EXPECT_TRUE(mounts_under(store()).empty());
}

TEST_F(DockerApiDisk, BadSizesAreRefusedNamingTheField) {
  auto create = [&](const std::string& storage) {
    return request("POST", "/containers/create", R"({"Image":"bb:1","HostConfig":{"StorageOpt":)" + storage + "}}");
  };
  auto lots = create(R"({"size":"lots"})");
  EXPECT_EQ(lots.first, 400);
  EXPECT_NE(lots.second.value("message", "").find("HostConfig.StorageOpt size"), std::string::npos) << lots.second;
  auto small = create(R"({"size":"1m"})");
  EXPECT_EQ(small.first, 400);
  EXPECT_EQ(small.second["message"], "HostConfig.StorageOpt size 1m is too small (at least 8m)");
  auto over = create(R"({"size":"2g"})");  // the server's --max-disk: 1g by default
  EXPECT_EQ(over.first, 400);
  EXPECT_NE(over.second.value("message", "").find("over the server's --max-disk"), std::string::npos) << over.second;
  auto other = create(R"({"dm.basesize":"10g"})");
  EXPECT_EQ(other.first, 400);
  EXPECT_EQ(other.second["message"], "HostConfig.StorageOpt dm.basesize is not supported by sandcell (only size)");
  EXPECT_EQ(create(R"({"size":67108864})").first, 400);
  EXPECT_EQ(create(R"({"size":"-1"})").first, 400);
  EXPECT_EQ(create(R"({"size":"99999999999999t"})").first, 400);
  EXPECT_EQ(create(R"("size=64m")").first, 400);
  EXPECT_EQ(containers_on_disk(), 0u);
  // The docker CLI's own form reaches the same check.
  CliRun r = docker({"create", "--storage-opt", "size=1k", "bb:1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("HostConfig.StorageOpt size 1k is too small"), std::string::npos) << r.err;
}

TEST_F(DockerApiDisk, TheServersDiskIsTheDefaultAndMaxDiskTheCeiling) {
  stop_server();
  start_server({"--disk", "16m", "--max-disk", "32m"});
  CliRun r = docker({"run", "--name", "dflt", "--network", "none", "bb:1", "sh", "-c",
                     "dd if=/dev/zero of=/tmp/f bs=1M count=64 2>/dev/null; wc -c < /tmp/f"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_LT(std::stoull(lines(r.out).at(0)), 16 * kMiB);
  EXPECT_EQ(inspect("dflt")["HostConfig"]["StorageOpt"]["size"], std::to_string(16 * kMiB));
  EXPECT_EQ(inspect("dflt")["Sandcell"]["limits"]["disk_bytes"], 16 * kMiB);
  r = docker({"create", "--storage-opt", "size=64m", "bb:1"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("over the server's --max-disk"), std::string::npos) << r.err;
  EXPECT_EQ(docker({"create", "--storage-opt", "size=32m", "bb:1"}).exit_code, 0);
  stop_server();
  // A default over the ceiling is refused at start, not at the first create.
  CliRun refused = run_sandcell({"--root", store(), "serve", "--docker-api", "unix:" + socket_path(), "--disk", "2g",
                                 "--max-disk", "1g"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("over --max-disk"), std::string::npos) << refused.err;
  start_server();
}

// The supervisor is killed while its container runs: its disk stays mounted with nobody holding
// its lock. `sandcell gc` unmounts it; rm removes the rest.
TEST_F(DockerApiDisk, AKilledSupervisorsDiskIsUnmountedByGcAndRm) {
  CliRun run = docker({"run", "-d", "--name", "orphan", "--network", "none", "--storage-opt", "size=16m", "bb:1",
                       "sh", "-c", "echo data > /tmp/x; sleep 1000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = lines(run.out).at(0);
  nlohmann::json c = inspect("orphan");
  pid_t supervisor = c["State"]["Pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  EXPECT_EQ(mounts_under(container_dir(id)).size(), 1u);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  for (int i = 0; i < 500 && kill(supervisor, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(mounts_under(container_dir(id)).size(), 1u) << "nothing unmounted the killed supervisor's disk";
  CliRun gc = run_sandcell({"--root", store(), "gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("unmounted 1 container disk(s) under " + store() + "/docker/containers"), std::string::npos) << gc.out;
  EXPECT_TRUE(mounts_under(container_dir(id)).empty());
  EXPECT_EQ(docker({"rm", "-f", "orphan"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(container_dir(id)));
}

// Without gc: rm finds the killed supervisor's disk still mounted and unmounts it.
TEST_F(DockerApiDisk, RmUnmountsAKilledSupervisorsDisk) {
  CliRun run = docker({"run", "-d", "--name", "orphan2", "--network", "none", "--storage-opt", "size=16m", "bb:1",
                       "sleep", "1000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string id = lines(run.out).at(0);
  pid_t supervisor = inspect("orphan2")["State"]["Pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  for (int i = 0; i < 500 && kill(supervisor, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(docker({"rm", "-f", "orphan2"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(container_dir(id)));
  EXPECT_TRUE(mounts_under(store()).empty());
  // The sandbox the supervisor left (its cgroup, its init) is gc's.
  EXPECT_EQ(run_sandcell({"--root", store(), "gc"}).exit_code, 0);
}

}  // namespace
}  // namespace sandcell::test
