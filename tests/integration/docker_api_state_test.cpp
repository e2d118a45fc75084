// The Docker API's container state endpoints (docs/docker-api.md): `ps` filters, stats, events,
// pause/unpause, restart, rename, container prune, top and the network list, driven by the
// docker CLI and docker-py against a server on a private socket (docker_api_fixture.hpp).
#include <regex>

#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

std::string unix_now() { return std::to_string(time(nullptr)); }

class DockerApiState : public DockerApi {
 protected:
  static std::string logs(const std::string& name) { return docker({"logs", name}).out; }
  // Polls `docker logs` until `done` holds for it (at most ~10 s); the last output.
  template <typename Done>
  static std::string logs_until(const std::string& name, Done done) {
    std::string out;
    for (int i = 0; i < 200; ++i) {
      out = logs(name);
      if (done(out)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return out;
  }
};

TEST_F(DockerApiState, PsFiltersByStatusLabelNameIdAncestorAndExitCodeWithLimitAndSize) {
  ASSERT_EQ(docker({"run", "--name", "three", "--label", "team=x", "--network", "none", "bb:1", "sh", "-c",
                    "head -c 8192 /dev/zero > /tmp/big; exit 3"}).exit_code, 3);
  ASSERT_EQ(docker({"run", "-d", "--name", "busy", "--label", "team=y", "--network", "none", "bb:1", "sleep", "100"})
                .exit_code, 0);
  ASSERT_EQ(docker({"create", "--name", "fresh", "--label", "team", "--network", "none", "bb:1", "true"}).exit_code, 0);
  std::string three_id = inspect("three")["Id"];
  auto names = [](const std::vector<std::string>& flags) {
    std::vector<std::string> args{"ps", "--format", "{{.Names}}"};
    args.insert(args.end(), flags.begin(), flags.end());
    CliRun r = docker(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  EXPECT_EQ(names({"-a", "--filter", "status=exited", "--filter", "label=team=x"}), "three\n");
  EXPECT_EQ(names({"-a", "--filter", "status=exited", "--filter", "label=team=y"}), "");
  EXPECT_EQ(names({"--filter", "label=team"}), "busy\n");  // running only without -a
  EXPECT_EQ(names({"-a", "--filter", "label=team"}), "fresh\nbusy\nthree\n");  // newest first
  EXPECT_EQ(names({"-a", "--filter", "status=created"}), "fresh\n");
  EXPECT_EQ(names({"-a", "--filter", "exited=3"}), "three\n");
  EXPECT_EQ(names({"-a", "--filter", "exited=0"}), "");
  EXPECT_EQ(names({"-a", "--filter", "name=bus"}), "busy\n");
  EXPECT_EQ(names({"-a", "--filter", "id=" + three_id.substr(0, 10)}), "three\n");
  EXPECT_EQ(names({"-a", "--filter", "ancestor=bb:1", "--filter", "status=running"}), "busy\n");
  EXPECT_EQ(names({"-a", "--filter", "ancestor=other:1"}), "");
  EXPECT_EQ(names({"-n", "1"}), "fresh\n");  // a limit lists stopped ones too, as Docker does
  EXPECT_EQ(names({"-a", "--filter", "status=running", "--filter", "status=created"}), "fresh\nbusy\n");
  auto [status, listed] = request("GET", "/containers/json?all=1&size=1&filters=%7B%22name%22%3A%5B%22three%22%5D%7D");
  ASSERT_EQ(status, 200);
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_GE(listed[0]["SizeRw"].get<int64_t>(), 8192);  // /tmp/big in its writable layer
  EXPECT_EQ(docker({"rm", "-f", "three", "busy", "fresh"}).exit_code, 0);
}

TEST_F(DockerApiState, HostileListFiltersAndLimitsGetDockerErrorsAndTheServerStaysUp) {
  std::string deep;  // 200 levels, past the parser's bound of 128
  for (int i = 0; i < 200; ++i) deep = "%5B" + deep + "%5D";
  for (const std::string& query : std::vector<std::string>{
           "/containers/json?filters=%7B%22status%22%3A",           // truncated JSON
           "/containers/json?filters=" + deep,                        // nested far too deep
           "/containers/json?filters=%5B%5D",                         // not an object
           "/containers/json?filters=%7B%22bogus%22%3A%5B%22x%22%5D%7D",  // unknown filter
           "/containers/json?filters=%7B%22status%22%3A%5B%22sleepy%22%5D%7D",
           "/containers/json?filters=%7B%22exited%22%3A%5B%22x%22%5D%7D",
           "/containers/json?filters=%7B%22label%22%3A%7B%22a%22%3A1%7D%7D",  // value not true
           "/containers/json?limit=99999999999999999999999",
           "/containers/json?limit=ten",
           "/events?since=yesterday",
           "/events?filters=%7B%22daemon%22%3A%5B%22x%22%5D%7D",
           "/containers/prune?filters=%7B%22until%22%3A%5B%22soon%22%5D%7D",
           "/networks?filters=%7B%22bogus%22%3A%5B%22x%22%5D%7D",
       }) {
    const std::string method = query.starts_with("/containers/prune") ? "POST" : "GET";
    auto [status, body] = request(method, query);
    EXPECT_EQ(status, 400) << query;
    EXPECT_TRUE(body.contains("message")) << query;
  }
  EXPECT_EQ(request("GET", "/containers/json?limit=4000000000000").first, 200);  // huge but valid: all there is
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/containers/nope/stats?stream=false"}, {"GET", "/containers/nope/top"},
           {"POST", "/containers/nope/pause"}, {"POST", "/containers/nope/unpause"},
           {"POST", "/containers/nope/restart"}, {"POST", "/containers/nope/rename?name=x"},
           {"GET", "/networks/nope"}}) {
    auto [status, body] = request(method, path);
    EXPECT_EQ(status, 404) << path;
    EXPECT_TRUE(body["message"].is_string()) << path;
  }
  EXPECT_EQ(request("POST", "/networks/create", R"({"Name":"mine"})").first, 501);
  EXPECT_EQ(docker({"version"}).exit_code, 0);  // still serving
  EXPECT_EQ(containers_on_disk(), 0u);
}

TEST_F(DockerApiState, StatsReportTheContainersCgroupFigures) {
  // A tenth of a core: its CPU time still grows between two samples, and the test no longer
  // takes a whole core from the tests beside it for its 8 s.
  ASSERT_EQ(
      docker({"run", "-d", "--name", "spinner", "--memory", "64m", "--pids-limit", "30", "--cpus",
              "0.1", "--network", "none", "bb:1", "sh", "-c", "sleep 100 & while :; do :; done"})
          .exit_code,
      0);
  CliRun row = docker({"stats", "--no-stream", "--format", "{{.Name}}|{{.MemUsage}}|{{.PIDs}}", "spinner"});
  ASSERT_EQ(row.exit_code, 0) << row.err;
  EXPECT_NE(row.out.find("spinner|"), std::string::npos) << row.out;
  EXPECT_NE(row.out.find("/ 64MiB|"), std::string::npos) << row.out;
  CliRun all = docker({"stats", "--no-stream", "--format", "{{.Name}}"});  // every running container
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(all.out, "spinner\n");
  auto [status, stats] = request("GET", "/containers/spinner/stats?stream=false");
  ASSERT_EQ(status, 200);
  EXPECT_EQ(stats["memory_stats"]["limit"], 64 << 20);
  EXPECT_GT(stats["memory_stats"]["usage"].get<uint64_t>(), 0u);
  EXPECT_EQ(stats["pids_stats"]["limit"], 30);
  // sh and sleep (and on v2 sandcell's init, which v1 leaves outside the pids hierarchy)
  EXPECT_GE(stats["pids_stats"]["current"].get<int>(), 2) << docker({"top", "spinner"}).out;
  // Two samples: the busy loop's CPU time grew between them, as the host's did.
  EXPECT_GT(stats["cpu_stats"]["cpu_usage"]["total_usage"].get<uint64_t>(),
            stats["precpu_stats"]["cpu_usage"]["total_usage"].get<uint64_t>());
  EXPECT_GT(stats["cpu_stats"]["system_cpu_usage"].get<uint64_t>(),
            stats["precpu_stats"]["system_cpu_usage"].get<uint64_t>());
  EXPECT_GE(stats["cpu_stats"]["online_cpus"].get<int>(), 1);
  // Streamed: docker-py reads documents one after the other, each with the previous as precpu.
  CliRun streamed = run_program({"/usr/bin/timeout", "60", "python3", "-c",
                                 "import docker, itertools\n"
                                 "c = docker.from_env().containers.get('spinner')\n"
                                 "s = list(itertools.islice(c.stats(stream=True, decode=True), 3))\n"
                                 "print(s[2]['precpu_stats']['cpu_usage']['total_usage'] == "
                                 "s[1]['cpu_stats']['cpu_usage']['total_usage'], s[2]['name'])\n"});
  EXPECT_EQ(streamed.out, "True /spinner\n") << streamed.err;
  auto [stopped_status, stopped] = request("GET", "/containers/nope-not-here/stats?stream=false");
  EXPECT_EQ(stopped_status, 404);
  EXPECT_EQ(docker({"rm", "-f", "spinner"}).exit_code, 0);
}

TEST_F(DockerApiState, EventsReportTheLifeOfAContainerAndADieWhenItsSupervisorIsKilled) {
  const std::string since = unix_now();
  ASSERT_EQ(docker({"run", "--name", "brief", "--label", "kind=test", "--network", "none", "bb:1", "sh", "-c",
                    "exit 4"}).exit_code, 4);
  ASSERT_EQ(docker({"rm", "brief"}).exit_code, 0);
  CliRun events = docker({"events", "--since", since, "--until", std::to_string(time(nullptr) + 1), "--filter",
                          "container=brief", "--format", "{{.Type}} {{.Action}} {{index .Actor.Attributes \"exitCode\"}}"});
  ASSERT_EQ(events.exit_code, 0) << events.err;
  EXPECT_EQ(events.out, "container create \ncontainer start \ncontainer die 4\ncontainer destroy \n");
  CliRun labelled = docker({"events", "--since", since, "--until", std::to_string(time(nullptr) + 1), "--filter",
                            "label=kind=test", "--filter", "event=die", "--format", "{{.Actor.Attributes.name}}"});
  EXPECT_EQ(labelled.out, "brief\n") << labelled.err;
  EXPECT_EQ(docker({"events", "--since", since, "--until", unix_now(), "--filter", "label=kind=other"}).out, "");
  // An OOM kill, and image tag and untag.
  ASSERT_EQ(docker({"run", "--rm", "--name", "bomb", "--memory", "32m", "--network", "none", "bb:1", "sh", "-c",
                    "x=aaaaaaaa; while true; do x=$x$x; done"}).exit_code, 137);
  ASSERT_EQ(docker({"tag", "bb:1", "bb:2"}).exit_code, 0);
  ASSERT_EQ(docker({"rmi", "bb:2"}).exit_code, 0);
  CliRun more = docker({"events", "--since", since, "--until", std::to_string(time(nullptr) + 1), "--filter",
                        "event=oom", "--filter", "event=tag", "--filter", "event=untag", "--format",
                        "{{.Type}} {{.Action}} {{.Actor.Attributes.name}}"});
  EXPECT_EQ(more.out, "container oom bomb\nimage tag bb:2\nimage untag bb:2\n") << more.err;

  // The supervisor, a process of its own, is killed: the server notices and records the die.
  ASSERT_EQ(docker({"run", "-d", "--name", "orphan", "--network", "none", "bb:1", "sleep", "100"}).exit_code, 0);
  const std::string before_kill = unix_now();
  pid_t supervisor = inspect("orphan")["State"]["Pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  CliRun die = docker({"events", "--since", before_kill, "--until", std::to_string(time(nullptr) + 4), "--filter",
                       "container=orphan", "--filter", "event=die", "--format", "{{.Action}}"});
  EXPECT_EQ(die.out, "die\n") << die.err;
  EXPECT_EQ(docker({"wait", "orphan"}).out, "137\n");  // its waiters are released too
  EXPECT_EQ(inspect("orphan")["State"]["Error"], "supervisor gone");
  EXPECT_EQ(docker({"rm", "orphan"}).exit_code, 0);
  EXPECT_EQ(run_sandcell({"gc"}).exit_code, 0);  // the killed supervisor's run state and cgroups

  // A follower without `until` that goes away: the server's thread for it ends (the keepalive
  // newline fails to reach it) instead of waiting for events forever.
  auto threads = [this] {
    size_t n = 0;
    for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(server_) + "/task")) n += entry.exists();
    return n;
  };
  const size_t before = threads();
  CliRun follower = run_program({"/usr/bin/timeout", "2", "/usr/bin/docker", "events"});
  EXPECT_EQ(follower.exit_code, 124);  // still following when timeout ended it
  size_t after = threads();
  for (int i = 0; i < 250 && after > before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = threads();
  }
  EXPECT_LE(after, before);
}

// The server's waiters (wait, logs -f, attach) sleep on inotify and on a pidfd of the supervisor
// (container_wake.hpp): how many inotify instances the server holds says how many are waiting.
size_t inotify_instances(pid_t pid) {
  size_t n = 0;
  std::error_code ec;
  for (const auto& fd : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec)) {
    std::error_code link_ec;
    if (fs::read_symlink(fd.path(), link_ec).string() == "anon_inode:inotify") ++n;
  }
  return n;
}

// A supervisor killed with SIGKILL writes nothing: the clients waiting on its container (wait,
// logs -f, attach) each get their answer all the same (the waiter whose pidfd fires records the
// end), and the die is recorded once. (The test's name is short: the socket's path is in it.)
TEST_F(DockerApiState, KilledSupervisorStillAnswersWaitFollowAndAttach) {
  ASSERT_EQ(docker({"run", "-d", "--name", "victim", "--network", "none", "bb:1", "sh", "-c",
                    "echo ready; exec sleep 1000"}).exit_code, 0);
  ASSERT_EQ(logs_until("victim", [](const std::string& out) { return out == "ready\n"; }), "ready\n");
  const size_t idle = inotify_instances(server_);
  CliRun waited, followed, attached;
  std::thread waiter([&] { waited = docker({"wait", "victim"}); });
  std::thread follower([&] { followed = docker({"logs", "-f", "victim"}); });
  std::thread attacher([&] { attached = docker({"attach", "--no-stdin", "victim"}); });
  for (int i = 0; i < 3000 && inotify_instances(server_) < idle + 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(inotify_instances(server_), idle + 3) << "the three clients never waited";
  const std::string before_kill = unix_now();
  pid_t supervisor = inspect("victim")["State"]["Pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  waiter.join();
  follower.join();
  attacher.join();
  EXPECT_EQ(waited.exit_code, 0) << waited.err;
  EXPECT_EQ(waited.out, "137\n");
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(followed.out, "ready\n");
  EXPECT_EQ(attached.exit_code, 137) << attached.err;
  nlohmann::json state = inspect("victim")["State"];
  EXPECT_EQ(state["Status"], "exited");
  EXPECT_EQ(state["Error"], "supervisor gone");
  CliRun die = docker({"events", "--since", before_kill, "--until", std::to_string(time(nullptr) + 1), "--filter",
                       "container=victim", "--filter", "event=die", "--format", "{{.Action}}"});
  EXPECT_EQ(die.out, "die\n") << die.err;  // once, whoever noticed first
  EXPECT_EQ(docker({"rm", "victim"}).exit_code, 0);
  EXPECT_EQ(run_sandcell({"gc"}).exit_code, 0);  // the killed supervisor's run state and cgroups
}

// The supervisor ends a run by recording it in state.json, then writing the exit file. Killed
// between the two (here: stopped, its record written for it, then killed), it leaves "exited"
// with no exit: the waiters that were waiting and one that comes after still get the status
// code the record holds, and the die is recorded once with it.
TEST_F(DockerApiState, KilledBetweenRecordAndExitFile) {
  ASSERT_EQ(docker({"run", "-d", "--name", "gap", "--network", "none", "bb:1", "sh", "-c",
                    "echo ready; exec sleep 1000"}).exit_code, 0);
  ASSERT_EQ(logs_until("gap", [](const std::string& out) { return out == "ready\n"; }), "ready\n");
  const nlohmann::json inspected = inspect("gap");
  const pid_t supervisor = inspected["State"]["Pid"].get<pid_t>();
  ASSERT_GT(supervisor, 0);
  const fs::path dir = fs::path(store()) / "docker/containers" / inspected["Id"].get<std::string>();
  const size_t idle = inotify_instances(server_);
  CliRun early;
  std::thread early_waiter([&] { early = docker({"wait", "gap"}); });
  for (int i = 0; i < 3000 && inotify_instances(server_) < idle + 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const std::string before_kill = unix_now();
  ASSERT_EQ(kill(supervisor, SIGSTOP), 0);
  nlohmann::json state;
  {
    std::ifstream in(dir / "state.json");
    state = nlohmann::json::parse(in);
  }
  ASSERT_EQ(state["Status"], "running");
  state["Status"] = "exited";
  state["ExitCode"] = 3;
  {
    std::ofstream out(dir / "state.json.tmp");
    out << state.dump();
  }
  fs::rename(dir / "state.json.tmp", dir / "state.json");
  CliRun late;
  std::thread late_waiter([&] { late = docker({"wait", "gap"}); });
  for (int i = 0; i < 3000 && inotify_instances(server_) < idle + 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(fs::file_size(dir / "exit"), 0u);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  early_waiter.join();
  late_waiter.join();
  EXPECT_EQ(early.out, "3\n") << early.err;
  EXPECT_EQ(late.out, "3\n") << late.err;
  EXPECT_EQ(docker({"wait", "gap"}).out, "3\n");
  CliRun die = docker({"events", "--since", before_kill, "--until", std::to_string(time(nullptr) + 1), "--filter",
                       "container=gap", "--filter", "event=die", "--format", "{{.Actor.Attributes.exitCode}}"});
  EXPECT_EQ(die.out, "3\n") << die.err;  // once
  EXPECT_EQ(docker({"rm", "gap"}).exit_code, 0);
  EXPECT_EQ(run_sandcell({"gc"}).exit_code, 0);  // the killed supervisor's sandbox, run state and cgroups
}

// The server stops under waiters that have no answer yet: they end (the eventfd every waiter
// polls), and so does the server.
TEST_F(DockerApiState, ServerStopEndsWaitersWithoutAnswer) {
  CliRun waited, followed;
  ASSERT_EQ(docker({"run", "-d", "--name", "sleeper", "--network", "none", "bb:1", "sleep", "1000"}).exit_code, 0);
  const size_t before = inotify_instances(server_);
  std::thread waiter2([&] { waited = docker({"wait", "sleeper"}); });
  std::thread follower2([&] { followed = docker({"logs", "-f", "sleeper"}); });
  for (int i = 0; i < 3000 && inotify_instances(server_) < before + 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(inotify_instances(server_), before + 2) << "the two clients never waited";
  stop_server();  // expects a clean exit: no stream thread left sleeping
  waiter2.join();
  follower2.join();
  EXPECT_NE(waited.exit_code, 124);  // ended by the server, not by the timeout
  EXPECT_NE(followed.exit_code, 124);
  start_server();
  EXPECT_EQ(docker({"rm", "-f", "sleeper"}).exit_code, 0);
}

TEST_F(DockerApiState, PauseFreezesTheContainerAndUnpauseResumesIt) {
  ASSERT_EQ(docker({"run", "-d", "--name", "counter", "--network", "none", "bb:1", "sh", "-c",
                    "i=0; while :; do i=$((i+1)); echo $i; sleep 0.05; done"}).exit_code, 0);
  logs_until("counter", [](const std::string& out) { return !out.empty(); });
  CliRun paused = docker({"pause", "counter"});
  ASSERT_EQ(paused.exit_code, 0) << paused.err;
  nlohmann::json state = inspect("counter")["State"];
  EXPECT_EQ(state["Status"], "paused");
  EXPECT_EQ(state["Paused"], true);
  EXPECT_EQ(state["Running"], true);
  EXPECT_EQ(docker({"ps", "--format", "{{.Names}} {{.Status}}"}).out, "counter Up (Paused)\n");
  EXPECT_EQ(docker({"ps", "--filter", "status=paused", "--format", "{{.Names}}"}).out, "counter\n");
  EXPECT_EQ(docker({"info", "--format", "{{.ContainersPaused}} {{.ContainersRunning}}"}).out, "1 0\n");
  EXPECT_NE(docker({"pause", "counter"}).exit_code, 0);  // already paused: 409
  CliRun exec = docker({"exec", "counter", "true"});
  EXPECT_NE(exec.exit_code, 0);
  EXPECT_NE(exec.err.find("paused"), std::string::npos) << exec.err;
  const std::string frozen = logs("counter");
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // a dozen lines if it ran
  EXPECT_EQ(logs("counter"), frozen);
  ASSERT_EQ(docker({"unpause", "counter"}).exit_code, 0);
  std::string resumed = logs_until("counter", [&frozen](const std::string& out) { return out.size() > frozen.size(); });
  EXPECT_GT(resumed.size(), frozen.size());
  EXPECT_NE(docker({"unpause", "counter"}).exit_code, 0);  // not paused: 409
  // A paused container still stops: the signal is delivered once it is thawed.
  ASSERT_EQ(docker({"pause", "counter"}).exit_code, 0);
  CliRun stop = docker({"stop", "-t", "5", "counter"});
  EXPECT_EQ(stop.exit_code, 0) << stop.err;
  EXPECT_EQ(inspect("counter")["State"]["Status"], "exited");
  EXPECT_EQ(docker({"rm", "counter"}).exit_code, 0);
}

TEST_F(DockerApiState, RestartKeepsTheWritableLayerAndRenameAndTopWork) {
  ASSERT_EQ(docker({"run", "-d", "--name", "phoenix", "--network", "none", "bb:1", "sh", "-c",
                    "echo x >> /tmp/starts; wc -l < /tmp/starts; exec sleep 100"}).exit_code, 0);
  logs_until("phoenix", [](const std::string& out) { return out == "1\n"; });
  std::string first_start = inspect("phoenix")["State"]["StartedAt"];
  CliRun restart = docker({"restart", "-t", "1", "phoenix"});
  ASSERT_EQ(restart.exit_code, 0) << restart.err;
  EXPECT_EQ(logs_until("phoenix", [](const std::string& out) { return out == "1\n2\n"; }), "1\n2\n");
  nlohmann::json state = inspect("phoenix")["State"];
  EXPECT_EQ(state["Status"], "running");
  EXPECT_NE(state["StartedAt"], first_start);

  CliRun top = docker({"top", "phoenix"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  std::vector<std::string> rows = lines(top.out);
  ASSERT_GE(rows.size(), 2u);
  EXPECT_TRUE(rows[0].starts_with("UID")) << top.out;
  EXPECT_NE(top.out.find("sleep 100"), std::string::npos) << top.out;
  EXPECT_NE(docker({"top", "phoenix", "aux"}).exit_code, 0);  // ps_args are refused, not ignored

  CliRun renamed = docker({"rename", "phoenix", "ash"});
  ASSERT_EQ(renamed.exit_code, 0) << renamed.err;
  EXPECT_EQ(inspect("ash")["Name"], "/ash");
  EXPECT_NE(docker({"inspect", "phoenix"}).exit_code, 0);
  ASSERT_EQ(docker({"create", "--name", "other", "bb:1"}).exit_code, 0);
  CliRun taken = docker({"rename", "ash", "other"});
  EXPECT_NE(taken.exit_code, 0);
  EXPECT_NE(taken.err.find("already in use"), std::string::npos) << taken.err;
  EXPECT_EQ(request("POST", "/containers/ash/rename?name=..%2Fetc").first, 400);
  EXPECT_EQ(docker({"ps", "-a", "--format", "{{.Names}}"}).out, "other\nash\n");
  // A stopped container starts again (docker start), its layer kept.
  ASSERT_EQ(docker({"stop", "-t", "1", "ash"}).exit_code, 0);
  ASSERT_EQ(docker({"start", "ash"}).exit_code, 0);
  EXPECT_EQ(logs_until("ash", [](const std::string& out) { return out == "1\n2\n3\n"; }), "1\n2\n3\n");
  EXPECT_EQ(docker({"rm", "-f", "ash", "other"}).exit_code, 0);
}

TEST_F(DockerApiState, ContainerPruneRemovesStoppedContainersMatchingItsFilters) {
  ASSERT_EQ(docker({"run", "--name", "old1", "--label", "gone=yes", "--network", "none", "bb:1", "true"}).exit_code, 0);
  ASSERT_EQ(docker({"run", "--name", "old2", "--network", "none", "bb:1", "true"}).exit_code, 0);
  ASSERT_EQ(docker({"run", "-d", "--name", "alive", "--label", "gone=yes", "--network", "none", "bb:1", "sleep", "100"})
                .exit_code, 0);
  CliRun labelled = docker({"container", "prune", "-f", "--filter", "label=gone=yes"});
  ASSERT_EQ(labelled.exit_code, 0) << labelled.err;
  EXPECT_EQ(docker({"ps", "-a", "--format", "{{.Names}}"}).out, "alive\nold2\n");
  CliRun until_past = docker({"container", "prune", "-f", "--filter", "until=2000-01-01T00:00:00Z"});
  ASSERT_EQ(until_past.exit_code, 0) << until_past.err;
  EXPECT_EQ(docker({"ps", "-a", "--format", "{{.Names}}"}).out, "alive\nold2\n");  // made after 2000
  CliRun all = docker({"container", "prune", "-f"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(docker({"ps", "-a", "--format", "{{.Names}}"}).out, "alive\n");  // running: kept
  EXPECT_EQ(docker({"rm", "-f", "alive"}).exit_code, 0);
  EXPECT_EQ(containers_on_disk(), 0u);
}

TEST_F(DockerApiState, NetworksListNoneBridgeAndHostAndCreateIsNotImplemented) {
  CliRun ls = docker({"network", "ls", "--format", "{{.Name}} {{.Driver}} {{.Scope}}"});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "bridge bridge local\nhost host local\nnone null local\n");
  EXPECT_EQ(docker({"network", "ls", "--filter", "driver=null", "--format", "{{.Name}}"}).out, "none\n");
  CliRun none = docker({"network", "inspect", "none", "--format", "{{.Driver}} {{index .Options \"sandcell.policy\"}}"});
  ASSERT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "null sandcell none: loopback only\n");
  ASSERT_EQ(docker({"run", "-d", "--name", "onnone", "--network", "none", "bb:1", "sleep", "100"}).exit_code, 0);
  EXPECT_EQ(docker({"network", "inspect", "none", "--format", "{{range .Containers}}{{.Name}}{{end}}"}).out, "onnone\n");
  CliRun create = docker({"network", "create", "mine"});
  EXPECT_NE(create.exit_code, 0);
  EXPECT_NE(create.err.find("not implemented"), std::string::npos) << create.err;
  EXPECT_EQ(docker({"rm", "-f", "onnone"}).exit_code, 0);
}

// `logs --tail N`: the last N lines of the streams asked for, whatever frames they came in
// (a frame may hold several lines or part of one).
TEST_F(DockerApiState, LogsTailKeepsTheLastLinesOfTheStreamsAskedFor) {
  ASSERT_EQ(docker({"run", "--name", "talker", "--network", "none", "bb:1", "sh", "-c",
                    "printf 'a\\nb\\nc'; echo; sleep 0.1; echo err1 >&2; sleep 0.1; printf 'd\\ne\\n'; "
                    "printf 'part'; sleep 0.1; echo ial; sleep 0.1; echo err2 >&2"}).exit_code, 0);
  EXPECT_EQ(logs("talker"), "a\nb\nc\nd\ne\npartial\n");
  CliRun two = docker({"logs", "--tail", "2", "talker"});
  EXPECT_EQ(two.out, "partial\n");  // with err2, the last two lines
  EXPECT_EQ(two.err, "err2\n");
  EXPECT_EQ(docker({"logs", "--tail", "3", "talker"}).out, "e\npartial\n");
  // stdout alone: its last two lines, in well-formed frames (the first one cut at the line).
  CliRun raw = run_program({"/usr/bin/curl", "-s", "--unix-socket", socket_path(),
                            "http://docker/containers/talker/logs?stdout=1&tail=2"});
  std::string payload;
  for (size_t at = 0; at + 8 <= raw.out.size();) {
    EXPECT_EQ(raw.out[at], 1);  // stdout
    size_t size = static_cast<unsigned char>(raw.out[at + 4]) << 24 | static_cast<unsigned char>(raw.out[at + 5]) << 16 |
                  static_cast<unsigned char>(raw.out[at + 6]) << 8 | static_cast<unsigned char>(raw.out[at + 7]);
    payload += raw.out.substr(at + 8, size);
    at += 8 + size;
  }
  EXPECT_EQ(payload, "e\npartial\n");
  EXPECT_EQ(docker({"logs", "--tail", "0", "talker"}).out, "");
  EXPECT_EQ(docker({"logs", "--tail", "1000", "talker"}).out, "a\nb\nc\nd\ne\npartial\n");
  EXPECT_EQ(request("GET", "/containers/talker/logs?stdout=1&tail=many").first, 400);
  EXPECT_EQ(docker({"rm", "talker"}).exit_code, 0);
}

// `logs --timestamps`: each line with the time its output was written (log.times, kept by the
// supervisor); `--since` leaves out what was written before.
TEST_F(DockerApiState, LogsTimestampsAndSinceUseTheTimeEachOutputWasWritten) {
  ASSERT_EQ(docker({"run", "--name", "clock", "--network", "none", "bb:1", "sh", "-c",
                    "printf 'one\\ntw'; sleep 0.2; echo o; sleep 0.2; echo three"}).exit_code, 0);
  std::vector<std::string> stamped = lines(docker({"logs", "--timestamps", "clock"}).out);
  ASSERT_EQ(stamped.size(), 3u);
  const std::regex kStamped("(20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z) (.*)");
  std::vector<std::string> times;
  for (const std::string& line : stamped) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kStamped)) << line;
    times.push_back(m[1]);
  }
  EXPECT_TRUE(stamped[0].ends_with(" one"));
  EXPECT_TRUE(stamped[1].ends_with(" two"));  // a line split over two writes: the first one's time
  EXPECT_EQ(times[0], times[1]);
  EXPECT_LT(times[1], times[2]);
  EXPECT_EQ(docker({"logs", "--since", times[2], "clock"}).out, "three\n");
  EXPECT_EQ(docker({"logs", "--since", times[0], "clock"}).out, "one\ntwo\nthree\n");
  EXPECT_EQ(docker({"logs", "--timestamps", "--tail", "1", "clock"}).out, stamped[2] + "\n");
  EXPECT_EQ(request("GET", "/containers/clock/logs?stdout=1&since=later").first, 400);
  EXPECT_EQ(docker({"rm", "clock"}).exit_code, 0);
}

// docker-py's own calls for the same endpoints (its parameter spellings: `True`, lists of
// filter values, datetime `since`).
TEST_F(DockerApiState, DockerPyDrivesFiltersPauseTopEventsPruneAndNetworks) {
  CliRun r = run_program({"/usr/bin/timeout", "120", "python3", "-c", R"(
import datetime, docker
client = docker.from_env()
start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=1)
c = client.containers.run('bb:1', ['sleep', '100'], name='py', labels={'app': 'py'}, detach=True,
                          network_mode='none')
client.containers.run('bb:1', ['sh', '-c', 'exit 7'], name='done', network_mode='none', detach=True).wait()
print([x.name for x in client.containers.list(filters={'label': 'app=py'})])
print([x.name for x in client.containers.list(all=True, filters={'exited': 7})])
c.pause(); c.reload(); print(c.status)
c.unpause(); c.reload(); print(c.status)
print(any('sleep 100' in p[-1] for p in c.top()['Processes']))
c.rename('py2'); c.reload(); print(c.name)
print(sorted(n.name for n in client.networks.list()))
until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=1)
print([e['Action'] for e in client.events(since=start, until=until, decode=True,
                                          filters={'container': 'done', 'event': ['create', 'die']})])
print(len(client.containers.prune()['ContainersDeleted']))
c.remove(force=True)
)"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "['py']\n['done']\npaused\nrunning\nTrue\npy2\n['bridge', 'host', 'none']\n['create', 'die']\n1\n");
}

}  // namespace
}  // namespace sandcell::test
