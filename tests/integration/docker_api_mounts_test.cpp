// The Docker Engine API's mounts (container_mounts.cpp, volume_store.cpp): tmpfs (HostConfig.Tmpfs,
// Mounts type=tmpfs) nosuid,nodev with its size and mode and its pages charged to the container's
// memory; named volumes (Binds NAME:/path, Mounts type=volume, /volumes) under the store; host
// paths refused naming the field. Hostile: volume names that are paths, driver options that
// would mount host devices, an image whose mount point is a symlink out of the container.
#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

class DockerApiMounts : public DockerApi {
 protected:
  // A mount's line of /proc/mounts inside a container, as its program sees it.
  static std::string mount_line(const std::string& text, const std::string& target) {
    for (const std::string& line : lines(text))
      if (line.find(" " + target + " ") != std::string::npos) return line;
    return "";
  }

  std::string volumes_dir() const { return store() + "/docker/volumes"; }

  static nlohmann::json inspect_volume(const std::string& name) {
    CliRun r = docker({"volume", "inspect", name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_array() && !j.empty() ? j[0] : nlohmann::json();
  }

  // An image FROM bb:1 with the Dockerfile lines given.
  void build_image(const std::string& tag, const std::string& lines_after_from) {
    fs::create_directories(dir_ / "ctx2");
    std::ofstream(dir_ / "ctx2/Dockerfile") << "FROM bb:1\n" << lines_after_from;
    CliRun built = run_sandcell({"--root", store(), "build", "-q", "-t", tag, (dir_ / "ctx2").string()});
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }
};

TEST_F(DockerApiMounts, TmpfsIsNosuidNodevWithItsSizeAndModeAndFillsUp) {
  CliRun r = docker({"run", "--rm", "--network", "none", "--tmpfs", "/scratch:size=8m,mode=1770",
                     "--mount", "type=tmpfs,destination=/m,tmpfs-size=4194304,tmpfs-mode=0700", "--tmpfs", "/nx:noexec",
                     "bb:1", "sh", "-c",
                     "cat /proc/mounts; ls -ld /scratch /m; dd if=/dev/zero of=/scratch/f bs=1M count=16 2>/dev/null; "
                     "echo dd=$?; wc -c < /scratch/f; cp /bin/busybox /nx/bb; /nx/bb true; echo exec=$?"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string scratch = mount_line(r.out, "/scratch");
  EXPECT_NE(scratch.find("tmpfs /scratch tmpfs rw,nosuid,nodev"), std::string::npos) << r.out;
  EXPECT_NE(scratch.find("size=8192k"), std::string::npos) << scratch;
  EXPECT_NE(scratch.find("mode=1770"), std::string::npos) << scratch;
  std::string m = mount_line(r.out, "/m");
  EXPECT_NE(m.find("nosuid,nodev"), std::string::npos) << m;
  EXPECT_NE(m.find("size=4096k"), std::string::npos) << m;
  EXPECT_NE(m.find("mode=700"), std::string::npos) << m;
  EXPECT_NE(mount_line(r.out, "/nx").find("noexec"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("drwxrwx--T"), std::string::npos) << r.out;  // 1770
  EXPECT_NE(r.out.find("dd=1\n8388608\n"), std::string::npos) << r.out;  // full at its size
  EXPECT_NE(r.out.find("exec=126"), std::string::npos) << r.out;
  nlohmann::json stored = request("POST", "/containers/create", R"({"Image":"bb:1","HostConfig":{"Tmpfs":{"/t":""}}})").second;
  ASSERT_TRUE(stored.contains("Id")) << stored;
  // No size given: the container's memory limit (sandcell's default 512 MiB).
  EXPECT_EQ(inspect(stored["Id"])["HostConfig"]["Mounts"][0]["SizeBytes"], 512 << 20);
}

// tmpfs pages are charged to the memory cgroup of the sandbox that writes them: a tmpfs larger
// than the memory limit cannot hold more than the limit.
TEST_F(DockerApiMounts, TmpfsPagesCountAgainstTheContainersMemoryLimit) {
  CliRun r = docker({"run", "--rm", "--network", "none", "--memory", "32m", "--tmpfs", "/big:size=256m", "bb:1", "sh",
                     "-c", "dd if=/dev/zero of=/big/f bs=1M count=128 2>/dev/null; echo dd=$?; wc -c < /big/f"});
  // The writer fails (or, as the kernel sees fit, is OOM-killed) before the tmpfs holds the limit.
  std::vector<std::string> out = lines(r.out);
  if (r.exit_code == 0) {
    ASSERT_EQ(out.size(), 2u) << r.out;
    EXPECT_NE(out[0], "dd=0");
    EXPECT_LT(std::stoull(out[1]), 32ull << 20) << r.out;
  } else {
    EXPECT_EQ(r.exit_code, 137) << r.out << r.err;
  }
}

TEST_F(DockerApiMounts, TmpfsOptionsThatWeakenOrAreUnknownAreRefusedNamingTheField) {
  auto create = [&](const std::string& host_config) {
    return request("POST", "/containers/create", R"({"Image":"bb:1","HostConfig":)" + host_config + "}");
  };
  auto suid = create(R"({"Tmpfs":{"/t":"suid"}})");
  EXPECT_EQ(suid.first, 400);
  EXPECT_EQ(suid.second["message"], "HostConfig.Tmpfs /t: suid is refused by sandcell: it would weaken the sandbox");
  EXPECT_EQ(create(R"({"Tmpfs":{"/t":"dev"}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/t":"uid=1000"}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/t":"size=lots"}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/t":"mode=99999"}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/":""}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"relative":""}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/a/../etc":""}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/proc/sys":""}})").first, 400);
  EXPECT_EQ(create(R"({"Tmpfs":{"/x":""},"Mounts":[{"Type":"tmpfs","Target":"/x"}]})").first, 400);
  EXPECT_EQ(create(R"({"Mounts":[{"Type":"tmpfs","Target":"/x","TmpfsOptions":{"Mode":-1}}]})").first, 400);
  EXPECT_EQ(create(R"({"Mounts":[{"Type":"npipe","Target":"/x"}]})").first, 400);
  EXPECT_EQ(containers_on_disk(), 0u);
}

TEST_F(DockerApiMounts, NamedVolumesKeepDataBetweenContainersAndAreNosuidNodev) {
  CliRun made = docker({"volume", "create", "data"});
  EXPECT_EQ(made.out, "data\n") << made.err;
  CliRun write = docker({"run", "--rm", "--network", "none", "-v", "data:/data", "bb:1", "sh", "-c",
                         "echo kept > /data/f; grep ' /data ' /proc/mounts"});
  EXPECT_EQ(write.exit_code, 0) << write.err;
  EXPECT_NE(write.out.find("nosuid,nodev"), std::string::npos) << write.out;
  CliRun read = docker({"run", "--rm", "--network", "none", "--mount", "type=volume,source=data,target=/d,readonly",
                        "bb:1", "sh", "-c", "cat /d/f; touch /d/g 2>/dev/null || echo read-only"});
  EXPECT_EQ(read.out, "kept\nread-only\n") << read.err;
  // Its files are on its own disk (docker_api_disk_test.cpp), mounted while a container runs.
  EXPECT_EQ(fs::path(inspect_volume("data")["Mountpoint"].get<std::string>()), fs::path(volumes_dir()) / "data/disk/workspace");
  struct stat st {};
  ASSERT_EQ(stat(volumes_dir().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // Binds name a volume into being; a container that names one keeps it from removal.
  ASSERT_EQ(docker({"create", "--name", "holder", "--network", "none", "-v", "fresh:/x", "bb:1", "true"}).exit_code, 0);
  EXPECT_EQ(lines(docker({"volume", "ls", "-q"}).out), (std::vector<std::string>{"data", "fresh"}));
  EXPECT_EQ(inspect("holder")["Mounts"][0]["Name"], "fresh");
  CliRun busy = docker({"volume", "rm", "fresh"});
  EXPECT_NE(busy.exit_code, 0);
  EXPECT_NE(busy.err.find("volume is in use"), std::string::npos) << busy.err;
  ASSERT_EQ(docker({"rm", "holder"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "fresh", "data"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(fs::path(volumes_dir()) / "data"));
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "");

  // Anonymous volumes: made without a name, gone with `rm -v`, `run --rm` or `volume prune`.
  ASSERT_EQ(docker({"create", "--name", "anon", "--network", "none", "--mount", "type=volume,target=/a", "bb:1", "true"})
                .exit_code, 0);
  std::string anonymous = inspect("anon")["Mounts"][0]["Name"];
  EXPECT_EQ(anonymous.size(), 64u);
  ASSERT_EQ(docker({"rm", "-v", "anon"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "");
  CliRun removed = docker({"run", "--rm", "--network", "none", "--mount", "type=volume,target=/a", "bb:1", "true"});
  ASSERT_EQ(removed.exit_code, 0) << removed.err;
  // The supervisor removes them just after the container, which is what `run --rm` waits for.
  std::string left = "?";
  for (int i = 0; i < 250 && !left.empty(); ++i) {
    left = docker({"volume", "ls", "-q"}).out;
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(left, "");
  // `-v /path` (Config.Volumes) is an anonymous volume too; `-v x:/path` with a one-letter name
  // reaches it as the path "x:/path" (the CLI's reading), which is no path: refused, not ignored.
  ASSERT_EQ(docker({"create", "--name", "dashv", "--network", "none", "-v", "/anon", "bb:1", "true"}).exit_code, 0);
  EXPECT_EQ(inspect("dashv")["Mounts"][0]["Destination"], "/anon");
  ASSERT_EQ(docker({"rm", "-v", "dashv"}).exit_code, 0);
  CliRun letter = docker({"create", "--network", "none", "-v", "x:/x", "bb:1", "true"});
  EXPECT_NE(letter.exit_code, 0);
  EXPECT_NE(letter.err.find("Config.Volumes: the mount target must be an absolute path"), std::string::npos) << letter.err;
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "");
  ASSERT_EQ(docker({"volume", "create", "named"}).exit_code, 0);
  ASSERT_EQ(docker({"create", "--network", "none", "--mount", "type=volume,target=/a", "bb:1", "true"}).exit_code, 0);
  for (const std::string& id : lines(docker({"ps", "-aq"}).out)) docker({"rm", id});
  CliRun pruned = docker({"volume", "prune", "-f"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.err;
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "named\n");  // only anonymous ones without -a
}

TEST_F(DockerApiMounts, HostPathsAndVolumeNamesThatArePathsAreRefused) {
  CliRun host = docker({"run", "--rm", "--network", "none", "-v", "/etc:/host", "bb:1", "true"});
  EXPECT_NE(host.exit_code, 0);
  EXPECT_NE(host.err.find("HostConfig.Binds /etc: host paths are not mounted by sandcell"), std::string::npos) << host.err;
  CliRun bind = docker({"run", "--rm", "--network", "none", "--mount", "type=bind,source=/etc,target=/h", "bb:1", "true"});
  EXPECT_NE(bind.exit_code, 0);
  EXPECT_NE(bind.err.find("HostConfig.Mounts /h /etc: host paths are not mounted"), std::string::npos) << bind.err;
  auto create = [&](const std::string& host_config) {
    return request("POST", "/containers/create", R"({"Image":"bb:1","HostConfig":)" + host_config + "}").first;
  };
  EXPECT_EQ(create(R"({"Binds":["..:/x"]})"), 400);
  EXPECT_EQ(create(R"({"Binds":["a/b:/x"]})"), 400);
  EXPECT_EQ(create(R"({"Binds":["./rel:/x"]})"), 400);
  EXPECT_EQ(create(R"({"Binds":["v:/x:shared"]})"), 400);
  EXPECT_EQ(create(R"({"Mounts":[{"Type":"volume","Source":"../../etc","Target":"/x"}]})"), 400);
  EXPECT_EQ(create(R"({"Mounts":[{"Type":"volume","Source":"v","Target":"/x","VolumeOptions":{"DriverConfig":)"
                   R"({"Name":"local","Options":{"type":"none","o":"bind","device":"/etc"}}}}]})"),
            400);
  for (const char* name : {"..", ".", "a/b", "../../../etc", "-x", "x"}) {
    auto made = request("POST", "/volumes/create", nlohmann::json{{"Name", name}}.dump());
    EXPECT_EQ(made.first, 400) << name << " " << made.second;
  }
  auto device = request("POST", "/volumes/create",
                        R"({"Name":"dev","DriverOpts":{"type":"none","o":"bind","device":"/etc"}})");
  EXPECT_EQ(device.first, 400);
  EXPECT_EQ(request("GET", "/volumes/%2e%2e").first, 404);
  EXPECT_EQ(request("DELETE", "/volumes/%2e%2e").first, 404);
  EXPECT_TRUE(fs::exists(volumes_dir()));
  EXPECT_EQ(docker({"volume", "ls", "-q"}).out, "");
  EXPECT_EQ(containers_on_disk(), 0u);
}

// A mount point is found inside the container's root (openat2 RESOLVE_IN_ROOT): an image whose
// mount point is a symlink to /etc or to a host path gets the volume on its own /etc, inside.
TEST_F(DockerApiMounts, AMountPointThatIsASymlinkOutOfTheContainerStaysInside) {
  fs::create_directories(dir_ / "hostdir");
  build_image("links:1", "RUN ln -s /etc /data && ln -s " + (dir_ / "hostdir").string() + " /abs && ln -s ../../../../.. /up\n");
  CliRun r = docker({"run", "--rm", "--network", "none", "-v", "v1:/data", "--tmpfs", "/up/t", "links:1", "sh", "-c",
                     "echo a > /data/planted && ls /etc/planted && grep -c ' /t ' /proc/mounts"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "/etc/planted\n1\n");
  EXPECT_FALSE(fs::exists("/etc/planted"));
  EXPECT_EQ(docker({"run", "--rm", "--network", "none", "-v", "v1:/v", "bb:1", "cat", "/v/planted"}).out, "a\n");
  // A link to a host directory names nothing inside the container: the start fails, the
  // host directory stays untouched.
  CliRun host = docker({"run", "--name", "abs", "--network", "none", "-v", "v2:/abs", "links:1", "true"});
  EXPECT_EQ(host.exit_code, 125) << host.out;
  EXPECT_NE(inspect("abs")["State"]["Error"].get<std::string>().find("mount point /abs"), std::string::npos)
      << inspect("abs")["State"];
  EXPECT_TRUE(fs::is_empty(dir_ / "hostdir"));
  ASSERT_EQ(docker({"rm", "abs"}).exit_code, 0);
  // What a sandbox leaves in a volume, links included, goes with it without being followed.
  fs::create_directories(dir_ / "keep");
  std::ofstream(dir_ / "keep/file") << "host";
  ASSERT_EQ(docker({"run", "--rm", "--network", "none", "-v", "v1:/data", "bb:1", "ln", "-s",
                    (dir_ / "keep").string(), "/data/link"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "v1", "v2"}).exit_code, 0);
  EXPECT_TRUE(fs::exists(dir_ / "keep/file"));
}

}  // namespace
}  // namespace sandcell::test
