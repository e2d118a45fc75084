// The Docker Engine API's disk bound (issue 32; docs/docker-api.md, "Disk"): each container's
// writable layer is its own ext4 image of `HostConfig.StorageOpt size` (the server's --disk when
// not given, at most --max-disk), mounted while the container runs and freed at rm. With the real
// docker CLI: a write past the size gets ENOSPC (and so does a file past the inode bound), the
// record and inspect say so, the layer outlives a restart, a killed supervisor's disk is
// unmounted by `sandcell gc` and rm, and nothing (mount, loop device, image) is left.
// Volumes (DockerApiDisk.Volume*; "Volumes" there) likewise: each its own image of `volume create
// --opt size` (else --disk), mounted once while any container using it runs, whatever the
// concurrent starts, stops and kills.

#include "disk_probes.hpp"
#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class DockerApiDisk : public DockerApi {
 protected:
  void TearDown() override {
    DockerApi::TearDown();  // removes what the test left through the API; the store goes too
    std::vector<std::string> loops = loops_left_under(dir_.string());
    EXPECT_TRUE(loops.empty()) << loop_holders(loops);
    std::vector<std::string> mounts = mounts_under(dir_.string());
    EXPECT_TRUE(mounts.empty()) << mounts.front();
  }

  std::string container_dir(const std::string& id) const { return store() + "/docker/containers/" + id; }
  std::string volume_dir(const std::string& name) const { return store() + "/docker/volumes/" + name; }

  static nlohmann::json inspect_volume(const std::string& name) {
    CliRun r = docker({"volume", "inspect", name});
    nlohmann::json all = nlohmann::json::parse(r.out, nullptr, false);
    return all.is_array() && all.size() == 1 ? all[0] : nlohmann::json();
  }

  pid_t supervisor_of(const std::string& name) const { return inspect(name)["State"]["Pid"].get<pid_t>(); }

  static void kill_and_wait(pid_t pid) {
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    for (int i = 0; i < 500 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
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
  CliRun gc = sandcell_within({"--root", store(), "gc"});
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
  EXPECT_EQ(sandcell_within({"--root", store(), "gc"}).exit_code, 0);
}

// A volume is a disk of its own: past its size a write (and a file past its inodes) gets ENOSPC,
// the container's layer, its other volume and the host's disk are untouched, and the record and
// `volume inspect` say so.
TEST_F(DockerApiDisk, VolumeWritesPastItsSizeGetEnospcAndNothingElseFills) {
  ASSERT_EQ(docker({"volume", "create", "--opt", "size=16m", "small"}).exit_code, 0);
  ASSERT_EQ(docker({"volume", "create", "--opt", "size=32m", "big"}).exit_code, 0);
  nlohmann::json small = inspect_volume("small");
  EXPECT_EQ(small["Options"]["size"], std::to_string(16 * kMiB)) << small;
  EXPECT_EQ(small["Mountpoint"], volume_dir("small") + "/disk/workspace");
  EXPECT_EQ(small["UsageData"]["RefCount"], 0);
  CliRun r = docker({"run", "--name", "vfill", "--network", "none", "--storage-opt", "size=64m", "-v", "small:/s",
                     "-v", "big:/b", "bb:1", "sh", "-c",
                     "dd if=/dev/zero of=/s/f bs=1M count=64; echo dd=$?; wc -c < /s/f; "
                     "dd if=/dev/zero of=/b/g bs=1M count=8 2>/dev/null; echo big=$?; "
                     "dd if=/dev/zero of=/tmp/t bs=1M count=8 2>/dev/null; echo layer=$?; "
                     "rm /s/f; mkdir /s/d; i=0; while true > /s/d/$i; do i=$((i+1)); done 2>/dev/null; echo files=$i"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  std::vector<std::string> out = lines(r.out);
  ASSERT_EQ(out.size(), 5u) << r.out;
  EXPECT_EQ(out[0], "dd=1");
  EXPECT_LT(std::stoull(out[1]), 16 * kMiB);
  EXPECT_GT(std::stoull(out[1]), 8 * kMiB);
  EXPECT_EQ(out[2], "big=0");
  EXPECT_EQ(out[3], "layer=0");
  ASSERT_TRUE(out[4].starts_with("files=")) << r.out;
  EXPECT_LE(std::stoi(out[4].substr(6)), 1024);  // one inode per 16 KiB, at least 1024
  EXPECT_GT(std::stoi(out[4].substr(6)), 900);
  // The host's filesystem holds at most each image: nowhere near the 64 MiB asked for. (What the
  // store's files hold, not the filesystem's free space: other processes share it.)
  EXPECT_LE(allocated(volume_dir("small") + "/disk.img"), 16 * kMiB);
  uint64_t volumes_bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(store() + "/docker/volumes"))
    if (e.is_regular_file() && !e.is_symlink()) volumes_bytes += allocated(e.path().string());
  EXPECT_LT(volumes_bytes, 16 * kMiB + 8 * kMiB + 2 * kMiB) << "small, big's 8 MiB and metadata";
  const nlohmann::json record = inspect("vfill")["Sandcell"];
  EXPECT_EQ(record["status"], "ok") << record;  // the shell carried on
  EXPECT_EQ(record["limits"]["volume_bytes"]["small"], 16 * kMiB) << record;
  EXPECT_EQ(record["limits"]["volume_bytes"]["big"], 32 * kMiB) << record;
  EXPECT_EQ(record["enforced"]["volume_bytes"], "ext4-loop");
  EXPECT_GT(record["usage"]["volume_bytes"]["big"].get<uint64_t>(), 8 * kMiB);
  EXPECT_EQ(record["limits"]["disk_bytes"], 64 * kMiB);
  EXPECT_TRUE(mounts_under(volume_dir("small")).empty()) << "mounted with no container running";
  EXPECT_GT(inspect_volume("small")["UsageData"]["Size"].get<uint64_t>(), 0u);
  EXPECT_EQ(inspect_volume("small")["UsageData"]["RefCount"], 1);

  // A program that fails on the full volume (no inode left for its file): disk_limit, its own
  // exit code. The same volume read-only is no reason for disk_limit.
  r = docker({"run", "--name", "vfail", "--network", "none", "-v", "small:/s", "bb:1", "sh", "-c",
              "dd if=/dev/zero of=/s/more bs=1M count=1 2>/dev/null"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_EQ(inspect("vfail")["Sandcell"]["status"], "disk_limit") << inspect("vfail")["Sandcell"];
  r = docker({"run", "--name", "vro", "--network", "none", "-v", "small:/s:ro", "bb:1", "sh", "-c", "exit 3"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(inspect("vro")["Sandcell"]["status"], "exit_nonzero");
  CliRun busy = docker({"volume", "rm", "small"});
  EXPECT_NE(busy.err.find("volume is in use"), std::string::npos) << busy.err;
  ASSERT_EQ(docker({"rm", "vfill", "vfail", "vro"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "small", "big"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(volume_dir("small")));
}

TEST_F(DockerApiDisk, VolumeOptionsOtherThanSizeAreRefusedNamingThem) {
  auto refused = [&](const std::vector<std::string>& opts, const std::string& message) {
    std::vector<std::string> args{"volume", "create"};
    for (const std::string& o : opts) args.insert(args.end(), {"--opt", o});
    args.push_back("v");
    CliRun r = docker(args);
    EXPECT_NE(r.exit_code, 0) << opts[0];
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  };
  refused({"type=tmpfs"}, "DriverOpts type is refused by sandcell");
  refused({"device=/etc"}, "DriverOpts device is refused by sandcell");
  refused({"o=bind"}, "DriverOpts o is refused by sandcell");
  refused({"size=64m", "o=size=1g"}, "DriverOpts o is refused by sandcell");
  refused({"quota=1g"}, "DriverOpts quota is not supported by sandcell (only size)");
  refused({"size=1m"}, "DriverOpts size 1m is too small (at least 8m)");
  refused({"size=lots"}, "DriverOpts size");
  refused({"size=2g"}, "DriverOpts size 2g is over the server's --max-disk");
  auto raw = request("POST", "/volumes/create", R"({"Name":"v","DriverOpts":{"size":67108864}})");
  EXPECT_EQ(raw.first, 400) << raw.second;
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "");
}

// Data outlives containers and the server; a volume made by a create (named or anonymous) gets
// the server's --disk.
TEST_F(DockerApiDisk, VolumeDataPersistsAcrossContainersAndServerRestarts) {
  stop_server();
  start_server({"--disk", "16m"});
  CliRun r = docker({"run", "--rm", "--network", "none", "-v", "keep:/k", "bb:1", "sh", "-c", "echo kept > /k/f"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(inspect_volume("keep")["Options"]["size"], std::to_string(16 * kMiB));
  ASSERT_EQ(docker({"create", "--name", "anon", "--network", "none", "-v", "/anon", "bb:1", "true"}).exit_code, 0);
  const std::string anonymous = inspect("anon")["Mounts"][0]["Name"];
  EXPECT_EQ(inspect_volume(anonymous)["Options"]["size"], std::to_string(16 * kMiB));
  stop_server();
  start_server();
  r = docker({"run", "--rm", "--network", "none", "-v", "keep:/k", "bb:1", "sh", "-c",
              "cat /k/f; dd if=/dev/zero of=/k/g bs=1M count=32 2>/dev/null; echo dd=$?"});
  EXPECT_EQ(r.out, "kept\ndd=1\n") << r.err;  // still its 16m, whatever the new server's --disk
  EXPECT_EQ(docker({"rm", "-v", "anon"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "keep"}).exit_code, 0);
  EXPECT_TRUE(mounts_under(store()).empty());
}

// Several containers on one volume: one mount, which all of them see, and which stays until the
// last one stops, however they race to start and stop.
TEST_F(DockerApiDisk, VolumeSharedByRunningContainersStaysMountedUntilTheLastStops) {
  ASSERT_EQ(docker({"volume", "create", "--opt", "size=16m", "shared"}).exit_code, 0);
  // (Names that are no hex prefix: a create named "b" is refused while another container's id
  // starts with b, ContainerStore::find_if_exists.)
  for (const char* name : {"va", "vb"}) {
    CliRun r = docker({"run", "-d", "--name", name, "--network", "none", "-v", "shared:/v", "bb:1", "sleep", "1000"});
    ASSERT_EQ(r.exit_code, 0) << r.err << inspect(name)["State"];
  }
  EXPECT_EQ(mounts_under(volume_dir("shared")).size(), 1u);
  EXPECT_EQ(docker({"exec", "va", "sh", "-c", "echo from-a > /v/a"}).exit_code, 0);
  EXPECT_EQ(docker({"exec", "vb", "cat", "/v/a"}).out, "from-a\n");
  // docker cp reaches the volume through the running container's own mount of it; a stopped
  // container's files (its volumes' too) are refused with a clear error, as before.
  std::ofstream(dir_ / "copied") << "cp\n";
  CliRun cp = docker({"cp", (dir_ / "copied").string(), "va:/v/copied"});
  EXPECT_EQ(cp.exit_code, 0) << cp.err;
  EXPECT_EQ(docker({"exec", "vb", "cat", "/v/copied"}).out, "cp\n");
  EXPECT_EQ(docker({"stop", "-t", "0", "va"}).exit_code, 0);
  cp = docker({"cp", (dir_ / "copied").string(), "va:/v/again"});
  EXPECT_NE(cp.exit_code, 0);
  EXPECT_NE(cp.err.find("sandcell copies files only from and into a running container"), std::string::npos) << cp.err;
  EXPECT_EQ(mounts_under(volume_dir("shared")).size(), 1u) << "va's stop unmounted vb's volume";
  EXPECT_EQ(docker({"exec", "vb", "sh", "-c", "echo from-b > /v/b && cat /v/a"}).out, "from-a\n");
  EXPECT_EQ(docker({"start", "va"}).exit_code, 0);
  EXPECT_EQ(docker({"exec", "va", "cat", "/v/b"}).out, "from-b\n");
  EXPECT_EQ(mounts_under(volume_dir("shared")).size(), 1u);
  EXPECT_EQ(docker({"rm", "-f", "va", "vb"}).exit_code, 0);
  EXPECT_TRUE(mounts_under(volume_dir("shared")).empty());

  // Six containers started and removed at once: never a second mount, all see each other.
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    names.push_back("race" + std::to_string(i));
    ASSERT_EQ(docker({"create", "--name", names.back(), "--network", "none", "-v", "shared:/v", "bb:1", "sh", "-c",
                      "echo $HOSTNAME >> /v/started; sleep 1000"}).exit_code, 0);
  }
  auto all_at_once = [&](const std::vector<std::string>& verb) {
    std::vector<std::thread> threads;
    std::vector<int> codes(names.size(), -1);
    for (size_t i = 0; i < names.size(); ++i)
      threads.emplace_back([&, i] {
        std::vector<std::string> args = verb;
        args.push_back(names[i]);
        codes[i] = docker(args).exit_code;
      });
    for (std::thread& t : threads) t.join();
    for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(codes[i], 0) << verb[0] << " " << names[i];
  };
  all_at_once({"start"});
  std::vector<std::string> started;
  for (int i = 0; i < 500 && started.size() < names.size(); ++i) {
    started = lines(docker({"exec", "race0", "cat", "/v/started"}).out);
    if (started.size() < names.size()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(started.size(), names.size());
  EXPECT_EQ(mounts_under(volume_dir("shared")).size(), 1u);
  all_at_once({"rm", "-f"});
  EXPECT_TRUE(mounts_under(volume_dir("shared")).empty());
  EXPECT_EQ(docker({"volume", "rm", "shared"}).exit_code, 0);
}

// A build runs its RUN steps from a mount namespace of its own, copied from the host's while a
// container had its volume mounted. On a host whose mounts are private (no systemd: this one) the
// container's unmount does not reach that copy, which held the volume's filesystem — and its loop
// device — for the whole build: the next container with the volume waited 5 s, then failed with
// EBUSY ("still attached from an earlier call"). The build drops such copies when it starts.
TEST_F(DockerApiDisk, ABuildRunningMeanwhileHoldsNoCopyOfAVolumesDisk) {
  ASSERT_EQ(docker({"volume", "create", "--opt", "size=16m", "held"}).exit_code, 0);
  ASSERT_EQ(docker({"run", "-d", "--name", "holder", "--network", "none", "-v", "held:/s", "bb:1",
                    "sh", "-c", "until [ -e /s/stop ]; do sleep 0.05; done"})
                .exit_code,
            0);
  ASSERT_EQ(mounts_under(volume_dir("held")).size(), 1u);
  // The RUN step's shell shows the token in its command line while it sleeps (a command after the
  // sleep, so the shell waits for it rather than exec it).
  const std::string token = "sandcell-build-holds-no-disk-" + std::to_string(getpid());
  fs::create_directories(dir_ / "slow");
  std::ofstream(dir_ / "slow/Dockerfile") << "FROM bb:1\nRUN sleep 8 && echo " << token << "\n";
  CliRun built;
  std::thread build([&] {
    built = docker({"build", "-q", "--no-cache", "-t", "slow:1", (dir_ / "slow").string()});
  });
  auto step_running = [&] {
    std::error_code ec;
    for (const auto& proc : fs::directory_iterator("/proc", ec)) {
      std::ifstream cmdline(proc.path() / "cmdline");
      std::string text((std::istreambuf_iterator<char>(cmdline)), std::istreambuf_iterator<char>());
      if (text.find(token) != std::string::npos && text.find("docker") == std::string::npos)
        return true;
    }
    return false;
  };
  bool started = false;
  for (int i = 0; i < 600 && !(started = step_running()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(started) << "the RUN step did not start";
  std::ofstream(inspect_volume("held")["Mountpoint"].get<std::string>() + "/stop") << "";
  EXPECT_EQ(docker({"wait", "holder"}).out, "0\n");
  EXPECT_TRUE(mounts_under(volume_dir("held")).empty());
  // While the step still runs: the volume's loop device is gone (a copy would hold it), and the
  // volume mounts again at once.
  std::vector<std::string> loops = loops_backed_under(volume_dir("held"));
  for (int i = 0; i < 100 && !loops.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    loops = loops_backed_under(volume_dir("held"));
  }
  EXPECT_TRUE(step_running()) << "the build ended before the check: it proves nothing";
  EXPECT_TRUE(loops.empty()) << loop_holders(loops);
  CliRun again = docker({"run", "--rm", "--network", "none", "-v", "held:/s", "bb:1", "ls", "/s"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.out, "stop\n");
  build.join();
  EXPECT_EQ(built.exit_code, 0) << built.err;
  EXPECT_EQ(docker({"rm", "holder"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "held"}).exit_code, 0);
}

// A supervisor killed while its container runs leaves the volume mounted with no user: the next
// container uses that mount and unmounts it when it stops; `sandcell gc` unmounts it; and so
// does `volume rm`.
TEST_F(DockerApiDisk, AKilledSupervisorsVolumeIsUnmountedByTheNextUserGcAndRm) {
  auto orphan = [&](const std::string& name, const std::string& volume) {
    ASSERT_EQ(docker({"run", "-d", "--name", name, "--network", "none", "-v", volume + ":/v", "bb:1", "sh", "-c",
                      "echo " + name + " > /v/" + name + "; sleep 1000"}).exit_code, 0);
    for (int i = 0; i < 500 && docker({"exec", name, "test", "-f", "/v/" + name}).exit_code != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    kill_and_wait(supervisor_of(name));
    EXPECT_EQ(mounts_under(volume_dir(volume)).size(), 1u) << "nothing unmounted the killed supervisor's volume";
    EXPECT_EQ(docker({"rm", "-f", name}).exit_code, 0);
    EXPECT_EQ(mounts_under(volume_dir(volume)).size(), 1u);
  };
  orphan("k1", "vk");
  CliRun next = docker({"run", "--rm", "--network", "none", "-v", "vk:/v", "bb:1", "cat", "/v/k1"});
  EXPECT_EQ(next.out, "k1\n") << next.err;
  EXPECT_TRUE(mounts_under(volume_dir("vk")).empty());

  orphan("k2", "vk");
  CliRun gc = sandcell_within({"--root", store(), "gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_NE(gc.out.find("unmounted 1 volume disk(s) under " + store() + "/docker/volumes"), std::string::npos) << gc.out;
  EXPECT_TRUE(mounts_under(volume_dir("vk")).empty());

  orphan("k3", "vk");
  EXPECT_EQ(docker({"volume", "rm", "vk"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(volume_dir("vk")));
  EXPECT_EQ(sandcell_within({"--root", store(), "gc"}).exit_code, 0);  // the sandboxes' cgroups
}

// A volume that could not be bounded (made by a server before volume bounds; a rootless one's
// are the same directories, with the reason in volume.json) runs unbounded, never silently:
// `volume inspect` and each record say so.
TEST_F(DockerApiDisk, AnUnboundedVolumeSaysSoInInspectAndTheRecord) {
  fs::create_directories(volume_dir("old") + "/_data");
  std::ofstream(volume_dir("old") + "/volume.json")
      << R"({"Name":"old","CreatedAt":"2026-12-01T00:00:00Z","Labels":{},"Anonymous":false})";
  std::ofstream(volume_dir("old") + "/_data/f") << "old\n";
  nlohmann::json volume = inspect_volume("old");
  EXPECT_EQ(volume["Mountpoint"], volume_dir("old") + "/_data");
  EXPECT_EQ(volume["Status"]["unbounded"], "a volume created before volume bounds") << volume;
  EXPECT_FALSE(volume["Options"].contains("size"));
  EXPECT_EQ(volume["UsageData"]["Size"], -1);
  CliRun r = docker({"run", "--name", "unb", "--network", "none", "-v", "old:/o", "bb:1", "sh", "-c",
                     "cat /o/f; echo new > /o/g"});
  EXPECT_EQ(r.out, "old\n") << r.err;
  const nlohmann::json record = inspect("unb")["Sandcell"];
  EXPECT_EQ(record["enforced"]["volume_bytes"], "none") << record;
  EXPECT_NE(record["warnings"].dump().find("volume_bytes not enforced on the volume old: a volume created before volume bounds"),
            std::string::npos) << record;
  EXPECT_TRUE(fs::exists(volume_dir("old") + "/_data/g"));
  EXPECT_EQ(docker({"rm", "unb"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "old"}).exit_code, 0);
}

// What a sandbox leaves in its volume (links to host files, to the image's root, a volume's
// files replaced by links) is never followed by the host: not when the volume is mounted again,
// inspected, swept by gc or removed.
TEST_F(DockerApiDisk, VolumeLinksASandboxPlantedAreNeverFollowedOnTheHost) {
  fs::create_directories(dir_ / "host");
  std::ofstream(dir_ / "host/file") << "host";
  chmod((dir_ / "host/file").c_str(), 0600);
  const std::string host = (dir_ / "host").string();
  CliRun r = docker({"run", "--rm", "--network", "none", "-v", "hs:/h", "bb:1", "sh", "-c",
                     "echo data > /h/f && rm /h/f && ln -s " + host + "/file /h/f && ln -s " + host +
                         " /h/dir && ln -s ../../../../../.. /h/up && ln -s /h /h/self"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = docker({"run", "--rm", "--network", "none", "-v", "hs:/h", "bb:1", "sh", "-c",
              "chmod 0777 /h/f /h/dir 2>/dev/null; echo x > /h/f 2>/dev/null; ls /h | sort | tr '\\n' ' '"});
  EXPECT_EQ(r.out, "dir f self up ") << r.err;
  EXPECT_GT(inspect_volume("hs")["UsageData"]["Size"].get<uint64_t>(), 0u);
  EXPECT_EQ(sandcell_within({"--root", store(), "gc"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "hs"}).exit_code, 0);
  struct stat st {};
  ASSERT_EQ(stat((dir_ / "host/file").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  std::ifstream in(dir_ / "host/file");
  std::string content;
  std::getline(in, content);
  EXPECT_EQ(content, "host");
  EXPECT_TRUE(fs::exists(dir_ / "host/file"));
}

}  // namespace
}  // namespace sandcell::test
