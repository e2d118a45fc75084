// The Docker API's terminals (docs/docker-api.md, "Tty"): `docker run -it` and `docker exec -it`
// driven under a pseudo-terminal of the test's own (Python's pty module), so the docker CLI
// believes a person is typing; docker-py's raw output; resize and its hostile sizes; programs
// that close their terminal, flood it, or push input into it with TIOCSTI; and no fd, FIFO or
// process left behind. Every container is `--network none`: a terminal needs no network, and the
// default bridge needs the host's IPv4 forwarding, off on a fresh machine (sandcell never turns it
// on).
#include "docker_api_fixture.hpp"

namespace sandcell::test {
namespace {

// Runs argv under a new pty of ROWS x COLS (set before the program starts). `steps`: when the
// output since the last step shows `expect`, do the step: write `send` to the terminal (as
// typed), or `resize` it (the program gets SIGWINCH as from a terminal window). Prints one
// JSON object: the output (latin-1), the exit code, how many steps were done.
constexpr const char* kPtyDriver = R"(
import fcntl, json, os, pty, select, signal, struct, sys, termios, time
spec = json.loads(sys.argv[1])
def size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
pid, fd = pty.fork()
if pid == 0:
    size(0, spec["rows"], spec["cols"])
    os.execv(spec["argv"][0], spec["argv"])
out, seen, steps, deadline = b"", 0, spec.get("steps", []), time.time() + 60
done = 0
while time.time() < deadline:
    ready, _, _ = select.select([fd], [], [], 0.1)
    if ready:
        try:
            data = os.read(fd, 65536)
        except OSError:
            data = b""
        if not data:
            break
        out += data
    while done < len(steps) and steps[done]["expect"].encode() in out[seen:]:
        seen = out.index(steps[done]["expect"].encode(), seen) + len(steps[done]["expect"])
        if "send" in steps[done]:
            os.write(fd, steps[done]["send"].encode())
        if "resize" in steps[done]:
            size(fd, *steps[done]["resize"])
        done += 1
else:
    os.kill(pid, signal.SIGKILL)
_, status = os.waitpid(pid, 0)
code = os.waitstatus_to_exitcode(status)
print(json.dumps({"out": out.decode("latin-1"), "exit": code, "steps": done}))
)";

struct PtyRun {
  std::string out;
  int exit_code = -1;
  int steps = 0;
};

// The terminal's size once it has one: Debian's docker CLI (20.10, API 1.41) sends no
// ConsoleSize and resizes only after `start`, so the program may run before that (as with
// Docker); a shell waits for it (busybox's `stty size` prints nothing for 0 x 0).
constexpr const char* kSizeOnceKnown =
    "n=0; until s=$(stty size 2>/dev/null) && [ -n \"$s\" ]; do n=$((n+1)); [ $n -gt 400 ] && break; "
    "sleep 0.05; done; echo \"size:$s\"; ";

class DockerApiTty : public DockerApi {
 protected:
  PtyRun under_pty(const std::vector<std::string>& argv, int rows, int cols, const nlohmann::json& steps = nlohmann::json::array()) {
    nlohmann::json spec = {{"argv", argv}, {"rows", rows}, {"cols", cols}, {"steps", steps}};
    CliRun r = run_program({"/usr/bin/python3", "-c", kPtyDriver, spec.dump()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_object()) return {};
    return {j["out"].get<std::string>(), j["exit"].get<int>(), j["steps"].get<int>()};
  }

  static std::vector<std::string> docker_argv(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/docker"};
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }

  size_t server_fds() const {
    size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/" + std::to_string(server_) + "/fd")) ++n;
    return n;
  }

  // Polls a `docker exec` until its output is `want` (a signal's effect arrives when it does).
  std::string exec_until(const std::string& container, const std::string& command, const std::string& want) {
    std::string got;
    for (int i = 0; i < 250 && got != want; ++i) {
      got = docker({"exec", container, "sh", "-c", command}).out;
      if (got != want) std::this_thread::sleep_for(std::chrono::milliseconds(40));
    }
    return got;
  }

  int resize(const std::string& path, const std::string& query) {
    return request("POST", path + "/resize?" + query).first;
  }
};

// `docker run -it`: the program's stdin, stdout and stderr are a terminal of the container's
// own devpts (/dev/pts/0 there, so ttyname() works), sized as the CLI's terminal is (the CLI's
// resize; ConsoleSize at create for newer clients), and its controlling terminal: ^C typed at the CLI is SIGINT to the program, whose
// exit code comes back. The stream is raw: no 8-byte frame header reaches the terminal.
TEST_F(DockerApiTty, DockerRunItGivesTheProgramItsOwnTerminal) {
  PtyRun r = under_pty(docker_argv({"run", "--rm", "-it", "--network", "none", "bb:1", "sh", "-c",
                                    std::string("tty; ") + kSizeOnceKnown + "[ -t 0 ] && [ -t 2 ] && echo all-tty; "
                                    "trap 'echo GOT-INT; exit 7' INT; echo READY; while :; do sleep 0.1; done"}),
                       33, 101, {{{"expect", "READY"}, {"send", "\x03"}}});
  EXPECT_NE(r.out.find("/dev/pts/0\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("size:33 101\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("all-tty"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GOT-INT"), std::string::npos) << r.out;
  EXPECT_EQ(r.exit_code, 7) << r.out;
  EXPECT_EQ(r.out.find(std::string("\x01\0\0\0", 4)), std::string::npos) << "a frame header in a Tty stream";
  EXPECT_EQ(containers_on_disk(), 0u);
  // Typed input reaches the program through its terminal (echoed, as a terminal does).
  PtyRun typed = under_pty(docker_argv({"run", "--network", "none", "--rm", "-it", "bb:1", "sh",
                                        "-c", "echo ASK; read line; echo \"got:$line\""}),
                           24, 80, {{{"expect", "ASK"}, {"send", "hello there\r"}}});
  EXPECT_NE(typed.out.find("got:hello there"), std::string::npos) << typed.out;
  EXPECT_EQ(typed.exit_code, 0) << typed.out;
}

// `docker run -dit` then `docker attach`: a shell on a terminal that outlives its clients. What
// is typed reaches it through the stdin FIFO (a client leaving is no end of file for a terminal:
// the shell is still there for the next one), and its exit code comes back to the attached CLI.
TEST_F(DockerApiTty, DockerAttachTypesIntoARunningTtyContainer) {
  ASSERT_EQ(docker({"run", "--network", "none", "-dit", "--name", "sh1", "bb:1", "sh"}).exit_code,
            0);
  PtyRun first = under_pty(docker_argv({"attach", "sh1"}), 24, 80,
                           {{{"expect", ""}, {"send", "echo one-$((1+1))\r"}}, {{"expect", "one-2"}, {"send", "\x10\x11"}}});
  EXPECT_NE(first.out.find("one-2"), std::string::npos) << first.out;
  // ^P^Q: the docker CLI's own escape proxy detaches (and says so, exit code 1, as the 20.10
  // CLI does), the container goes on.
  EXPECT_NE(first.out.find("read escape sequence"), std::string::npos) << first.out;
  EXPECT_EQ(inspect("sh1")["State"]["Running"], true);
  PtyRun second = under_pty(docker_argv({"attach", "sh1"}), 24, 80,
                            {{{"expect", ""}, {"send", "echo two-$((2+2)); exit 5\r"}}});
  EXPECT_NE(second.out.find("two-4"), std::string::npos) << second.out;
  EXPECT_EQ(second.exit_code, 5) << second.out;
  EXPECT_EQ(docker({"wait", "sh1"}).out, "5\n");
  EXPECT_EQ(docker({"rm", "sh1"}).exit_code, 0);
}

// `docker exec -it`: the same for an exec'd process (a pty of the container's devpts, opened by
// the server), and a resize of the CLI's terminal reaches it as SIGWINCH with the new size.
TEST_F(DockerApiTty, DockerExecItGetsATerminalThatFollowsResizes) {
  ASSERT_EQ(docker({"run", "--network", "none", "-d", "--name", "box", "bb:1", "sleep", "1000"})
                .exit_code,
            0);
  size_t fds_before = server_fds();
  PtyRun r = under_pty(docker_argv({"exec", "-it", "box", "sh", "-c",
                                    std::string("tty; ") + kSizeOnceKnown +
                                        "trap 'stty size; echo RESIZED' WINCH; echo READY; while :; do sleep 0.1; done"}),
                       20, 70, {{{"expect", "READY"}, {"resize", {40, 120}}}, {{"expect", "RESIZED"}, {"send", "\x03"}}});
  EXPECT_EQ(r.steps, 2) << r.out;
  EXPECT_NE(r.out.find("/dev/pts/"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("size:20 70\r\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("40 120\r\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.exit_code, 130) << r.out;  // SIGINT, as the shell's exit code
  // The exec's master and its copies are gone from the server once it is over.
  for (int i = 0; i < 100 && server_fds() > fds_before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(server_fds(), fds_before);
  EXPECT_EQ(docker({"rm", "-f", "box"}).exit_code, 0);
}

// Resize through the API: h and w are what struct winsize holds, anything else is a 400 naming
// it; a running Tty container gets the size (its program SIGWINCH); one without a terminal is
// accepted with nothing to size; a stopped one 409, an unknown one 404. The same for execs.
TEST_F(DockerApiTty, ResizeSetsTheSizeAndRefusesAbsurdOnes) {
  ASSERT_EQ(docker({"run", "--network", "none", "-dt", "--name", "t", "bb:1", "sh", "-c",
                    "trap 'stty size > /tmp/size' WINCH; echo up; while :; do sleep 0.1; done"})
                .exit_code,
            0);
  ASSERT_EQ(docker({"run", "--network", "none", "-d", "--name", "plain", "bb:1", "sleep", "1000"})
                .exit_code,
            0);
  EXPECT_EQ(inspect("t")["Config"]["Tty"], true);
  EXPECT_EQ(inspect("plain")["Config"]["Tty"], false);
  for (const char* query : {"h=-1&w=80", "h=70000&w=80", "h=24&w=99999999999999999999", "h=abc&w=80", "h=24",
                            "h=24&w=", "h=1e3&w=80", "h=0x20&w=80"}) {
    auto [status, body] = request("POST", std::string("/containers/t/resize?") + query);
    EXPECT_EQ(status, 400) << query;
    EXPECT_NE(body.value("message", "").find("invalid value for"), std::string::npos) << body;
  }
  EXPECT_EQ(resize("/containers/t", "h=50&w=132"), 204);
  EXPECT_EQ(exec_until("t", "cat /tmp/size 2>/dev/null", "50 132\n"), "50 132\n");
  EXPECT_EQ(resize("/containers/t", "h=65535&w=0"), 204);  // the edges of the range
  EXPECT_EQ(resize("/containers/plain", "h=50&w=132"), 204);
  EXPECT_EQ(resize("/containers/nosuch", "h=50&w=132"), 404);
  // The log is the pty's output, raw.
  CliRun logs = docker({"logs", "t"});
  EXPECT_EQ(logs.out, "up\r\n");
  // Execs: one without a terminal has nothing to size; a Tty exec that is over is not running.
  auto [created, exec] = request("POST", "/containers/t/exec", R"({"Cmd":["true"],"Tty":true,"AttachStdout":true})");
  ASSERT_EQ(created, 201);
  std::string id = exec["Id"];
  EXPECT_EQ(request("POST", "/exec/" + id + "/start", R"({"Detach":false,"Tty":true})").first, 200);
  EXPECT_EQ(request("GET", "/exec/" + id + "/json").second["ProcessConfig"]["tty"], true);
  EXPECT_EQ(resize("/exec/" + id, "h=10&w=10"), 409);
  EXPECT_EQ(resize("/exec/" + id, "h=-5&w=10"), 400);
  auto [created_plain, plain_exec] = request("POST", "/containers/t/exec", R"({"Cmd":["true"]})");
  ASSERT_EQ(created_plain, 201);
  EXPECT_EQ(resize("/exec/" + plain_exec["Id"].get<std::string>(), "h=10&w=10"), 204);
  EXPECT_EQ(resize("/exec/" + std::string(64, 'a'), "h=10&w=10"), 404);
  // ConsoleSize at create (API 1.42 clients send it): the size before the program starts.
  auto [sized, sized_body] = request(
      "POST", "/containers/create?name=sized",
      R"({"Image":"bb:1","Tty":true,"Cmd":["stty","size"],"HostConfig":{"ConsoleSize":[25,90],"NetworkMode":"none"}})");
  ASSERT_EQ(sized, 201) << sized_body;
  EXPECT_EQ(docker({"start", "sized"}).exit_code, 0);
  EXPECT_EQ(docker({"wait", "sized"}).out, "0\n");
  EXPECT_EQ(docker({"logs", "sized"}).out, "25 90\r\n");
  auto bad_size = request("POST", "/containers/create", R"({"Image":"bb:1","Tty":true,"HostConfig":{"ConsoleSize":[-1,5]}})");
  EXPECT_EQ(bad_size.first, 400);
  EXPECT_NE(bad_size.second.value("message", "").find("HostConfig.ConsoleSize"), std::string::npos);
  EXPECT_EQ(request("POST", "/containers/create", R"({"Image":"bb:1","Tty":"yes"})").first, 400);
  EXPECT_EQ(docker({"stop", "-t", "1", "t"}).exit_code, 0);
  EXPECT_EQ(resize("/containers/t", "h=50&w=132"), 409);
  EXPECT_FALSE(fs::exists(store() + "/docker/containers/" + inspect("t")["Id"].get<std::string>() + "/tty.ctl"));
  EXPECT_EQ(request("GET", "/_ping").first, 200);
}

// docker-py: run(tty=True) returns the terminal's bytes as they are (\r\n line ends, no frame
// headers), and exec_run(tty=True) too.
TEST_F(DockerApiTty, DockerPyTtyOutputIsRaw) {
  std::string script = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
print(repr(client.containers.run("bb:1", ["sh", "-c", "echo hi; tty"], tty=True, remove=True, network_mode="none")))
c = client.containers.run("bb:1", ["sleep", "1000"], detach=True, tty=True, network_mode="none")
code, out = c.exec_run(["sh", "-c", "tty; echo err >&2; exit 4"], tty=True)
print(code, repr(out))
code, out = c.exec_run(["sh", "-c", "echo plain"])
print(code, repr(out))
c.remove(force=True)
)";
  CliRun r = run_program({"/usr/bin/python3", "-c", script, "unix://" + socket_path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "b'hi\\r\\n/dev/pts/0\\r\\n'\n4 b'/dev/pts/1\\r\\nerr\\r\\n'\n0 b'plain\\n'\n") << r.err;
}

// Programs that misuse their terminal: one closes it and goes on (its exit code still comes
// back), one writes 10 MB into it (all of it in the log, raw), one pushes input into it with
// TIOCSTI: that input is its own terminal's, and reaches nothing outside (the shell in the
// test's terminal that ran `docker run -it` reads nothing after it).
TEST_F(DockerApiTty, HostileTerminalProgramsStayInTheirTerminal) {
  ASSERT_EQ(docker({"run", "--network", "none", "-dt", "--name", "closer", "bb:1", "sh", "-c",
                    "exec 0<&- 1>&- 2>&-; sleep 0.3; exit 3"})
                .exit_code,
            0);
  EXPECT_EQ(docker({"wait", "closer"}).out, "3\n");
  ASSERT_EQ(docker({"run", "--network", "none", "-dt", "--name", "big", "bb:1", "sh", "-c",
                    "head -c 10000000 /dev/zero"})
                .exit_code,
            0);
  EXPECT_EQ(docker({"wait", "big"}).out, "0\n");
  CliRun logs = docker({"logs", "big"});
  EXPECT_EQ(logs.out.size(), 10000000u);
  EXPECT_EQ(logs.out.find_first_not_of('\0'), std::string::npos);

  fs::create_directories(dir_ / "probe");
  fs::copy_file(test_rootfs() + "/bin/sc-probe", dir_ / "probe/sc-probe");
  std::ofstream(dir_ / "probe/Dockerfile") << "FROM bb:1\nCOPY sc-probe /bin/sc-probe\n";
  CliRun built = docker({"build", "-q", "-t", "probe:1", (dir_ / "probe").string()});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  std::string outer =
      "/usr/bin/docker run --rm -it --network none probe:1 sh -c '"
      "sc-probe tiocsti \"echo INJECTED-\\$((6*7))\n\"; read -t 1 line; echo \"read:$line\"'; "
      "echo \"docker-exit:$?\"; read -t 2 after; echo \"outside-read:[$after]\"";
  PtyRun r = under_pty({"/bin/bash", "-c", outer}, 24, 80);
  EXPECT_NE(r.out.find("docker-exit:0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("outside-read:[]"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("INJECTED-42"), std::string::npos) << "injected input ran a shell: " << r.out;
  // The container's profile is Docker's default.json, which lets TIOCSTI through (as Docker
  // does), and so does this kernel (dev.tty.legacy_tiocsti=1) on the caller's own controlling
  // terminal: the text goes into the program's private pty, read back by the program itself.
  if (r.out.find("tiocsti ok") != std::string::npos) {
    EXPECT_NE(r.out.find("read:echo INJECTED-$((6*7))"), std::string::npos) << r.out;
  }
  // An exec'd process without a terminal may open the program's pty (the same devpts), but it
  // is not its controlling terminal: no TIOCSTI into it without CAP_SYS_ADMIN.
  ASSERT_EQ(docker({"run", "--network", "none", "-dt", "--name", "victim", "probe:1", "sh", "-c",
                    "read line; echo \"victim:$line\""})
                .exit_code,
            0);
  CliRun other = docker({"exec", "victim", "sh", "-c", "sc-probe tiocsti 'echo x\n' < /dev/pts/0"});
  EXPECT_NE(other.out.find("tiocsti failed"), std::string::npos) << other.out << other.err;
  EXPECT_EQ(docker({"rm", "-f", "victim"}).exit_code, 0);
  EXPECT_EQ(request("GET", "/_ping").first, 200);
}

// A Tty container restarts with a new terminal; stop, kill and rm leave no fd in the server, no
// control FIFO and no supervisor.
TEST_F(DockerApiTty, RestartStopKillAndRemoveLeaveNoTerminalBehind) {
  ASSERT_EQ(request("GET", "/_ping").first, 200);
  size_t fds_before = server_fds();
  ASSERT_EQ(docker({"run", "--network", "none", "-dt", "--name", "r", "bb:1", "sh", "-c",
                    "tty; exec sleep 1000"})
                .exit_code,
            0);
  std::string dir = store() + "/docker/containers/" + inspect("r")["Id"].get<std::string>();
  EXPECT_TRUE(fs::exists(dir + "/tty.ctl"));
  EXPECT_EQ(docker({"restart", "-t", "1", "r"}).exit_code, 0);
  for (int i = 0; i < 100 && docker({"logs", "r"}).out != "/dev/pts/0\r\n/dev/pts/0\r\n"; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(docker({"logs", "r"}).out, "/dev/pts/0\r\n/dev/pts/0\r\n");
  EXPECT_EQ(docker({"exec", "-t", "r", "tty"}).out, "/dev/pts/1\r\n");
  // The container's devpts is an instance of its own: only its pty (the exec's is gone), none of
  // the host's, and a ptmx anyone in it may open.
  EXPECT_EQ(docker({"exec", "r", "ls", "/dev/pts"}).out, "0\nptmx\n");
  EXPECT_NE(docker({"exec", "r", "grep", "devpts", "/proc/self/mounts"}).out.find("ptmxmode=666"), std::string::npos);
  EXPECT_EQ(docker({"stop", "-t", "1", "r"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir + "/tty.ctl"));
  EXPECT_EQ(docker({"start", "r"}).exit_code, 0);
  EXPECT_EQ(docker({"kill", "r"}).exit_code, 0);
  EXPECT_EQ(docker({"wait", "r"}).out, "137\n");
  EXPECT_EQ(docker({"start", "r"}).exit_code, 0);
  EXPECT_EQ(docker({"rm", "-f", "r"}).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir));
  EXPECT_EQ(request("GET", "/_ping").first, 200);
  for (int i = 0; i < 100 && server_fds() > fds_before; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_LE(server_fds(), fds_before);
}

}  // namespace
}  // namespace sandcell::test
