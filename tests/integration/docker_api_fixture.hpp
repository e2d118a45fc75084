#pragma once
// The fixture of the Docker Engine API tests (docker_api*_test.cpp): each test starts its own
// `sandcell serve --docker-api` on a private socket with a private store holding a busybox image
// (bb:1), and leaves no container, supervisor or socket behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sandcell_cli.hpp"

namespace sandcell::test {

namespace fs = std::filesystem;

class DockerApi : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("sandcell-docker-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "ctx");
    fs::copy_file(test_rootfs() + "/bin/busybox", dir_ / "ctx/busybox");
    std::ofstream(dir_ / "ctx/Dockerfile")
        << "FROM scratch\nCOPY busybox /bin/busybox\n"
           // /tmp: the one place Landlock lets the program write
           "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox --install -s /bin && "
           "mkdir -m 1777 /tmp\"]\nCMD [\"sh\"]\n";
    CliRun built =
        sandcell_within({"--root", store(), "build", "-q", "-t", "bb:1", (dir_ / "ctx").string()});
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

  void start_server(const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args{"--root", store(), "serve", "--docker-api", "unix:" + socket_path()};
    args.insert(args.end(), flags.begin(), flags.end());
    server_ = spawn_sandcell(args);
    for (int i = 0; i < 200 && !fs::exists(socket_path()); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(socket_path()));
  }

  void stop_server() {
    if (server_ <= 0) return;
    kill(server_, SIGTERM);
    int status = 0;
    pid_t ended = 0;
    for (int i = 0; i < 6000 && (ended = waitpid(server_, &status, WNOHANG)) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (ended == 0) {
      ADD_FAILURE() << "the server did not stop within 60 s of SIGTERM" << hang_report();
      kill(server_, SIGKILL);
      waitpid(server_, &status, 0);
    }
    server_ = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the server did not stop cleanly on SIGTERM";
  }

  // Where each thread of sandcell's and the docker CLI's processes waits (its wchan, and the
  // kernel stack of sandcell's), and the file locks held: added to the error of a call that did
  // not end, so that a hang in CI says where it was. One, session 31, ran into CTest's 300 s
  // timeout with nothing printed, and passed at once when run again.
  static std::string hang_report() {
    return "\n-- threads --\n" +
           shell_output(
               "ps -eLo pid,tid,stat,wchan:32,etime,args | grep -E '[s]andcell|[d]ocker' | cut "
               "-c1-240") +
           "-- kernel stacks --\n" +
           shell_output(
               "for t in $(pgrep -f '^[^ ]*sandcell'); do for s in /proc/$t/task/*; do echo \"$s "
               "$(cat $s/comm)\"; "
               "cat $s/stack; done; done 2>/dev/null | head -400") +
           "-- /proc/locks --\n" + shell_output("cat /proc/locks");
  }

  // The docker CLI, ended after 60 s (exit 124, and a failure with the hang report).
  static CliRun docker(const std::vector<std::string>& args, const std::string& input = "") {
    std::vector<std::string> full{"/usr/bin/timeout", "60", "/usr/bin/docker"};
    full.insert(full.end(), args.begin(), args.end());
    CliRun r = run_program(full, input);
    if (r.exit_code == 124)
      ADD_FAILURE() << "docker " << args.at(0) << " did not end within 60 s" << hang_report();
    return r;
  }

  // sandcell ARGS, ended after 120 s, as docker() above.
  static CliRun sandcell_within(const std::vector<std::string>& args) {
    std::vector<std::string> full{"/usr/bin/timeout", "120", sandcell_binary()};
    full.insert(full.end(), args.begin(), args.end());
    CliRun r = run_program(full);
    if (r.exit_code == 124)
      ADD_FAILURE() << "sandcell " << args.back() << " did not end within 120 s" << hang_report();
    return r;
  }

  // An API request with curl: the status code, then the body.
  std::pair<int, nlohmann::json> request(const std::string& method, const std::string& path,
                                         const std::string& body = "") const {
    std::string body_file = dir_ / "body.json";
    std::ofstream(body_file, std::ios::binary) << body;
    return send_file(method, path, body_file, "application/json");
  }

  // The same with a file as the body; `chunked`: without a Content-Length.
  std::pair<int, nlohmann::json> send_file(const std::string& method, const std::string& path,
                                           const std::string& body_file, const std::string& content_type,
                                           bool chunked = false) const {
    std::vector<std::string> args{"/usr/bin/curl", "-s", "--unix-socket", socket_path(), "-X", method, "-H",
                                  "Content-Type: " + content_type, "--data-binary", "@" + body_file,
                                  "-w", "\n%{http_code}", "http://docker" + path};
    if (chunked) args.insert(args.begin() + 1, {"-H", "Transfer-Encoding: chunked"});
    CliRun r = run_program(args);
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

  // The store's tags as `docker images` lists them, sorted.
  std::vector<std::string> tags() const {
    std::vector<std::string> out = lines(docker({"images", "--format", "{{.Repository}}:{{.Tag}}"}).out);
    std::sort(out.begin(), out.end());
    return out;
  }

  // A tar written by Python's tarfile from a small script's members
  // (add(name, data, kind, link)).
  std::string python_tar(const std::string& name, const std::string& members_code) const {
    std::string path = dir_ / name;
    std::string script = "import io, sys, tarfile\nt = tarfile.open(sys.argv[1], 'w')\n"
                         "def add(name, data=b'', kind=tarfile.REGTYPE, link=''):\n"
                         "    i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data)\n"
                         "    t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)\n" +
                         members_code + "\nt.close()\n";
    CliRun r = run_program({"/usr/bin/python3", "-c", script, path});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return path;
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

}  // namespace sandcell::test
