// A container's log, bounded and rotated (docs/docker-api.md, "Log: bounded and rotated";
// dockerapi/src/container_log.cpp): floods stay within max-size x max-file, `logs` reads
// across the generations with --tail, --timestamps and --since, a follower and an attached
// client see every line exactly once while the log rotates under them, bad LogConfig is 400,
// and nothing is left at rm.
#include <fcntl.h>
#include <sys/file.h>

#include <atomic>
#include <regex>
#include <thread>

#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

class DockerApiLog : public DockerApi {
 protected:
  std::string container_dir(const std::string& name) const {
    return store() + "/docker/containers/" + inspect(name)["Id"].get<std::string>();
  }

  // The bytes of the log's generations (log, log.N and their times) in a container directory,
  // counted with log.lock held shared as the server's readers do: no rotation halfway through
  // the count (a file counted under two names).
  static uint64_t log_bytes(const std::string& dir, size_t* generations = nullptr) {
    int lock = open((dir + "/log.lock").c_str(), O_RDWR | O_CLOEXEC);
    if (lock >= 0) flock(lock, LOCK_SH);
    uint64_t total = 0;
    size_t logs = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string name = entry.path().filename().string();
      if (!name.starts_with("log") || name == "log.lock" || name == "log.readers") continue;
      std::error_code size_ec;
      uint64_t size = fs::file_size(entry.path(), size_ec);
      if (!size_ec) total += size;
      static const std::regex kGeneration("log\\.[0-9]+");
      if (name == "log" || std::regex_match(name, kGeneration)) ++logs;
    }
    if (generations) *generations = logs;
    if (lock >= 0) close(lock);
    return total;
  }

  static std::vector<std::string> numbers(int from, int to) {
    std::vector<std::string> out;
    for (int i = from; i <= to; ++i) out.push_back(std::to_string(i));
    return out;
  }

  // True while some server thread reads the container's log (it holds log.readers shared).
  static bool reader_attached(const std::string& dir) {
    int fd = open((dir + "/log.readers").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
    close(fd);
    return held;
  }

  void wait_exited(const std::string& name) {
    CliRun waited = docker({"wait", name});
    ASSERT_EQ(waited.exit_code, 0) << waited.err;
  }

  // Calls `sample` every 5 ms until the container has exited (one `docker wait` blocks in a
  // thread meanwhile), then once more. The loop asked `docker inspect` between samples before:
  // a Go client started back to back took a core from the flood it watched (17 s of CPU in a
  // 4 MiB test, session 31).
  template <class Sample>
  void sample_until_exited(const std::string& name, Sample sample) {
    std::atomic<bool> exited{false};
    CliRun waited;
    std::thread waiter([&] {
      waited = docker({"wait", name});
      exited = true;
    });
    while (!exited) {
      sample();
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    waiter.join();
    sample();
    ASSERT_EQ(waited.exit_code, 0) << waited.err;
  }
};

// A container writing as fast as it can: the log on disk never passes max-size x max-file
// (each generation's frames and times together stay within max-size), sampled all along.
TEST_F(DockerApiLog, FloodStaysWithinMaxSizeTimesMaxFile) {
  ASSERT_EQ(docker({"run", "-d", "--name", "flood", "--network", "none", "--log-opt", "max-size=64k", "--log-opt",
                    "max-file=3", "bb:1", "sh", "-c", "yes | head -c 200m"}).exit_code, 0);
  const std::string dir = container_dir("flood");
  uint64_t most = 0;
  size_t most_generations = 0;
  sample_until_exited("flood", [&] {
    size_t generations = 0;
    most = std::max(most, log_bytes(dir, &generations));
    most_generations = std::max(most_generations, generations);
  });
  EXPECT_LE(most, 3u * 64 * 1024);
  EXPECT_LE(log_bytes(dir), 3u * 64 * 1024);
  EXPECT_EQ(most_generations, 3u);
  EXPECT_TRUE(fs::exists(dir + "/log.2"));
  EXPECT_FALSE(fs::exists(dir + "/log.3"));
  EXPECT_EQ(inspect("flood")["State"]["ExitCode"], 0);
  CliRun logs = docker({"logs", "flood"});
  EXPECT_LE(logs.out.size(), 3u * 64 * 1024);
  EXPECT_GT(logs.out.size(), 64u * 1024);  // the rotated generations are read too
  EXPECT_TRUE(logs.out.ends_with("y\ny\n"));
  EXPECT_EQ(logs.out.find_first_not_of("y\n"), std::string::npos);
  EXPECT_EQ(docker({"rm", "flood"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(containers_on_disk(), 0u);
}

// `yes` without end: the bound holds for as long as it runs (sampled), and `logs` without -f
// returns what is kept when it asked (at most max-file generations), however fast the container
// writes on; a follower ends when the container is removed under it.
TEST_F(DockerApiLog, EndlessFloodStaysBoundedAndLogsWithoutFollowEnds) {
  ASSERT_EQ(docker({"run", "-d", "--name", "endless", "--network", "none", "--log-opt", "max-size=64k", "--log-opt",
                    "max-file=2", "bb:1", "yes"}).exit_code, 0);
  const std::string dir = container_dir("endless");
  uint64_t most = 0;
  for (int i = 0; i < 300; ++i) {
    most = std::max(most, log_bytes(dir));
    if (i % 100 == 99) {
      CliRun logs = docker({"logs", "endless"});
      EXPECT_EQ(logs.exit_code, 0) << logs.err;
      EXPECT_LE(logs.out.size(), 2u * 64 * 1024);
      EXPECT_GT(logs.out.size(), 0u);
      EXPECT_EQ(logs.out.find_first_not_of("y\n"), std::string::npos);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_LE(most, 2u * 64 * 1024);
  EXPECT_TRUE(fs::exists(dir + "/log.1"));
  CliRun followed;
  std::thread follower([&] { followed = docker({"logs", "-f", "--tail", "1", "endless"}); });
  for (int i = 0; i < 3000 && !reader_attached(dir); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(docker({"rm", "-f", "endless"}).exit_code, 0);
  follower.join();
  EXPECT_EQ(followed.out.find_first_not_of("y\n"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir));
}

// Numbered lines over many generations: `logs` is what is kept, in order; --tail N the last N
// lines across generations; --timestamps on each; --since from a frame's time on.
TEST_F(DockerApiLog, LogsReadAcrossGenerationsWithTailTimestampsAndSince) {
  ASSERT_EQ(docker({"run", "--name", "counter", "--network", "none", "--log-opt", "max-size=16k", "--log-opt",
                    "max-file=4", "bb:1", "seq", "1", "20000"}).exit_code, 0);
  const std::string dir = container_dir("counter");
  size_t generations = 0;
  EXPECT_LE(log_bytes(dir, &generations), 4u * 16 * 1024);
  EXPECT_EQ(generations, 4u);
  std::vector<std::string> kept = lines(docker({"logs", "counter"}).out);
  ASSERT_GT(kept.size(), 3000u);
  ASSERT_LT(kept.size(), 20000u);  // the oldest generations went
  // The first kept line may begin mid-line (a generation starts at a frame); the rest follow on.
  const int first = std::stoi(kept[1]);
  EXPECT_EQ(std::vector<std::string>(kept.begin() + 1, kept.end()), numbers(first, 20000));

  EXPECT_EQ(lines(docker({"logs", "--tail", "100", "counter"}).out), numbers(19901, 20000));
  EXPECT_EQ(lines(docker({"logs", "--tail", "3000", "counter"}).out), numbers(17001, 20000));  // over >1 generation
  EXPECT_EQ(lines(docker({"logs", "-n", "all", "counter"}).out), kept);

  std::vector<std::string> stamped = lines(docker({"logs", "--timestamps", "--tail", "3000", "counter"}).out);
  ASSERT_EQ(stamped.size(), 3000u);
  const std::regex kStamped("(20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{9}Z) ([0-9]+)");
  std::vector<std::string> times;
  for (size_t i = 0; i < stamped.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(stamped[i], m, kStamped)) << stamped[i];
    EXPECT_EQ(m[2], std::to_string(17001 + i));
    EXPECT_NE(m[1].str().substr(0, 4), "1970");  // every frame's time found in its generation's side file
    if (!times.empty()) {
      EXPECT_LE(times.back(), m[1].str());
    }
    times.push_back(m[1]);
  }
  // All of it with timestamps: the tail's lines carry the same times. The oldest generation may
  // begin with the newline of a line whose start went with a generation before it: `logs` shows
  // that empty remainder as an empty line (lines() skips it), --timestamps stamps it like any
  // line start ("<time> "). Seen under ASan, whose slower pump cuts frames elsewhere.
  std::vector<std::string> all_stamped = lines(docker({"logs", "--timestamps", "counter"}).out);
  if (!all_stamped.empty() && std::regex_match(all_stamped.front(), std::regex("\\S+Z ")))
    all_stamped.erase(all_stamped.begin());
  ASSERT_EQ(all_stamped.size(), kept.size());
  EXPECT_EQ(std::vector<std::string>(all_stamped.end() - 3000, all_stamped.end()), stamped);
  // --since the time of line 19001's frame: from that frame on (the lines that began in it
  // before 19001 too; a frame holds some thousand of these lines), nothing earlier.
  const std::string since = times[2000];
  std::vector<std::string> after = lines(docker({"logs", "--since", since, "counter"}).out);
  ASSERT_FALSE(after.empty());
  EXPECT_EQ(after.back(), "20000");
  size_t expected = 0;
  for (const std::string& line : all_stamped) expected += line.substr(0, line.find(' ')) >= since;
  EXPECT_GE(after.size(), expected);
  EXPECT_LE(after.size(), expected + 1);  // at most the rest of a line begun in the frame before
  EXPECT_EQ(docker({"rm", "counter"}).exit_code, 0);
}

// `logs -f` and an attached `start -a`, both there before the first line: every numbered line
// exactly once, in order, while the log rotates under them some twenty times.
TEST_F(DockerApiLog, FollowerAndAttachSeeEveryLineOnceAcrossRotations) {
  const std::string script = "i=1; while [ $i -le 3000 ]; do echo $i; i=$((i+1)); usleep 500; done";
  ASSERT_EQ(docker({"create", "--name", "f", "--network", "none", "--log-opt", "max-size=4k", "--log-opt",
                    "max-file=10", "bb:1", "sh", "-c", script}).exit_code, 0);
  const std::string dir = container_dir("f");
  CliRun followed;
  std::thread follower([&] { followed = docker({"logs", "-f", "f"}); });
  for (int i = 0; i < 3000 && !reader_attached(dir); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(reader_attached(dir)) << "the follower never opened the log";
  CliRun attached = docker({"start", "-a", "f"});
  follower.join();
  EXPECT_EQ(attached.exit_code, 0) << attached.err;
  EXPECT_EQ(lines(attached.out), numbers(1, 3000));
  EXPECT_EQ(followed.exit_code, 0) << followed.err;
  EXPECT_EQ(lines(followed.out), numbers(1, 3000));
  EXPECT_TRUE(fs::exists(dir + "/log.9"));  // it did rotate, past max-file
  EXPECT_FALSE(fs::exists(dir + "/log.10"));
  EXPECT_NE(lines(docker({"logs", "f"}).out).front(), "1");  // the first lines are gone from disk
  EXPECT_EQ(docker({"rm", "f"}).exit_code, 0);
}

// `run --rm`: the attached client gets all of a flood that rotated many times, and the
// container's directory goes once it has.
TEST_F(DockerApiLog, RunRmAttachedGetsEverythingAndLeavesNothing) {
  CliRun run = docker({"run", "--rm", "--network", "none", "--log-opt", "max-size=256k", "--log-opt", "max-file=8",
                       "bb:1", "seq", "1", "100000"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(lines(run.out), numbers(1, 100000));
  EXPECT_EQ(containers_on_disk(), 0u);
}

// A Tty container's raw stream is bounded the same way. 2 MiB: 32 times the bound, and a
// terminal carries ~0.8 MB/s here, with the kernel's line discipline and the writer each taking
// most of a core for it.
TEST_F(DockerApiLog, TtyFloodIsBounded) {
  ASSERT_EQ(
      docker({"run", "-d", "-t", "--name", "tflood", "--network", "none", "--log-opt",
              "max-size=32k", "--log-opt", "max-file=2", "bb:1", "sh", "-c", "yes | head -c 2m"})
          .exit_code,
      0);
  const std::string dir = container_dir("tflood");
  uint64_t most = 0;
  sample_until_exited("tflood", [&] { most = std::max(most, log_bytes(dir)); });
  EXPECT_LE(most, 2u * 32 * 1024);
  EXPECT_TRUE(fs::exists(dir + "/log.1"));
  CliRun logs = docker({"logs", "tflood"});
  EXPECT_LE(logs.out.size(), 2u * 32 * 1024);
  EXPECT_TRUE(logs.out.ends_with("y\r\ny\r\n"));
  EXPECT_EQ(docker({"rm", "tflood"}).exit_code, 0);
}

// One line of 100 MB (no newline at all): cut into frames, rotated like any output; the kept
// end of it reads back, --tail 1 included.
TEST_F(DockerApiLog, HundredMegabyteLineWithoutNewlineIsBounded) {
  ASSERT_EQ(docker({"run", "--name", "oneline", "--network", "none", "--log-opt", "max-size=1m", "--log-opt",
                    "max-file=3", "bb:1", "sh", "-c", "head -c 100m /dev/zero | tr '\\0' x"}).exit_code, 0);
  const std::string dir = container_dir("oneline");
  EXPECT_LE(log_bytes(dir), 3u << 20);
  CliRun all = docker({"logs", "oneline"});
  // Two full generations at least (the current one may have just rotated): each holds 1 MiB
  // less its frame headers and times, and less the last frame (≤ 32 KiB) that did not fit.
  EXPECT_GT(all.out.size(), 2 * ((1u << 20) - (64u << 10)));
  EXPECT_LE(all.out.size(), 3u << 20);
  EXPECT_EQ(all.out.find_first_not_of('x'), std::string::npos);
  EXPECT_EQ(docker({"logs", "--tail", "1", "oneline"}).out, all.out);
  EXPECT_EQ(docker({"rm", "oneline"}).exit_code, 0);
}

// A program that closes its stdout and stderr: nothing more in the log, the run ends as usual.
TEST_F(DockerApiLog, ProgramClosingItsOutputEndsNormally) {
  CliRun run = docker({"run", "--name", "closer", "--network", "none", "--log-opt", "max-size=4k", "bb:1", "sh", "-c",
                       "echo before; exec 1>&- 2>&-; sleep 0.2; echo lost; exit 3"});
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_EQ(docker({"logs", "closer"}).out, "before\n");
  EXPECT_EQ(docker({"rm", "closer"}).exit_code, 0);
}

// LogConfig as given or defaulted in inspect; the server's defaults and ceiling from its flags;
// `none` keeps no readable log (logs: Docker's 501) but attach still shows the output.
TEST_F(DockerApiLog, InspectShowsLogConfigGivenOrDefaulted) {
  stop_server();
  start_server({"--docker-api-log-max-size", "2m", "--docker-api-log-max-file", "3", "--docker-api-max-log", "8m"});
  ASSERT_EQ(docker({"create", "--name", "plain", "bb:1", "true"}).exit_code, 0);
  EXPECT_EQ(inspect("plain")["HostConfig"]["LogConfig"],
            nlohmann::json({{"Type", "json-file"}, {"Config", {{"max-size", "2m"}, {"max-file", "3"}}}}));
  ASSERT_EQ(docker({"create", "--name", "given", "--log-driver", "local", "--log-opt", "max-size=1.5MB", "--log-opt",
                    "max-file=4", "bb:1", "true"}).exit_code, 0);
  EXPECT_EQ(inspect("given")["HostConfig"]["LogConfig"],
            nlohmann::json({{"Type", "local"}, {"Config", {{"max-size", "1.5MB"}, {"max-file", "4"}}}}));
  CliRun over = docker({"create", "--log-opt", "max-size=3m", "bb:1", "true"});  // 3m x 3 > 8m
  EXPECT_NE(over.exit_code, 0);
  EXPECT_NE(over.err.find("--docker-api-max-log"), std::string::npos) << over.err;

  CliRun none = docker({"run", "--name", "quiet", "--log-driver", "none", "--network", "none", "bb:1", "echo", "hi"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "hi\n");
  EXPECT_EQ(inspect("quiet")["HostConfig"]["LogConfig"]["Type"], "none");
  CliRun logs = docker({"logs", "quiet"});
  EXPECT_NE(logs.exit_code, 0);
  EXPECT_NE(logs.err.find("does not support reading"), std::string::npos) << logs.err;
  EXPECT_EQ(request("GET", "/containers/quiet/logs?stdout=1").first, 501);

  // docker-py: log_config as its LogConfig type, and run()'s output read back from the log.
  CliRun py = run_program({"/usr/bin/python3", "-c",
                           "import docker\n"
                           "c = docker.from_env()\n"
                           "lc = docker.types.LogConfig(type='json-file', config={'max-size': '64k', 'max-file': '2'})\n"
                           "out = c.containers.run('bb:1', ['seq', '1', '3'], log_config=lc, name='py', network_mode='none')\n"
                           "print(out.decode().split())\n"
                           "print(c.containers.get('py').attrs['HostConfig']['LogConfig']['Config']['max-size'])\n"});
  EXPECT_EQ(py.exit_code, 0) << py.err;
  EXPECT_EQ(py.out, "['1', '2', '3']\n64k\n");
}

// Bad LogConfig: 400 naming the field, nothing created.
TEST_F(DockerApiLog, BadLogConfigIsRefusedNamingTheField) {
  struct Case {
    nlohmann::json log_config;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{{"Type", "syslog"}}, "LogConfig.Type syslog"},
      {{{"Type", 7}}, "LogConfig.Type"},
      {"json-file", "HostConfig.LogConfig must be an object"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", "abc"}}}}, "max-size"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", "-1"}}}}, "max-size -1"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", "0"}}}}, "max-size 0"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", "100"}}}}, "too small"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", "99999999999999999999999g"}}}}, "max-size"},
      {{{"Type", "json-file"}, {"Config", {{"max-size", 1024}}}}, "max-size must be a string"},
      {{{"Type", "json-file"}, {"Config", {{"max-file", "0"}}}}, "max-file"},
      {{{"Type", "json-file"}, {"Config", {{"max-file", "-3"}}}}, "max-file"},
      {{{"Type", "json-file"}, {"Config", {{"max-file", "101"}}}}, "max-file"},
      {{{"Type", "json-file"}, {"Config", {{"max-file", "3x"}}}}, "max-file"},
      {{{"Type", "json-file"}, {"Config", {{"max-file", "99999999999"}}}}, "max-file"},
      {{{"Type", "local"}, {"Config", {{"max-size", "100m"}, {"max-file", "100"}}}}, "--docker-api-max-log"},
      {{{"Type", "json-file"}, {"Config", {{"labels", "a"}}}}, "LogConfig.Config.labels"},
      {{{"Type", "json-file"}, {"Config", {{"compress", "true"}}}}, "compress"},
      {{{"Type", "none"}, {"Config", {{"max-size", "1m"}}}}, "none log driver takes no options"},
      {{{"Type", "json-file"}, {"Config", "max-size=1m"}}, "LogConfig.Config must be an object"},
  };
  for (const Case& c : cases) {
    nlohmann::json body = {{"Image", "bb:1"}, {"Cmd", {"true"}}, {"HostConfig", {{"LogConfig", c.log_config}}}};
    auto [status, reply] = request("POST", "/containers/create", body.dump());
    EXPECT_EQ(status, 400) << c.log_config.dump();
    EXPECT_NE(reply.value("message", "").find(c.names), std::string::npos) << c.log_config.dump() << ": " << reply;
  }
  EXPECT_EQ(containers_on_disk(), 0u);
  CliRun cli = docker({"run", "--log-driver", "syslog", "bb:1", "true"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("LogConfig.Type syslog"), std::string::npos) << cli.err;
  // Docker's units are taken: 10MB, 512k, 1.5g, 2MiB (binary multiples), 4096.
  for (const char* size : {"10MB", "512k", "1.5m", "2MiB", "4096", "1 KB"}) {
    nlohmann::json body = {{"Image", "bb:1"}, {"Cmd", {"true"}},
                           {"HostConfig", {{"LogConfig", {{"Type", "json-file"}, {"Config", {{"max-size", size}}}}}}}};
    auto [status, reply] = request("POST", "/containers/create", body.dump());
    EXPECT_EQ(status, 201) << size << ": " << reply;
    if (status == 201) docker({"rm", reply["Id"].get<std::string>()});
  }
}

}  // namespace
}  // namespace sandcell::test
