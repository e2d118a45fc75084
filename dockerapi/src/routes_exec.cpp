// exec: POST /containers/{id}/exec (create), POST /exec/{id}/start, GET /exec/{id}/json,
// POST /exec/{id}/resize. An exec is a file under <store>/docker/exec/; the process is
// runtime::exec_in_sandbox() into the container's running sandbox, with the confinement of the
// container's own program (the same Spec), and a child of this server, which reaps it and
// records its exit code.
#include <linux/magic.h>
#include <linux/openat2.h>
#include <linux/sockios.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "api_error.hpp"
#include "container_processes.hpp"
#include "container_tty.hpp"
#include "create_request.hpp"
#include "routes.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;
using runtime::UniqueFd;

// An exec belongs to its container: <container>/exec/<id>.json, removed with it.
bool is_exec_id(const std::string& id) {
  return id.size() == 64 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string exec_file(const ApiContext& api, const std::string& id) {
  if (is_exec_id(id))
    for (const ContainerDir& container : api.containers.list())
      if (std::string file = container.file("exec") + "/" + id + ".json";
          std::filesystem::exists(file))
        return file;
  throw not_found("No such exec instance: " + id);
}

// Once only, also with two clients starting the same exec at once.
void claim_start(const std::string& file, const std::string& id) {
  UniqueFd marker(open((file.substr(0, file.size() - 5) + ".started").c_str(),
                       O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!marker && errno == EEXIST) throw conflict("exec " + id + " has already been started");
  if (!marker) throw Error(errno, "mark exec " + id + " started");
}

json parse_body(const std::string& body) {
  if (body.empty()) return json::object();
  json j;
  try {
    j = parse_bounded_json(body);
  } catch (const std::exception& e) {
    throw bad_request(std::string("invalid JSON body: ") + e.what());
  }
  if (!j.is_object()) throw bad_request("the request body must be a JSON object");
  return j;
}

std::vector<std::string> string_list(const json& body, const char* field, bool required) {
  if (!body.contains(field) || body[field].is_null()) {
    if (required)
      throw bad_request(std::string(field) + " is required (a non-empty list of strings)");
    return {};
  }
  const json& value = body[field];
  if (!value.is_array() ||
      !std::all_of(value.begin(), value.end(), [](const json& v) { return v.is_string(); }))
    throw bad_request(std::string(field) + " must be a list of strings");
  std::vector<std::string> out = value.get<std::vector<std::string>>();
  if (required && (out.empty() || out[0].empty()))
    throw bad_request(std::string(field) + " must name a program");
  return out;
}

bool boolean(const json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return false;
  if (!body[field].is_boolean()) throw bad_request(std::string(field) + " must be a boolean");
  return body[field].get<bool>();
}

std::string text(const json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return "";
  if (!body[field].is_string()) throw bad_request(std::string(field) + " must be a string");
  return body[field].get<std::string>();
}

HttpReply create_exec(const ApiContext& api, const std::string& container_id,
                      const HttpRequest& request) {
  ContainerDir container = api.containers.find(container_id);
  json body = parse_body(request.body);
  if (boolean(body, "Privileged"))
    throw bad_request("Privileged is refused by sandcell: it would weaken the sandbox");
  json config = {{"Cmd", string_list(body, "Cmd", true)},
                 {"Tty", boolean(body, "Tty")},
                 {"Env", string_list(body, "Env", false)},
                 {"WorkingDir", text(body, "WorkingDir")},
                 {"User", text(body, "User")},
                 {"AttachStdin", boolean(body, "AttachStdin")},
                 {"AttachStdout", boolean(body, "AttachStdout")},
                 {"AttachStderr", boolean(body, "AttachStderr")}};
  if (std::optional<TerminalSize> size = console_size(body, "ConsoleSize"))
    config["ConsoleSize"] = {size->rows, size->columns};
  for (const std::string& kv : config["Env"].get<std::vector<std::string>>())
    if (kv.find('=') == std::string::npos || kv[0] == '=')
      throw bad_request("Env: expected KEY=VALUE, got \"" + kv + "\"");
  if (!config["WorkingDir"].get<std::string>().empty() &&
      config["WorkingDir"].get<std::string>()[0] != '/')
    throw bad_request("WorkingDir must be an absolute path");
  ContainerState state = container.state();
  if (state.status != "running") throw conflict("Container " + container.id() + " is not running");
  // Its processes, and one joining its cgroups, would stay frozen.
  if (is_paused(state))
    throw conflict("Container " + container.id() + " is paused, unpause the container before exec");
  std::string id = random_id();
  std::filesystem::create_directories(container.file("exec"));
  write_json_atomically(container.file("exec") + "/" + id + ".json",
                        {{"ID", id},
                         {"ContainerID", container.id()},
                         {"Config", config},
                         {"Started", false},
                         {"Running", false},
                         {"ExitCode", nullptr},
                         {"Pid", 0}});
  return json_reply(201, {{"Id", id}});
}

// The process as the container's program would be with this Cmd, User, WorkingDir and Env: the
// image's user database and the container's Env apply as they do at create.
runtime::SandboxProcess exec_process(const json& container_request, const json& config,
                                     rootfs_builder::ImageStore& images, const std::string& dir) {
  json request = container_request;
  request["Config"]["Entrypoint"] = config["Cmd"];
  request["Config"]["Cmd"] = json::array();
  if (!config["User"].get<std::string>().empty()) request["Config"]["User"] = config["User"];
  if (!config["WorkingDir"].get<std::string>().empty())
    request["Config"]["WorkingDir"] = config["WorkingDir"];
  json env = request["Config"].value("Env", json::array());
  for (const json& kv : config["Env"]) env.push_back(kv);
  request["Config"]["Env"] = env;
  runtime::Spec spec = spec_for_container(request, images, dir);
  // The allowlist proxy's address, as the container's program got it: the socket transport's
  // listener in the container's netns (runtime/src/network_setup.cpp, kSocketProxyPort).
  if (spec.network == runtime::NetworkMode::Allow)
    for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
      spec.env.push_back(std::string(name) + "=http://127.0.0.1:3128");
  return {.args = spec.args,
          .env = spec.env,
          .cwd = spec.cwd,
          .uid = spec.uid,
          .gid = spec.gid,
          .groups = spec.additional_gids};
}

// One exec's process and the ends of its pipes this server holds; with Tty, its pty's master
// (stdin_w a duplicate of it, so the stdin thread's close does not hang the terminal up).
struct RunningExec {
  pid_t pid = 0;
  UniqueFd stdin_w, stdout_r, stderr_r;
  UniqueFd master, pidfd;
};

// A pty of the container's own devpts, opened from here through the container's root (as its
// processes see it, RESOLVE_IN_ROOT, no symlink): the master stays with this server, the slave
// is the process's stdio. The container's programs may have had their way with its /dev by now,
// so what was opened must be a devpts `ptmx` (5:2) on a devpts, or it is not used.
UniqueFd open_container_ptmx(const RunningSandbox& sandbox) {
  UniqueFd root = runtime::open_sandbox_root(sandbox.spec, sandbox.target);
  open_how how{};
  how.flags = O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  UniqueFd master(static_cast<int>(syscall(SYS_openat2, root.get(), "dev/pts/ptmx", &how, sizeof how)));
  if (!master) throw Error(errno, "open the container's /dev/pts/ptmx for the exec's terminal");
  struct statfs fs {};
  struct stat st {};
  if (fstatfs(master.get(), &fs) < 0 || fs.f_type != DEVPTS_SUPER_MAGIC || fstat(master.get(), &st) < 0 ||
      !S_ISCHR(st.st_mode) || major(st.st_rdev) != 5 || minor(st.st_rdev) != 2)
    throw Error(EPERM, "the container's /dev/pts/ptmx is not a devpts ptmx");
  check(fcntl(master.get(), F_SETFL, 0), "clear O_NONBLOCK on the pty master");
  int unlock = 0;
  check(ioctl(master.get(), TIOCSPTLCK, &unlock), "unlock the exec's pty");
  return master;
}

int exit_code_of(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void record_end(const std::string& file, int exit_code) {
  json e = read_json(file);
  e["Running"] = false;
  e["ExitCode"] = exit_code;
  write_json_atomically(file, e);
}

void reap(const std::string& file, pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  try {
    record_end(file, exit_code_of(status));
  } catch (const std::exception&) {
    // the container (and its execs) removed meanwhile
  }
}

RunningExec start_process(const ApiContext& api, const json& exec, bool detach,
                          std::optional<TerminalSize> size) {
  ContainerDir container = api.containers.find(exec["ContainerID"].get<std::string>());
  RunningSandbox sandbox = running_sandbox(api.store_root, container);
  const json& config = exec["Config"];
  rootfs_builder::ImageStore images(api.store_root);
  runtime::SandboxProcess process =
      exec_process(container.create_request(), config, images, container.path());
  RunningExec running;
  auto make_pipe = [](UniqueFd& ours, UniqueFd& theirs, bool ours_reads) {
    int fds[2];
    check(pipe2(fds, O_CLOEXEC), "pipe");
    ours.reset(fds[ours_reads ? 0 : 1]);
    theirs.reset(fds[ours_reads ? 1 : 0]);
  };
  UniqueFd in, out, err;
  if (config.value("Tty", false)) {
    running.master = open_container_ptmx(sandbox);
    UniqueFd slave(ioctl(running.master.get(), TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC));
    if (!slave) throw Error(errno, "open the exec's pty");
    if (size) set_terminal_size(running.master.get(), *size);
    if (!detach && config.value("AttachStdin", false))
      running.stdin_w.reset(static_cast<int>(check(fcntl(running.master.get(), F_DUPFD_CLOEXEC, 0), "dup the pty master")));
    process.stdin_fd = process.stdout_fd = process.stderr_fd = slave.get();
    process.terminal = true;
    running.pid = runtime::exec_in_sandbox(sandbox.spec, process, sandbox.target);
    running.pidfd.reset(static_cast<int>(syscall(SYS_pidfd_open, running.pid, 0)));
    return running;
  }
  if (!detach && config.value("AttachStdin", false)) make_pipe(running.stdin_w, in, false);
  if (detach) {
    out.reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
    err.reset(open("/dev/null", O_WRONLY | O_CLOEXEC));
  } else {
    make_pipe(running.stdout_r, out, true);
    make_pipe(running.stderr_r, err, true);
  }
  process.stdin_fd = in ? in.get() : -1;
  process.stdout_fd = out.get();
  process.stderr_fd = err.get();
  running.pid = runtime::exec_in_sandbox(sandbox.spec, process, sandbox.target);
  return running;
}

void append_frame(std::string& out, int stream, const char* data, size_t size) {
  unsigned char header[8] = {static_cast<unsigned char>(stream),
                             0,
                             0,
                             0,
                             static_cast<unsigned char>(size >> 24),
                             static_cast<unsigned char>(size >> 16),
                             static_cast<unsigned char>(size >> 8),
                             static_cast<unsigned char>(size)};
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(data, size);
}

// The process' stdout and stderr as Docker's multiplexed frames, until both are at end of file;
// then the process is reaped and its exit code recorded.
class ExecOutput {
 public:
  ExecOutput(std::string file, RunningExec running)
      : file_(std::move(file)), running_(std::move(running)) {}
  ~ExecOutput() {
    running_.stdin_w.reset();
    finish();
  }

  // Some frames (with Tty: the pty's bytes), or "" at the end.
  std::string next() {
    if (running_.master) return next_from_terminal();
    std::string out;
    while (out.empty() && (running_.stdout_r || running_.stderr_r)) {
      pollfd fds[2] = {{running_.stdout_r.get(), POLLIN, 0}, {running_.stderr_r.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        UniqueFd& fd = i == 0 ? running_.stdout_r : running_.stderr_r;
        char buffer[32768];
        ssize_t n = read(fd.get(), buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
          fd.reset();
        else
          append_frame(out, i + 1, buffer, static_cast<size_t>(n));
      }
    }
    if (out.empty()) finish();
    return out;
  }

  // Written and closed by the hijack's stdin thread alone (finish() leaves it to that thread).
  int stdin_fd() const { return running_.stdin_w.get(); }
  void close_stdin() { running_.stdin_w.reset(); }

  // POST /exec/{id}/resize while it runs; false when it has no terminal (any more).
  bool resize(TerminalSize size) {
    std::lock_guard lock(master_mutex_);
    if (!running_.master) return false;
    set_terminal_size(running_.master.get(), size);
    return true;
  }

 private:
  // The pty's output until the process has exited (its pidfd) and what it wrote is read, or
  // until no slave is left (EIO): a process of its session that keeps the terminal open does
  // not keep the stream (and the exec) going once the process is over.
  std::string next_from_terminal() {
    char buffer[32768];
    while (running_.master) {
      pollfd fds[2] = {{running_.master.get(), POLLIN, 0}, {running_.pidfd.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno != EINTR) break;
      bool exited = fds[1].revents != 0;
      if (exited) fcntl(running_.master.get(), F_SETFL, O_NONBLOCK);  // drain what is left, then end
      if (fds[0].revents != 0 || exited) {
        ssize_t n = read(running_.master.get(), buffer, sizeof buffer);
        if (n > 0) return std::string(buffer, static_cast<size_t>(n));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN && !exited) continue;
        break;  // EIO: no slave open; EAGAIN after the exit: all read
      }
    }
    finish();
    return "";
  }

  void finish() {
    if (running_.pid <= 0) return;
    running_.stdout_r.reset();  // a client gone early: the process gets EPIPE, not a full pipe
    running_.stderr_r.reset();
    {
      std::lock_guard lock(master_mutex_);
      running_.master.reset();  // the terminal hangs up (with the stdin thread's copy gone too)
    }
    reap(file_, running_.pid);
    running_.pid = 0;
    running_.pidfd.reset();
  }

  std::mutex master_mutex_;

  std::string file_;
  RunningExec running_;
};

// The running execs with a terminal, for resize: only this server holds their masters.
std::mutex terminals_mutex;
std::map<std::string, std::weak_ptr<ExecOutput>> terminals;

void register_terminal(const std::string& id, const std::shared_ptr<ExecOutput>& output) {
  std::lock_guard lock(terminals_mutex);
  std::erase_if(terminals, [](const auto& entry) { return entry.second.expired(); });
  terminals[id] = output;
}

std::shared_ptr<ExecOutput> find_terminal(const std::string& id) {
  std::lock_guard lock(terminals_mutex);
  auto it = terminals.find(id);
  return it == terminals.end() ? nullptr : it->second.lock();
}

// h and w as the container's resize takes them. An exec without Tty has no terminal to size
// (accepted, as Docker's runtime does); one with Tty that is not running: 409.
HttpReply resize_exec(const ApiContext& api, const std::string& id, const HttpRequest& request) {
  std::string file = exec_file(api, id);
  TerminalSize size = resize_request(request);
  if (read_json(file)["Config"].value("Tty", false)) {
    std::shared_ptr<ExecOutput> output = find_terminal(id);
    if (!output || !output->resize(size)) throw conflict("exec " + id + " is not running");
  }
  HttpReply reply;
  reply.status = 204;
  reply.content_type.clear();
  return reply;
}

bool send_all(int sock, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(sock, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    sent += static_cast<size_t>(n);
  }
  return true;
}

void forward_stdin(int sock, const std::string& early, int fd) {
  if (fd < 0) return;
  if (!early.empty() && write(fd, early.data(), early.size()) < 0) return;
  char buffer[16384];
  for (;;) {
    ssize_t n = recv(sock, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(fd, buffer + done, static_cast<size_t>(n - done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) return;
      done += w;
    }
  }
}

// docker-py reads the 101's head through a buffered reader and then the raw socket: frames that
// arrived with the head would be read into that buffer and lost. On a unix socket the head is
// read once none of it is left in the socket (SIOCOUTQ: the bytes the peer has not read yet);
// elsewhere (TCP, where it counts unacknowledged bytes) a moment is left between them. At most
// 20 ms either way.
void wait_until_head_read(int sock) {
  sockaddr_storage address{};
  socklen_t length = sizeof address;
  const bool unix_socket = getsockname(sock, reinterpret_cast<sockaddr*>(&address), &length) == 0 &&
                           address.ss_family == AF_UNIX;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
  if (!unix_socket) {
    std::this_thread::sleep_until(deadline);
    return;
  }
  for (int unread = 0; std::chrono::steady_clock::now() < deadline;) {
    if (ioctl(sock, SIOCOUTQ, &unread) == 0 && unread == 0) return;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

Hijack hijacked_exec(std::shared_ptr<ExecOutput> output) {
  return [output](int sock, const std::string& early) {
    std::thread input;
    if (output->stdin_fd() >= 0)
      input = std::thread([output, sock, early] {
        forward_stdin(sock, early, output->stdin_fd());
        output->close_stdin();  // the client's half-close is the program's end of file
      });
    wait_until_head_read(sock);
    for (std::string frames = output->next(); !frames.empty(); frames = output->next())
      if (!send_all(sock, frames)) break;
    shutdown(sock, SHUT_RDWR);  // ends the stdin thread's recv
    if (input.joinable()) input.join();
  };
}

// An exec that could not start: Docker's exit codes (127 not found, 126 not executable) and its
// message on stderr, as the docker CLI prints it.
HttpReply failed_exec(const std::string& file, const Error& e, bool upgrade) {
  int code = e.code().value() == ENOENT ? 127 : 126;
  record_end(file, code);
  std::string frames;
  std::string message = std::string("sandcell: exec failed: ") + e.what() + "\n";
  append_frame(frames, 2, message.data(), message.size());
  HttpReply reply;
  reply.content_type = "application/vnd.docker.multiplexed-stream";
  if (upgrade) {
    reply.hijack = [frames](int sock, const std::string&) { send_all(sock, frames); };
  } else {
    reply.body = frames;
  }
  return reply;
}

HttpReply start_exec(const ApiContext& api, const std::string& id, const HttpRequest& request) {
  std::string file = exec_file(api, id);
  json body = parse_body(request.body);
  bool detach = boolean(body, "Detach");
  std::optional<TerminalSize> size = console_size(body, "ConsoleSize");  // the start's, else the create's
  claim_start(file, id);
  json exec = read_json(file);
  if (!size && exec["Config"].contains("ConsoleSize"))
    size = TerminalSize{exec["Config"]["ConsoleSize"][0].get<uint16_t>(), exec["Config"]["ConsoleSize"][1].get<uint16_t>()};
  exec["Started"] = true;
  write_json_atomically(file, exec);
  RunningExec running;
  try {
    running = start_process(api, exec, detach, size);
  } catch (const Error& e) {
    if (e.input_error()) throw bad_request(e.what());
    return failed_exec(file, e, request.upgrade);
  }
  exec["Running"] = true;
  exec["Pid"] = running.pid;
  write_json_atomically(file, exec);
  bool tty = static_cast<bool>(running.master);
  auto output = std::make_shared<ExecOutput>(file, std::move(running));
  if (tty) register_terminal(id, output);
  if (detach) {  // its output (a Tty's; the others' go to /dev/null) drained until it is over, then reaped
    std::thread([output] {
      while (!output->next().empty()) {
      }
    }).detach();
    HttpReply reply;
    reply.body = "";
    return reply;
  }
  HttpReply reply;
  reply.content_type = tty ? "application/vnd.docker.raw-stream" : "application/vnd.docker.multiplexed-stream";
  if (request.upgrade) {
    reply.hijack = hijacked_exec(output);
  } else {
    output->close_stdin();  // no connection to read stdin from: end of file at once
    auto pending = std::make_shared<std::string>();
    reply.stream = [output, pending](char* buffer, size_t size) -> size_t {
      if (pending->empty()) *pending = output->next();
      size_t n = std::min(size, pending->size());
      std::copy_n(pending->data(), n, buffer);
      pending->erase(0, n);
      return n;
    };
  }
  return reply;
}

HttpReply inspect_exec(const ApiContext& api, const std::string& id) {
  json e = read_json(exec_file(api, id));
  const json& config = e["Config"];
  std::vector<std::string> cmd = config["Cmd"].get<std::vector<std::string>>();
  return json_reply(200, {{"ID", e["ID"]},
                          {"ContainerID", e["ContainerID"]},
                          {"Running", e["Running"]},
                          {"ExitCode", e["ExitCode"]},
                          {"Pid", e["Pid"]},
                          {"OpenStdin", config["AttachStdin"]},
                          {"OpenStdout", config["AttachStdout"]},
                          {"OpenStderr", config["AttachStderr"]},
                          {"CanRemove", false},
                          {"DetachKeys", ""},
                          {"ProcessConfig",
                           {{"privileged", false},
                            {"user", config["User"]},
                            {"tty", config.value("Tty", false)},
                            {"entrypoint", cmd[0]},
                            {"arguments", std::vector<std::string>(cmd.begin() + 1, cmd.end())}}}});
}

}  // namespace

std::optional<HttpReply> exec_route(const ApiContext& api, const HttpRequest& request,
                                    const Segments& path) {
  if (path.size() == 3 && path[0] == "containers" && path[2] == "exec" && request.method == "POST")
    return create_exec(api, path[1], request);
  if (path.size() != 3 || path[0] != "exec") return std::nullopt;
  if (path[2] == "start" && request.method == "POST") return start_exec(api, path[1], request);
  if (path[2] == "json" && request.method == "GET") return inspect_exec(api, path[1]);
  if (path[2] == "resize" && request.method == "POST") return resize_exec(api, path[1], request);
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
