// HostConfig fields of `docker run` that shape the container's own sandbox (docs/docker-api.md,
// "Mapping"): its writable root, --read-only, --cpu-shares, --shm-size and --security-opt, each
// through the real docker CLI against a private server.
#include <fstream>
#include <tuple>

#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

// The cpu cgroup directory of a host process, from its /proc/<pid>/cgroup (a v1 host: the
// "cpu" or "cpu,cpuacct" line), "" when it has none.
std::string cpu_cgroup_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cgroup");
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find(':'), second = line.find(':', first + 1);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    if (controllers == "cpu" || controllers.starts_with("cpu,"))
      return "/sys/fs/cgroup/" + controllers + line.substr(second + 1);
  }
  return "";
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

TEST_F(DockerApi, AContainerWritesAnywhereInItsOwnRootAsDockerLets) {
  CliRun r = docker({"run", "--rm", "--network", "none", "bb:1", "sh", "-c",
                     "mkdir -p /usr/local && echo x > /usr/local/f && cat /usr/local/f && "
                     "echo y > /etc/g && cat /etc/g && grep -c ' / overlay rw,' /proc/mounts"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "x\ny\n1\n");
}

// Docker's --read-only keeps writable only what is mounted on the root (volumes, --tmpfs) and
// /dev/shm; /tmp is part of the root and read-only too. The root mount itself is read-only, so a
// write there is EROFS ("Read-only file system"), for the program and for an exec alike.
TEST_F(DockerApi, ReadOnlyRootfsIsAReadOnlyMountWithShmTmpfsAndVolumesWritable) {
  ASSERT_EQ(docker({"run", "-d", "--name", "ro", "--network", "none", "--read-only", "--tmpfs",
                    "/scratch", "-v", "data:/data", "bb:1", "sleep", "100"})
                .exit_code,
            0);
  CliRun r = docker({"exec", "ro", "sh", "-c",
                     "for p in /etc/f /bin/f /tmp/f /f; do touch $p 2>&1; done; mkdir /bin/d 2>&1; "
                     "for p in /dev/shm/f /scratch/f /data/f; do echo ok > $p && cat $p; done; "
                     "grep ' / overlay ' /proc/mounts | cut -d' ' -f4 | cut -d, -f1"});
  EXPECT_EQ(r.out,
            "touch: /etc/f: Read-only file system\ntouch: /bin/f: Read-only file system\n"
            "touch: /tmp/f: Read-only file system\ntouch: /f: Read-only file system\n"
            "mkdir: can't create directory '/bin/d': Read-only file system\n"
            "ok\nok\nok\nro\n")
      << r.err;
  EXPECT_EQ(inspect("ro")["HostConfig"]["ReadonlyRootfs"], true);
  EXPECT_EQ(docker({"rm", "-f", "ro"}).exit_code, 0);
  EXPECT_EQ(docker({"volume", "rm", "data"}).exit_code, 0);
}

TEST_F(DockerApi, CpuSharesGoToTheContainersCgroupAndItsRecord) {
  ASSERT_EQ(docker({"run", "-d", "--name", "w", "--network", "none", "--cpu-shares", "512", "bb:1",
                    "sleep", "4242"})
                .exit_code,
            0);
  std::vector<pid_t> sleeping;
  for (int i = 0; i < 200 && sleeping.empty(); ++i) {
    sleeping = processes_matching("sleep 4242");
    if (sleeping.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(sleeping.size(), 1u);
  const std::string cgroup = cpu_cgroup_of(sleeping[0]);
  ASSERT_NE(cgroup.find("/sandcell/"), std::string::npos) << cgroup;
  EXPECT_EQ(first_line(cgroup + "/cpu.shares"), "512");
  EXPECT_EQ(inspect("w")["HostConfig"]["CpuShares"], 512);
  EXPECT_EQ(docker({"kill", "w"}).exit_code, 0);
  EXPECT_EQ(docker({"wait", "w"}).out, "137\n");
  nlohmann::json record = inspect("w")["Sandcell"];
  EXPECT_EQ(record["limits"]["cpu_shares"], 512) << record.dump();
  EXPECT_EQ(record["enforced"]["cpu_shares"], "cgroup-v1") << record.dump();
  EXPECT_EQ(docker({"rm", "w"}).exit_code, 0);
  // Docker's bounds, 2 to 262144 (0: the default), refused outside them naming the field.
  for (const char* shares : {"1", "262145", "-5"}) {
    CliRun refused = docker({"run", "--rm", "--cpu-shares", shares, "bb:1", "true"});
    EXPECT_EQ(refused.exit_code, 125) << shares;
    EXPECT_NE(refused.err.find("HostConfig.CpuShares"), std::string::npos) << refused.err;
  }
  EXPECT_EQ(containers_on_disk(), 0u);
}

// /dev/shm is a tmpfs of --shm-size (Docker's 64 MiB without it); writing past it is ENOSPC.
TEST_F(DockerApi, ShmSizeIsTheSizeOfTheDevShmTmpfs) {
  const std::string script =
      "df -k /dev/shm | tail -1 | awk '{print $2}'; "
      "dd if=/dev/zero of=/dev/shm/f bs=1M count=12 2>&1 | grep -o 'No space left on device'";
  CliRun sized =
      docker({"run", "--rm", "--network", "none", "--shm-size", "8m", "bb:1", "sh", "-c", script});
  EXPECT_EQ(sized.out, "8192\nNo space left on device\n") << sized.err;
  CliRun standard = docker({"run", "--rm", "--network", "none", "bb:1", "sh", "-c",
                            "df -k /dev/shm | tail -1 | awk '{print $2}'"});
  EXPECT_EQ(standard.out, "65536\n") << standard.err;
  auto [status, body] =
      request("POST", "/containers/create", R"({"Image": "bb:1", "HostConfig": {"ShmSize": -1}})");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.value("message", "").find("HostConfig.ShmSize"), std::string::npos) << body;
}

// The CLI reads the profile file and sends its JSON text (`seccomp={...}`); the profile becomes a
// filter stacked on sandcell's own, so it can deny more and never allow more.
TEST_F(DockerApi, ASeccompProfileIsLayeredOnSandcellsFilterAndCanOnlyDenyMore) {
  const std::string deny_mkdir = (dir_ / "deny-mkdir.json").string();
  std::ofstream(deny_mkdir) << R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
      {"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]})";
  ASSERT_EQ(
      docker({"run", "-d", "--name", "nomk", "--network", "none", "--security-opt",
              "seccomp=" + deny_mkdir, "bb:1", "sh", "-c",
              "mkdir /tmp/x 2>/tmp/err; cat /tmp/err; grep Seccomp_filters /proc/self/status; "
              "exec sleep 100"})
          .exit_code,
      0);
  std::string out;
  for (int i = 0; i < 200 && out.find("Seccomp_filters") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    out = docker({"logs", "nomk"}).out;
  }
  EXPECT_EQ(
      out,
      "mkdir: can't create directory '/tmp/x': Operation not permitted\nSeccomp_filters:\t2\n");
  // An exec'd process gets the same stack.
  CliRun exec = docker({"exec", "nomk", "mkdir", "/tmp/y"});
  EXPECT_NE(exec.exit_code, 0);
  EXPECT_NE(exec.err.find("Operation not permitted"), std::string::npos) << exec.err;
  nlohmann::json options = inspect("nomk")["HostConfig"]["SecurityOpt"];
  ASSERT_EQ(options.size(), 1u) << options;
  EXPECT_TRUE(options[0].get<std::string>().starts_with("seccomp={"))
      << options;  // the file's JSON, not its path
  EXPECT_EQ(docker({"rm", "-f", "nomk"}).exit_code, 0);

  // Allowing everything lets nothing through that sandcell's filter denies: mount(2) is still
  // denied, and counted by sandcell's supervisor.
  const std::string allow_all = (dir_ / "allow-all.json").string();
  std::ofstream(allow_all) << R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": []})";
  CliRun mounted = docker({"run", "--name", "all", "--network", "none", "--security-opt",
                           "seccomp=" + allow_all, "bb:1", "sh", "-c",
                           "mkdir /tmp/m && mount -t tmpfs none /tmp/m 2>&1 || echo refused"});
  EXPECT_EQ(mounted.out, "mount: permission denied (are you root?)\nrefused\n") << mounted.err;
  nlohmann::json denied = inspect("all")["Sandcell"]["events"]["denied_syscalls"];
  EXPECT_NE(denied.dump().find("\"mount\""), std::string::npos) << denied;
  EXPECT_EQ(inspect("all")["Sandcell"]["isolation"]["seccomp"], "default+docker-seccomp");
  EXPECT_EQ(docker({"rm", "all"}).exit_code, 0);
}

TEST_F(DockerApi, WeakeningOrMalformedSecurityOptsAreRefused) {
  const std::string bad_action = (dir_ / "bad.json").string();
  std::ofstream(bad_action) << R"({"defaultAction": "SCMP_ACT_NOPE"})";
  // systempaths=unconfined: the CLI sends empty MaskedPaths and ReadonlyPaths instead.
  for (const auto& [option, field, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"seccomp=unconfined", "HostConfig.SecurityOpt", "would weaken the sandbox"},
           {"seccomp=" + bad_action, "HostConfig.SecurityOpt", "invalid profile"},
           {"apparmor=unconfined", "HostConfig.SecurityOpt", "could weaken the sandbox"},
           {"apparmor=docker-default", "HostConfig.SecurityOpt", "could weaken the sandbox"},
           {"label=disable", "HostConfig.SecurityOpt", "would weaken the sandbox"},
           {"systempaths=unconfined", "HostConfig.MaskedPaths", "would weaken the sandbox"},
           {"no-new-privileges=false", "HostConfig.SecurityOpt", "would weaken the sandbox"}}) {
    CliRun r = docker({"run", "--rm", "--security-opt", option, "bb:1", "true"});
    EXPECT_EQ(r.exit_code, 125) << option;
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << option << ": " << r.err;
  }
  // The CLI compacts the file's JSON itself; a raw request can send anything.
  auto [status, body] =
      request("POST", "/containers/create",
              R"({"Image": "bb:1", "HostConfig": {"SecurityOpt": ["seccomp={not json"]}})");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.value("message", "").find("HostConfig.SecurityOpt"), std::string::npos) << body;
  auto twice = request(
      "POST", "/containers/create",
      R"({"Image": "bb:1", "HostConfig": {"SecurityOpt": ["seccomp={\"defaultAction\": \"SCMP_ACT_ALLOW\"}",
                           "seccomp={\"defaultAction\": \"SCMP_ACT_ALLOW\"}"]}})");
  EXPECT_EQ(twice.first, 400);
  EXPECT_NE(twice.second.value("message", "").find("seccomp is given twice"), std::string::npos)
      << twice.second;
  EXPECT_EQ(containers_on_disk(), 0u);
  // What sandcell applies anyway is accepted: its AppArmor profile (where the host has AppArmor),
  // no-new-privileges.
  CliRun same =
      docker({"run", "--rm", "--network", "none", "--security-opt", "apparmor=sandcell-default",
              "--security-opt", "no-new-privileges", "bb:1", "echo", "ran"});
  EXPECT_EQ(same.out, "ran\n") << same.err;
}

}  // namespace sandcell::test
