// Streams over a container's files. The supervisor appends to `log` and writes `exit` once;
// readers poll (20 ms) and hold their fds, so an AutoRemove deleting the directory does not cut
// a reader off before it has drained the log.
#include "container_io.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;
constexpr auto kPoll = std::chrono::milliseconds(20);
// Set when the server stops: every stream ends, so the server's threads can be joined.
std::atomic<bool> stopping{false};

UniqueFd open_read(const std::string& path) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  return fd;
}

std::optional<int> exit_code_in(int exit_fd) {
  char text[64] = {};
  ssize_t n = pread(exit_fd, text, sizeof text - 1, 0);
  if (n <= 0) return std::nullopt;
  auto j = nlohmann::json::parse(std::string(text, static_cast<size_t>(n)), nullptr, false);
  if (!j.is_object() || !j.contains("StatusCode")) return std::nullopt;  // half written
  return j["StatusCode"].get<int>();
}

// The log from an offset; ends (0) at the end of file, or, following, once the container is
// over and everything it wrote was read.
class LogReader {
 public:
  LogReader(const ContainerDir& container, const AttachOptions& options)
      : log_(open_read(container.file("log"))), exit_(open_read(container.file("exit"))), follow_(options.follow) {
    if (!options.replay_log) check(lseek(log_.get(), 0, SEEK_END), "seek the log");
  }

  size_t next(char* buffer, size_t size) {
    for (;;) {
      ssize_t n = read(log_.get(), buffer, size);
      if (n > 0) return static_cast<size_t>(n);
      if (n < 0 && errno == EINTR) continue;
      if (!follow_ || over_ || stopping) return 0;
      // Over: read once more after seeing the exit, as the last output came before it.
      if (exit_code_in(exit_.get())) over_ = true;
      else std::this_thread::sleep_for(kPoll);
    }
  }

 private:
  UniqueFd log_, exit_;
  bool follow_, over_ = false;
};

// The frames of the streams asked for, whole: a reader can stop between two frames only.
class FrameFilter {
 public:
  FrameFilter(const ContainerDir& container, const AttachOptions& options)
      : reader_(container, options), want_{false, options.stdout, options.stderr} {}

  size_t next(char* out, size_t size) {
    for (;;) {
      take_complete_frames();
      if (!ready_.empty()) {
        size_t n = std::min(size, ready_.size());
        std::copy_n(ready_.data(), n, out);
        ready_.erase(0, n);
        return n;
      }
      char buffer[32768];
      size_t n = reader_.next(buffer, sizeof buffer);
      if (n == 0) return 0;
      pending_.append(buffer, n);
    }
  }

 private:
  void take_complete_frames() {
    while (pending_.size() >= 8) {
      auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(pending_[i])); };
      size_t frame = 8 + (byte(4) << 24 | byte(5) << 16 | byte(6) << 8 | byte(7));
      if (pending_.size() < frame) return;
      unsigned stream = byte(0);
      if (stream < 3 && want_[stream]) ready_.append(pending_, 0, frame);
      pending_.erase(0, frame);
    }
  }

  LogReader reader_;
  bool want_[3];
  std::string pending_, ready_;
};

bool send_all(int sock, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = send(sock, data, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The client's stdin into the FIFO. The write end is held until the supervisor has opened the
// read end (the state left `created`): bytes sent before `start` wait in the pipe, and closing
// it earlier would discard them. Closing it gives the program end of file.
void forward_stdin(int sock, const std::string& early, const ContainerDir& container) {
  UniqueFd fifo(open(container.file("stdin").c_str(), O_RDWR | O_CLOEXEC));
  if (!fifo) return;
  bool connected = write_all(fifo.get(), early.data(), early.size());
  char buffer[16384];
  while (connected) {
    ssize_t n = recv(sock, buffer, sizeof buffer, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || !write_all(fifo.get(), buffer, static_cast<size_t>(n))) break;
  }
  for (int i = 0; i < 3000 && !stopping; ++i) {  // at most a minute for a start that never comes
    try {
      if (container.state().status != "created") break;
    } catch (const std::exception&) {
      break;  // removed
    }
    std::this_thread::sleep_for(kPoll);
  }
}

}  // namespace

BodyStream log_stream(const ContainerDir& container, const AttachOptions& options) {
  auto reader = std::make_shared<FrameFilter>(container, options);
  return [reader](char* buffer, size_t size) { return reader->next(buffer, size); };
}

Hijack attach_connection(const ContainerDir& container, const AttachOptions& options) {
  auto reader = std::make_shared<FrameFilter>(container, options);  // before the 101: nothing missed
  return [reader, container, options](int sock, const std::string& early) {
    std::thread input;
    if (options.forward_stdin && std::filesystem::exists(container.file("stdin")))
      input = std::thread([sock, early, container] { forward_stdin(sock, early, container); });
    char buffer[32768];
    while (size_t n = reader->next(buffer, sizeof buffer))
      if (!send_all(sock, buffer, n)) break;
    shutdown(sock, SHUT_RDWR);  // ends the stdin thread's recv too
    if (input.joinable()) input.join();
  };
}

void end_all_streams() { stopping = true; }
bool streams_ending() { return stopping; }

std::optional<int> wait_for_exit(const ContainerDir& container, int timeout_ms) {
  UniqueFd exit_fd = open_read(container.file("exit"));
  for (int waited = 0;; waited += 20) {
    if (auto code = exit_code_in(exit_fd.get())) return code;
    if (waited >= timeout_ms) return std::nullopt;
    std::this_thread::sleep_for(kPoll);
  }
}

BodyStream wait_stream(const ContainerDir& container, const std::string& condition) {
  auto exit_fd = std::make_shared<UniqueFd>(open_read(container.file("exit")));
  bool not_running_now = condition == "not-running" && container.state().status == "created";
  auto done = std::make_shared<bool>(false);
  return [exit_fd, container, condition, not_running_now, done](char* buffer, size_t size) -> size_t {
    if (*done) return 0;
    *done = true;
    std::optional<int> code = not_running_now ? std::optional<int>(0) : std::nullopt;
    while (!code) {
      if (stopping) return 0;
      code = exit_code_in(exit_fd->get());
      if (!code) std::this_thread::sleep_for(kPoll);
    }
    while (condition == "removed" && std::filesystem::exists(container.path()) && !stopping)
      std::this_thread::sleep_for(kPoll);
    std::string body = nlohmann::json{{"StatusCode", *code}, {"Error", nullptr}}.dump() + "\n";
    size_t n = std::min(size, body.size());
    std::copy_n(body.data(), n, buffer);
    return n;
  };
}

}  // namespace sandcell::dockerapi
