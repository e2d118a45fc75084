// The Docker Engine API (`sandcell serve --docker-api`, docs/docker-api.md) driven by the real
// clients: Debian's docker CLI (its daemon is never started) and docker-py. Each test starts its
// own server on a private socket with a private store holding a busybox image, and leaves no
// container, supervisor or socket behind (docker_api_fixture.hpp).
#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

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
  // `--init` (HostConfig.Init): sandcell's init is pid 1 of every container anyway.
  CliRun init = docker({"run", "--rm", "--init", "--network", "none", "bb:1", "sh", "-c", "echo $$"});
  EXPECT_EQ(init.exit_code, 0) << init.err;
  EXPECT_NE(init.out, "1\n");
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

// HostConfig.Ulimits: the program and an exec see them (the rest of the default rlimits kept);
// what is not Docker's shape is a 400 naming the field, and nothing is created.
TEST_F(DockerApi, UlimitsBecomeTheContainersRlimitsAndBadOnesAreRefused) {
  ASSERT_EQ(docker({"run", "-d", "--name", "limited", "--network", "none", "--ulimit", "nofile=512:1000",
                    "--ulimit", "nproc=200:300", "bb:1", "sleep", "100"}).exit_code, 0);
  const std::string show = "echo $(ulimit -Sn) $(ulimit -Hn) $(ulimit -Su) $(ulimit -Hu) $(ulimit -c) $(ulimit -l)";
  EXPECT_EQ(docker({"exec", "limited", "sh", "-c", show}).out, "512 1000 200 300 0 0\n");
  EXPECT_EQ(docker({"exec", "limited", "sh", "-c", "cat /proc/1/limits | grep -c '^Max open files *512 *1000'"}).out, "1\n");
  EXPECT_EQ(inspect("limited")["HostConfig"]["Ulimits"],
            nlohmann::json::parse(R"([{"Name":"nofile","Soft":512,"Hard":1000},{"Name":"nproc","Soft":200,"Hard":300}])"));
  EXPECT_EQ(docker({"rm", "-f", "limited"}).exit_code, 0);
  for (const auto& [ulimits, phrase] : std::vector<std::pair<std::string, std::string>>{
           {R"([{"Name":"bogus","Soft":1,"Hard":1}])", "invalid ulimit type: bogus"},
           {R"([{"Name":"NOFILE","Soft":1,"Hard":1}])", "invalid ulimit type: NOFILE"},
           {R"([{"Name":"nofile","Soft":2048,"Hard":1024}])", "soft limit 2048 is above the hard limit 1024"},
           {R"([{"Name":"nofile","Soft":-1,"Hard":1024}])", "soft limit -1 is above the hard limit 1024"},
           {R"([{"Name":"nofile","Soft":"1","Hard":1}])", "Soft must be an integer"},
           {R"([{"Name":"nofile","Soft":1,"Hard":-2}])", "Hard must be an integer >= -1"},
           {R"([{"Name":"nofile","Soft":1,"Hard":1},{"Name":"nofile","Soft":2,"Hard":2}])", "nofile is given twice"},
           {R"([{"Soft":1,"Hard":1}])", "needs a Name"},
           {R"({"nofile":1})", "HostConfig.Ulimits must be an array"}}) {
    auto [status, body] = request("POST", "/containers/create",
                                  R"({"Image":"bb:1","HostConfig":{"Ulimits":)" + ulimits + "}}");
    EXPECT_EQ(status, 400) << ulimits;
    EXPECT_NE(body.value("message", "").find(phrase), std::string::npos) << body;
  }
  EXPECT_EQ(containers_on_disk(), 0u);
}

// Names are compared whole, as Docker does: a name that is another container's id prefix is
// free; a name in use is a 409 at create and at rename.
TEST_F(DockerApi, ANameIsTakenOnlyByTheSameNameNotByAnIdPrefix) {
  CliRun first = docker({"create", "--network", "none", "bb:1", "true"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string prefix = first.out.substr(0, 3);
  CliRun second = docker({"create", "--name", prefix, "--network", "none", "bb:1", "true"});
  EXPECT_EQ(second.exit_code, 0) << second.err;
  CliRun again = docker({"create", "--name", prefix, "--network", "none", "bb:1", "true"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("is already in use"), std::string::npos) << again.err;
  CliRun rename = docker({"rename", first.out.substr(0, 12), prefix});
  EXPECT_NE(rename.exit_code, 0);
  EXPECT_NE(rename.err.find("is already in use"), std::string::npos) << rename.err;
  EXPECT_EQ(docker({"rm", prefix}).exit_code, 0);
  EXPECT_EQ(docker({"rm", first.out.substr(0, 12)}).exit_code, 0);
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
           {{"-v", "/etc:/host-etc"}, "HostConfig.Binds"}}) {
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

// What confines a process, as it sees it: its credentials, capabilities, no_new_privs, seccomp,
// cgroups, namespaces, rlimits, and the root's writability (a Docker container's root is
// writable, to Landlock too: a write to /etc succeeds).
constexpr const char* kConfinementFingerprint =
    "grep -E "
    "'^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):' "
    "/proc/self/status; cat /proc/self/cgroup; "
    "for n in cgroup ipc mnt net pid uts user; do echo $n $(readlink /proc/self/ns/$n); done; "
    "cat /proc/self/limits; "
    "if touch /etc/sc-landlock-probe 2>/dev/null; then echo etc-writable; else echo etc-denied; fi";

// An exec'd process joins the container's sandbox and takes exactly the confinement of the
// container's own program: the same namespaces and cgroups, no capabilities, no_new_privs,
// seccomp, rlimits, and the same LSM layer (Landlock here).
TEST_F(DockerApi, ExecRunsUnderExactlyTheConfinementOfTheContainersProgram) {
  ASSERT_EQ(
      docker({"run", "-d", "--name", "box", "--network", "none", "bb:1", "sh", "-c",
              std::string("(") + kConfinementFingerprint + ") > /tmp/main.txt; exec sleep 100"})
          .exit_code,
      0);
  std::string main;
  for (int i = 0; i < 200 && main.find("etc-") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    main = docker({"exec", "box", "cat", "/tmp/main.txt"}).out;
  }
  ASSERT_NE(main.find("NoNewPrivs:\t1"), std::string::npos) << main;
  ASSERT_NE(main.find("etc-writable"), std::string::npos) << main;
  CliRun exec = docker({"exec", "box", "sh", "-c", kConfinementFingerprint});
  EXPECT_EQ(exec.exit_code, 0) << exec.err;
  EXPECT_EQ(exec.out, main);
  EXPECT_EQ(docker({"rm", "-f", "box"}).exit_code, 0);
}

TEST_F(DockerApi, ExecPassesExitCodesStdinEnvAndWorkdirAndSeesTheContainersFiles) {
  ASSERT_EQ(docker({"run", "-d", "--name", "box", "--network", "none", "bb:1", "sh", "-c",
                    "echo kept > /tmp/file; exec sleep 100"})
                .exit_code,
            0);
  CliRun code = docker({"exec", "box", "sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(code.exit_code, 3);
  EXPECT_EQ(code.out, "out\n");
  EXPECT_EQ(code.err, "err\n");
  CliRun input = docker({"exec", "-i", "box", "sh", "-c", "wc -l"}, "a\nb\n");
  EXPECT_EQ(input.out, "2\n") << input.err;
  CliRun env = docker(
      {"exec", "-e", "FOO=bar", "-w", "/tmp", "box", "sh", "-c", "echo $FOO $(pwd) $(cat file)"});
  EXPECT_EQ(env.out, "bar /tmp kept\n") << env.err;
  // Who the exec is changes nothing of its confinement: no capabilities as uid 0 or 1000, no
  // directory made for its working directory.
  EXPECT_EQ(docker({"exec", "-u", "0", "box", "grep", "CapEff", "/proc/self/status"}).out,
            "CapEff:\t0000000000000000\n");
  EXPECT_EQ(
      docker({"exec", "-u", "1000", "box", "sh", "-c", "id -u; grep CapEff /proc/self/status"}).out,
      "1000\nCapEff:\t0000000000000000\n");
  EXPECT_NE(docker({"exec", "-w", "/made/by/exec", "box", "true"}).exit_code, 0);
  EXPECT_EQ(docker({"exec", "box", "test", "-e", "/made"}).exit_code, 1);
  // kill(0) reaches the exec'd process' own group, not the API server's.
  EXPECT_EQ(docker({"exec", "box", "sh", "-c", "kill -KILL 0"}).exit_code, 137);
  EXPECT_EQ(docker({"ps", "-q"}).exit_code, 0);
  CliRun missing = docker({"exec", "box", "/no/such/program"});
  EXPECT_EQ(missing.exit_code, 127);
  EXPECT_NE(missing.err.find("/no/such/program"), std::string::npos) << missing.err;
  auto [status, body] = request("POST", "/containers/box/exec", R"({"Cmd": "not a list"})");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.value("message", "").find("Cmd"), std::string::npos) << body;
  EXPECT_EQ(
      request("POST", "/containers/box/exec", R"({"Cmd": ["true"], "Privileged": true})").first,
      400);
  EXPECT_EQ(request("GET", "/exec/nosuch/json").first, 404);
  EXPECT_EQ(request("POST", "/exec/" + std::string(64, 'a') + "/start", "{}").first, 404);
  EXPECT_EQ(docker({"stop", "-t", "1", "box"}).exit_code, 0);
  auto stopped = request("POST", "/containers/box/exec", R"({"Cmd": ["true"]})");
  EXPECT_EQ(stopped.first, 409);
  EXPECT_EQ(docker({"rm", "box"}).exit_code, 0);
}

TEST_F(DockerApi, DockerPyExecRunDrivesALongLivedContainer) {
  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
c = client.containers.run("bb:1", ["sleep", "60"], detach=True, network_mode="none")
r = c.exec_run(["sh", "-c", "echo hello; exit 4"])
print(r.exit_code, r.output.decode(), end="")
r = c.exec_run(["sh", "-c", "echo o; echo e >&2"], demux=True)
print(r.exit_code, r.output)
r = c.exec_run(["sh", "-c", "touch /tmp/detached"], detach=True)
import time
for _ in range(100):
    if c.exec_run(["test", "-e", "/tmp/detached"]).exit_code == 0:
        print("detached ran")
        break
    time.sleep(0.05)
c.remove(force=True)
)";
  CliRun r = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "4 hello\n0 (b'o\\n', b'e\\n')\ndetached ran\n");
}

// docker cp both ways through the real CLI; a symlink in the container is copied as a link and
// never followed on the host.
TEST_F(DockerApi, CpCopiesFilesBothWaysAndKeepsSymlinksAsLinks) {
  ASSERT_EQ(docker({"run", "-d", "--name", "box", "--network", "none", "bb:1", "sh", "-c",
                    "mkdir -p /tmp/data/sub; echo inside > /tmp/data/f; echo deep > /tmp/data/sub/g; ln -s "
                    "/etc /tmp/data/etclink; "
                    "exec sleep 100"})
                .exit_code,
            0);
  for (int i = 0; i < 200 && docker({"exec", "box", "test", "-L", "/tmp/data/etclink"}).exit_code != 0;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CliRun out = docker({"cp", "box:/tmp/data/f", (dir_ / "f").string()});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(run_program({"/bin/cat", (dir_ / "f").string()}).out, "inside\n");
  ASSERT_EQ(docker({"cp", "box:/tmp/data", (dir_ / "copied").string()}).exit_code, 0);
  EXPECT_EQ(run_program({"/bin/cat", (dir_ / "copied/sub/g").string()}).out, "deep\n");
  EXPECT_TRUE(fs::is_symlink(dir_ / "copied/etclink"));
  EXPECT_EQ(fs::read_symlink(dir_ / "copied/etclink"), "/etc");
  std::ofstream(dir_ / "in.txt") << "from the host\n";
  CliRun in = docker({"cp", (dir_ / "in.txt").string(), "box:/tmp/data/in.txt"});
  ASSERT_EQ(in.exit_code, 0) << in.err;
  EXPECT_EQ(docker({"exec", "box", "cat", "/tmp/data/in.txt"}).out, "from the host\n");
  CliRun missing = docker({"cp", "box:/no/such/file", (dir_ / "x").string()});
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.err.find("No such container:path"), std::string::npos)
      << missing.err;  // the CLI's word for a 404
  EXPECT_EQ(docker({"stop", "-t", "1", "box"}).exit_code, 0);
  EXPECT_EQ(request("GET", "/containers/box/archive?path=/tmp/data/f").first, 409);
  EXPECT_EQ(docker({"rm", "box"}).exit_code, 0);
}

// The code-interpreter flow of docker-py (put_archive, get_archive) and hostile archives and
// paths: every path resolves inside the container, whatever symlinks it planted.
TEST_F(DockerApi, ArchiveResolvesEveryPathInsideTheContainer) {
  const std::string secret = (dir_ / "host-secret").string();
  std::ofstream(secret) << "host only\n";
  std::string script = R"(
import docker, io, sys, tarfile
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
host_dir, secret = sys.argv[2], sys.argv[3]
c = client.containers.run("bb:1", ["sh", "-c", "ln -s %s /tmp/hostlink; ln -s / /tmp/rootlink; exec sleep 60" % host_dir],
                          detach=True, network_mode="none")
while c.exec_run(["test", "-L", "/tmp/rootlink"]).exit_code != 0:
    pass
def tar_of(*entries):
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as t:
        for info, content in entries:
            t.addfile(info, io.BytesIO(content) if content is not None else None)
    return data.getvalue()
def entry(name, content=b"", mode=0o644, kind=tarfile.REGTYPE, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.linkname = kind, mode, link
    info.size = len(content) if kind == tarfile.REGTYPE else 0
    return info, content if kind == tarfile.REGTYPE else None
def status(call):
    try:
        call()
        return 200
    except docker.errors.APIError as e:
        return e.status_code
# The flow: code in by archive, run by exec, results out by archive.
print(c.put_archive("/tmp", tar_of(entry("job.sh", b"echo $((6*7)) > /tmp/result\n", 0o755))))
print(c.exec_run(["sh", "/tmp/job.sh"]).exit_code)
bits, stat = c.get_archive("/tmp/result")
with tarfile.open(fileobj=io.BytesIO(b"".join(bits))) as t:
    print(stat["name"], stat["size"], t.extractfile("result").read().decode().strip())
# Reading through planted symlinks and "..": the container's tree, never the host's.
print(status(lambda: c.get_archive("/tmp/hostlink/" + secret.rsplit("/", 1)[1])))
print(status(lambda: c.get_archive("/../../../.." + secret)))
print(status(lambda: c.get_archive("/tmp/rootlink" + secret)))
# Kernel file systems are the host kernel's: not read nor written with sandcell's privileges.
print(status(lambda: c.get_archive("/proc/1/environ")), status(lambda: c.get_archive("/proc")))
print(status(lambda: c.put_archive("/proc", tar_of(entry("x")))))
# Writing: "..", absolute names, links out and device nodes are refused; the host is untouched.
print(status(lambda: c.put_archive("/tmp", tar_of(entry("../../../../.." + host_dir + "/dotdot")))))
print(status(lambda: c.put_archive("/tmp", tar_of(entry("ln", kind=tarfile.SYMTYPE, link=host_dir),
                                                  entry("ln/through-link")))))
print(status(lambda: c.put_archive("/tmp", tar_of(entry("hard", kind=tarfile.LNKTYPE, link="../../../etc/shadow")))))
print(status(lambda: c.put_archive("/tmp", tar_of(entry("dev", kind=tarfile.CHRTYPE)))))
print(status(lambda: c.put_archive("/tmp/rootlink", tar_of(entry("at-root")))))
print(c.exec_run(["test", "-e", "/at-root"]).exit_code)
# A setuid file loses the bit; the extraction point must be a directory.
c.put_archive("/tmp", tar_of(entry("suid", b"x", 0o4755)))
print(c.exec_run(["sh", "-c", "ls -l /tmp/suid | cut -c1-10"]).output.decode().strip())
print(status(lambda: c.put_archive("/tmp/job.sh", tar_of(entry("y")))), status(lambda: c.put_archive("/nope", tar_of(entry("y")))))
c.remove(force=True)
)";
  CliRun r = run_program(
      {"/usr/bin/python3", "-c", script, "unix://" + socket_path(), dir_.string(), secret});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "True\n0\nresult 3 42\n"
            "404\n404\n404\n"
            "400 400\n400\n"
            "400\n400\n400\n400\n200\n0\n"
            "-rwxr-xr-x\n"
            "400 404\n");
  EXPECT_FALSE(fs::exists(dir_ / "dotdot"));
  EXPECT_FALSE(fs::exists(dir_ / "through-link"));
  EXPECT_EQ(run_program({"/bin/cat", secret}).out, "host only\n");
}

}  // namespace
}  // namespace sandcell::test
