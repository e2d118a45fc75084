// The Docker Engine API (`sandcell serve --docker-api`, docs/docker-api.md) driven by the real
// clients: Debian's docker CLI (its daemon is never started) and docker-py. Each test starts its
// own server on a private socket with a private store holding a busybox image, and leaves no
// container, supervisor or socket behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

class DockerApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-docker-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ctx");
    fs::copy_file(test_rootfs() + "/bin/busybox", dir_ / "ctx/busybox");
    std::ofstream(dir_ / "ctx/Dockerfile") << "FROM scratch\nCOPY busybox /bin/busybox\n"
                                              "RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\nCMD [\"sh\"]\n";
    CliRun built = run_sandcell({"--root", store(), "build", "-q", "-t", "bb:1", (dir_ / "ctx").string()});
    ASSERT_EQ(built.exit_code, 0) << built.err;
    setenv("DOCKER_HOST", ("unix://" + socket_path()).c_str(), 1);
    start_server();
  }

  void TearDown() override {
    // Whatever a failed test left running goes, through the API, before the server stops.
    for (const std::string& id : lines(docker({"ps", "-aq"}).out)) docker({"rm", "-f", id});
    stop_server();
    unsetenv("DOCKER_HOST");
    // A `run --rm` returns once the container is removed; its supervisor exits just after, so
    // it gets a moment (sanitizer builds are slow), but must not stay.
    const std::string supervisors = serve_binary() + " --root " + store();
    for (int i = 0; i < 500 && !processes_matching(supervisors).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_TRUE(processes_matching(supervisors).empty()) << "a supervisor was left";
    fs::remove_all(dir_);
  }

  std::string store() const { return dir_ / "store"; }
  std::string socket_path() const { return dir_ / "docker.sock"; }
  static std::string serve_binary() { return fs::path(sandcell_binary()).parent_path() / "sandcell-serve"; }

  void start_server() {
    server_ = spawn_sandcell({"--root", store(), "serve", "--docker-api", "unix:" + socket_path()});
    for (int i = 0; i < 200 && !fs::exists(socket_path()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(socket_path()));
  }

  void stop_server() {
    if (server_ <= 0) return;
    kill(server_, SIGTERM);
    int status = 0;
    waitpid(server_, &status, 0);
    server_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the server did not stop cleanly on SIGTERM";
  }

  static CliRun docker(const std::vector<std::string>& args, const std::string& input = "") {
    std::vector<std::string> full{"/usr/bin/timeout", "60", "/usr/bin/docker"};
    full.insert(full.end(), args.begin(), args.end());
    return run_program(full, input);
  }

  // An API request with curl: the status code, then the body.
  std::pair<int, nlohmann::json> request(const std::string& method, const std::string& path,
                                         const std::string& body = "") const {
    std::string body_file = dir_ / "body.json";
    std::ofstream(body_file, std::ios::binary) << body;
    CliRun r = run_program({"/usr/bin/curl", "-s", "--unix-socket", socket_path(), "-X", method, "-H",
                            "Content-Type: application/json", "--data-binary", "@" + body_file, "-w", "\n%{http_code}",
                            "http://docker" + path});
    size_t newline = r.out.rfind('\n');
    int status = newline == std::string::npos ? 0 : std::atoi(r.out.c_str() + newline + 1);
    return {status, nlohmann::json::parse(r.out.substr(0, newline == std::string::npos ? 0 : newline), nullptr, false)};
  }

  nlohmann::json inspect(const std::string& name) const {
    CliRun r = docker({"inspect", name});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    return j.is_array() && !j.empty() ? j[0] : nlohmann::json();
  }

  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) out.push_back(line);
    return out;
  }

  size_t containers_on_disk() const {
    size_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(store() + "/docker/containers", ec))
      if (entry.is_directory()) ++n;
    return n;
  }

  fs::path dir_;
  pid_t server_ = -1;
};

TEST_F(DockerApi, VersionAndInfoNegotiateAndTheSocketIsRootOnly) {
  CliRun version = docker({"version", "--format", "{{.Server.APIVersion}} {{.Server.MinAPIVersion}}"});
  ASSERT_EQ(version.exit_code, 0) << version.err;
  EXPECT_EQ(version.out, "1.43 1.24\n");
  CliRun info = docker({"info", "--format", "{{.Images}} {{.OSType}} {{.CgroupDriver}}"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out, "1 linux cgroupfs\n");
  struct stat st {};
  ASSERT_EQ(stat(socket_path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_uid, 0u);
  // Versioned and unversioned paths alike.
  EXPECT_EQ(request("GET", "/v1.41/version").first, 200);
  EXPECT_EQ(request("GET", "/version").second["ApiVersion"], "1.43");
  EXPECT_EQ(request("GET", "/v1.12/version").first, 400);
}

TEST_F(DockerApi, ImagesListsTheStore) {
  CliRun images = docker({"images", "--format", "{{.Repository}}:{{.Tag}}"});
  ASSERT_EQ(images.exit_code, 0) << images.err;
  EXPECT_EQ(images.out, "bb:1\n");
  auto [status, image] = request("GET", "/images/bb:1/json");
  EXPECT_EQ(status, 200);
  EXPECT_EQ(image["RepoTags"], nlohmann::json({"bb:1"}));
  EXPECT_EQ(image["RootFS"]["Type"], "layers");
}

TEST_F(DockerApi, RunRemovePrintsOutputPassesTheExitCodeAndLeavesNothing) {
  CliRun hi = docker({"run", "--rm", "--network", "none", "bb:1", "echo", "hi"});
  EXPECT_EQ(hi.exit_code, 0) << hi.err;
  EXPECT_EQ(hi.out, "hi\n");
  CliRun both = docker({"run", "--rm", "--network", "none", "bb:1", "sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(both.exit_code, 3);
  EXPECT_EQ(both.out, "out\n");
  EXPECT_EQ(both.err, "err\n");
  EXPECT_EQ(containers_on_disk(), 0u);
}

TEST_F(DockerApi, RunInteractiveForwardsPipedStdinUntilItsEnd) {
  CliRun r = docker({"run", "--rm", "-i", "--network", "none", "bb:1", "sh", "-c", "wc -l; cat"},
                    "one\ntwo\nthree\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "3\n");  // wc read to the end of stdin: the close reached the program
}

TEST_F(DockerApi, DetachedContainerLogsStopsWithItsStateRecordedAndIsRemoved) {
  CliRun run = docker({"run", "-d", "--name", "sleeper", "--network", "none", "bb:1", "sh", "-c", "echo started; exec sleep 100"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::string id = lines(run.out).at(0);
  EXPECT_EQ(id.size(), 64u);
  nlohmann::json running = inspect("sleeper");
  EXPECT_EQ(running["State"]["Status"], "running");
  EXPECT_GT(running["State"]["Pid"].get<int>(), 0);
  std::string logs;
  for (int i = 0; i < 100 && logs.empty(); ++i) logs = docker({"logs", "sleeper"}).out;
  EXPECT_EQ(logs, "started\n");
  EXPECT_EQ(docker({"ps", "--format", "{{.Names}} {{.Status}}"}).out, "sleeper Up\n");
  CliRun rm_running = docker({"rm", "sleeper"});
  EXPECT_NE(rm_running.exit_code, 0);
  EXPECT_NE(rm_running.err.find("Stop the container"), std::string::npos) << rm_running.err;
  CliRun stop = docker({"stop", "-t", "5", "sleeper"});  // SIGTERM ends sleep (not pid 1 here)
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  nlohmann::json exited = inspect(id.substr(0, 12));
  EXPECT_EQ(exited["State"]["Status"], "exited");
  EXPECT_EQ(exited["State"]["Running"], false);
  EXPECT_EQ(exited["State"]["ExitCode"], 143);
  EXPECT_NE(exited["State"]["FinishedAt"], "0001-01-01T00:00:00Z");
  EXPECT_EQ(exited["Sandcell"]["isolation"]["network"], "none");  // sandcell's record
  EXPECT_EQ(docker({"ps", "-a", "--format", "{{.Names}} {{.Status}}"}).out, "sleeper Exited (143)\n");
  EXPECT_EQ(docker({"rm", "sleeper"}).exit_code, 0);
  EXPECT_EQ(docker({"ps", "-aq"}).out, "");
  EXPECT_EQ(containers_on_disk(), 0u);
}

// The stop signal reaches the program (sandcell's init, pid 1 inside, does not pass it on), so a
// program that handles it ends cleanly at once; one that ignores it is killed after `t`.
TEST_F(DockerApi, StopSendsTheStopSignalToTheProgramThenKillsAfterTheTimeout) {
  ASSERT_EQ(docker({"run", "-d", "--name", "graceful", "--network", "none", "bb:1", "sh", "-c",
                    "trap 'echo got term; exit 5' TERM; while :; do sleep 0.1; done"}).exit_code, 0);
  ASSERT_EQ(docker({"run", "-d", "--name", "stubborn", "--network", "none", "bb:1", "sh", "-c",
                    "trap '' TERM; while :; do sleep 0.1; done"}).exit_code, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the traps are set
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(docker({"stop", "-t", "20", "graceful"}).exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(inspect("graceful")["State"]["ExitCode"], 5);
  EXPECT_EQ(docker({"logs", "graceful"}).out, "got term\n");
  EXPECT_EQ(docker({"stop", "-t", "1", "stubborn"}).exit_code, 0);
  EXPECT_EQ(inspect("stubborn")["State"]["ExitCode"], 137);
  EXPECT_EQ(docker({"rm", "graceful", "stubborn"}).exit_code, 0);
}

TEST_F(DockerApi, HostConfigLimitsBecomeSandcellLimitsAndAnOomIsReported) {
  CliRun bomb = docker({"run", "--name", "bomb", "--network", "none", "--memory", "32m", "--pids-limit", "20",
                        "--cpus", "0.5", "bb:1", "sh", "-c", "x=aaaaaaaa; while true; do x=$x$x; done"});
  EXPECT_EQ(bomb.exit_code, 137) << bomb.err;
  nlohmann::json state = inspect("bomb");
  EXPECT_EQ(state["State"]["OOMKilled"], true);
  EXPECT_EQ(state["Sandcell"]["limits"]["memory_bytes"], 32 << 20);
  EXPECT_EQ(state["Sandcell"]["limits"]["pids"], 20);
  EXPECT_EQ(state["Sandcell"]["limits"]["cpus"], 0.5);
  EXPECT_EQ(state["Sandcell"]["status"], "oom");
}

TEST_F(DockerApi, ContainersOutliveTheServerAndAreListedByTheNextOne) {
  ASSERT_EQ(docker({"run", "-d", "--name", "survivor", "--network", "none", "bb:1", "sh", "-c",
                    "echo before; exec sleep 100"}).exit_code, 0);
  stop_server();
  start_server();
  EXPECT_EQ(inspect("survivor")["State"]["Status"], "running");
  EXPECT_EQ(docker({"kill", "survivor"}).exit_code, 0);
  CliRun wait = docker({"wait", "survivor"});
  EXPECT_EQ(wait.out, "137\n") << wait.err;
  EXPECT_EQ(docker({"logs", "survivor"}).out, "before\n");
  EXPECT_EQ(docker({"rm", "survivor"}).exit_code, 0);
}

TEST_F(DockerApi, IsolationWeakeningFieldsAreRefusedNamingTheField) {
  for (const auto& [flag, field] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--privileged"}, "HostConfig.Privileged"},
           {{"--pid", "host"}, "HostConfig.PidMode"},
           {{"--ipc", "host"}, "HostConfig.IpcMode"},
           {{"--network", "host"}, "HostConfig.NetworkMode host"},
           {{"--cap-add", "SYS_ADMIN"}, "HostConfig.CapAdd"},
           {{"--device", "/dev/null"}, "HostConfig.Devices"},
           {{"--security-opt", "seccomp=unconfined"}, "HostConfig.SecurityOpt"},
           {{"-v", "/etc:/host-etc"}, "HostConfig.Binds"},
           {{"-t"}, "Config.Tty"}}) {
    std::vector<std::string> args{"run", "--rm"};
    args.insert(args.end(), flag.begin(), flag.end());
    args.insert(args.end(), {"bb:1", "true"});
    CliRun r = docker(args);
    EXPECT_EQ(r.exit_code, 125) << field;
    EXPECT_NE(r.err.find(field), std::string::npos) << r.err;
  }
  auto [status, body] = request("POST", "/v1.43/containers/create", R"({"Image":"bb:1","HostConfig":{"Privileged":true}})");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.value("message", "").find("HostConfig.Privileged"), std::string::npos) << body;
  EXPECT_EQ(containers_on_disk(), 0u);
  EXPECT_EQ(request("GET", "/_ping").first, 200);
}

TEST_F(DockerApi, BadInputGetsDockerErrorsAndTheServerStaysUp) {
  auto truncated = request("POST", "/containers/create", R"({"Image": "bb:1", "Cmd": [)");
  EXPECT_EQ(truncated.first, 400);
  EXPECT_TRUE(truncated.second.contains("message")) << truncated.second;
  EXPECT_EQ(request("POST", "/containers/create", R"(["not", "an", "object"])").first, 400);
  EXPECT_EQ(request("POST", "/containers/create", R"({"Image": "bb:1", "Cmd": "x", "Env": [1]})").first, 400);
  EXPECT_EQ(request("POST", "/containers/create", R"({"Image": "bb:1", "HostConfig": {"Memory": "lots"}})").first, 400);
  EXPECT_EQ(request("POST", "/containers/create?name=../../etc", R"({"Image": "bb:1"})").first, 400);
  auto missing = request("POST", "/containers/create", R"({"Image": "nosuch:1"})");
  EXPECT_EQ(missing.first, 404);
  EXPECT_EQ(missing.second["message"], "No such image: nosuch:1");
  auto unknown = request("GET", "/containers/nosuch/json");
  EXPECT_EQ(unknown.first, 404);
  EXPECT_EQ(unknown.second["message"], "No such container: nosuch");
  EXPECT_EQ(request("POST", "/containers/create", std::string(5 << 20, ' ')).first, 413);
  EXPECT_EQ(request("POST", "/swarm/init").first, 501);
  EXPECT_EQ(containers_on_disk(), 0u);
  CliRun still = docker({"run", "--rm", "--network", "none", "bb:1", "echo", "still up"});
  EXPECT_EQ(still.out, "still up\n") << still.err;
}

TEST_F(DockerApi, DockerPyRunsRemovesAndDrivesADetachedContainer) {
  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
print(client.api.api_version)
print(client.containers.run("bb:1", ["sh", "-c", "echo from docker-py"], mem_limit="64m",
                            network_disabled=True, remove=True).decode(), end="")
c = client.containers.run("bb:1", ["sh", "-c", "echo up; exec sleep 60"], detach=True, network_mode="none")
c.reload()
print(c.status)
import time
for _ in range(200):  # the program is up before it is stopped
    if c.logs():
        break
    time.sleep(0.02)
c.stop(timeout=1)
c.reload()
print(c.status, c.attrs["State"]["ExitCode"], c.logs().decode(), end="")
c.remove()
print(len(client.containers.list(all=True)))
try:
    client.containers.create("bb:1", "true", privileged=True)
except docker.errors.APIError as e:
    print(e.status_code)
)";
  CliRun r = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1.43\nfrom docker-py\nrunning\nexited 143 up\n0\n400\n");
}

}  // namespace
}  // namespace sandcell::test
