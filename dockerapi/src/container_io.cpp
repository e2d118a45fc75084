// Streams over a container's files. The supervisor appends to the log (its generations:
// container_log.hpp) and writes `exit` once; readers sleep until the directory changes or the
// supervisor ends (container_wake.hpp) and hold their fds, so an AutoRemove deleting the
// directory does not cut a reader off before it has drained the log (and the supervisor waits
// for them before it removes it: log.readers).
#include "container_io.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "container_log.hpp"
#include "container_wake.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;
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

// The log's generations (container_log.hpp) as one stream of frames, from the oldest or from
// the end; ends (0) at the end of the current one, or, following, once the container is over
// and everything it wrote was read. A generation rotated under the reader is read to its end
// (nothing is written to it after the rename) before the next one: no frame lost or repeated,
// unless the reader fell more than max-file generations behind (then it goes on with the
// oldest there is, as Docker's reader does).
class LogReader {
 public:
  LogReader(const ContainerDir& container, const AttachOptions& options)
      : container_(container), readers_(hold_log_readers(container)), exit_(open_read(container.file("exit"))),
        follow_(options.follow) {
    if (follow_) wake_.emplace(container);  // armed before the first read: no write goes unnoticed
    if (options.replay_log) {
      for (LogFile& file : open_log_generations(container)) files_.push_back(std::move(file));
    } else {
      files_.push_back(open_current_log(container));
      check(lseek(fd(), 0, SEEK_END), "seek the log");
    }
  }

  // The generations opened, oldest first: the tail is looked for in all of them.
  std::deque<LogFile>& files() { return files_; }
  int fd() const { return files_.front().log.get(); }
  int times_fd() const { return files_.front().times.get(); }
  // Drops the generations before `index` and seeks in the one that is then the first.
  void start_at(size_t index, uint64_t offset) {
    files_.erase(files_.begin(), files_.begin() + static_cast<std::ptrdiff_t>(index));
    check(lseek(fd(), static_cast<off_t>(offset), SEEK_SET), "seek the log");
  }
  void start_at_end() {
    files_.erase(files_.begin(), files_.end() - 1);
    check(lseek(fd(), 0, SEEK_END), "seek the log");
  }
  // True once after the reader went on to the next generation (offsets start again at 0).
  bool take_switched() { return std::exchange(switched_, false); }

  size_t next(char* buffer, size_t size) {
    for (;;) {
      ssize_t n = read(fd(), buffer, size);
      if (n > 0) return static_cast<size_t>(n);
      if (n < 0 && errno == EINTR) continue;
      if (files_.size() > 1) {  // this one is over: a newer one exists
        files_.pop_front();
        switched_ = true;
        continue;
      }
      // Without follow the generations opened are all there is to read (at most max-file of
      // them: a flood cannot keep the reader going).
      if (follow_ && !stopping) {
        if (std::optional<LogFile> successor = log_successor(container_, files_.front())) {
          files_.push_back(std::move(*successor));
          continue;  // what was written to ours before the rotation first
        }
      }
      if (!follow_ || over_ || stopping) {
        readers_.reset();  // done: an AutoRemove need not wait for us
        return 0;
      }
      // Over: read once more after seeing the exit, as the last output came before it. A
      // supervisor killed before it could write the exit gets it written here.
      wake_->look_at_supervisor();
      if (exit_code_in(exit_.get())) over_ = true;
      else wake_->wait();
    }
  }

 private:
  ContainerDir container_;
  UniqueFd readers_, exit_;
  std::optional<ContainerWake> wake_;  // following only
  std::deque<LogFile> files_;
  bool follow_, over_ = false, switched_ = false;
};

// Where the last `lines` lines of the wanted streams start in the generations: a generation, a
// frame's offset in it and an offset in its payload (a frame may hold several lines, or part of
// one; a line may go on in the next generation). Two passes, the first counting the lines, the
// second finding the first one to keep; nullopt: nothing to replay.
struct TailStart {
  size_t file = 0;
  uint64_t frame = 0;
  uint32_t skip = 0;
};
std::optional<TailStart> find_tail_start(const std::deque<LogFile>& files, const bool want[3], uint64_t lines) {
  if (lines == 0) return std::nullopt;
  auto scan = [&](const std::function<bool(size_t, uint64_t, uint32_t)>& on_line_start) {
    bool at_start[3] = {true, true, true};
    std::string payload;
    for (size_t file = 0; file < files.size(); ++file) {
      const int log_fd = files[file].log.get();
      for (uint64_t offset = 0;;) {
        unsigned char header[8];
        if (pread(log_fd, header, 8, static_cast<off_t>(offset)) != 8) break;
        uint32_t size = uint32_t{header[4]} << 24 | uint32_t{header[5]} << 16 | uint32_t{header[6]} << 8 | header[7];
        unsigned stream = header[0];
        if (stream < 3 && want[stream]) {
          payload.resize(size);
          if (pread(log_fd, payload.data(), size, static_cast<off_t>(offset + 8)) != static_cast<ssize_t>(size)) break;
          for (uint32_t i = 0; i < size; ++i) {
            if (at_start[stream] && on_line_start(file, offset, i)) return;
            at_start[stream] = payload[i] == '\n';
          }
        }
        offset += 8 + uint64_t{size};
      }
    }
  };
  uint64_t total = 0;
  scan([&](size_t, uint64_t, uint32_t) { return ++total, false; });
  uint64_t skip_lines = total > lines ? total - lines : 0, seen = 0;
  std::optional<TailStart> start;
  scan([&](size_t file, uint64_t frame, uint32_t at) {
    if (seen++ < skip_lines) return false;
    start = TailStart{file, frame, at};
    return true;
  });
  return start;
}

// When each frame of a generation was written (its log.times, in the log's order): looked up
// for increasing offsets.
class LogTimes {
 public:
  void reset(int fd) {
    fd_ = fd;
    position_ = 0;
    have_ = false;
  }
  // 0 when unknown (a frame whose time was lost).
  int64_t at(uint64_t frame_offset) {
    while (fd_ >= 0 && (!have_ || entry_.offset < frame_offset)) {
      if (pread(fd_, &entry_, sizeof entry_, static_cast<off_t>(position_)) != sizeof entry_) {
        have_ = false;
        return 0;  // not written yet: read again next time
      }
      position_ += sizeof entry_;
      have_ = true;
    }
    return have_ && entry_.offset == frame_offset ? entry_.unix_ns : 0;
  }

 private:
  int fd_ = -1;  // the LogReader's
  LogTime entry_{};
  uint64_t position_ = 0;
  bool have_ = false;
};

std::string rfc3339_nano(int64_t unix_ns) {
  time_t seconds = static_cast<time_t>(unix_ns / 1000000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(text + n, sizeof text - n, ".%09lldZ", static_cast<long long>(unix_ns % 1000000000));
  return text;
}

// The frames of the streams asked for, whole: a reader can stop between two frames only. With
// tail, since or timestamps, frames are cut, left out or rewritten, and framed again.
class FrameFilter {
 public:
  FrameFilter(const ContainerDir& container, const AttachOptions& options)
      : reader_(container, options), want_{false, options.stdout, options.stderr},
        since_ns_(options.since_ns), timestamps_(options.timestamps), raw_(options.raw) {
    if (options.replay_log && options.tail_lines) {
      std::optional<TailStart> start = find_tail_start(reader_.files(), want_, *options.tail_lines);
      if (start) {
        reader_.start_at(start->file, start->frame);
        skip_first_ = start->skip;
      } else {
        reader_.start_at_end();
      }
    }
    off_t at = lseek(reader_.fd(), 0, SEEK_CUR);
    check(at, "seek the log");
    pending_offset_ = static_cast<uint64_t>(at);
    times_.reset(reader_.times_fd());
  }

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
      if (reader_.take_switched()) {  // a new generation: its offsets and times start again
        pending_.clear();             // (a frame never spans two; a torn one is dropped)
        pending_offset_ = 0;
        times_.reset(reader_.times_fd());
      }
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
      if (stream < 3 && want_[stream]) {
        if (skip_first_ == 0 && !since_ns_ && !timestamps_) ready_.append(pending_, raw_ ? 8 : 0, raw_ ? frame - 8 : frame);
        else add_rewritten(stream, pending_.substr(8 + skip_first_, frame - 8 - skip_first_));
      }
      skip_first_ = 0;
      pending_.erase(0, frame);
      pending_offset_ += frame;
    }
  }

  void add_rewritten(unsigned stream, const std::string& payload) {
    int64_t written = since_ns_ || timestamps_ ? times_.at(pending_offset_) : 0;
    bool& line_start = at_line_start_[stream];
    if (since_ns_ && written < *since_ns_) {
      if (!payload.empty()) line_start = payload.back() == '\n';
      return;
    }
    std::string text;
    if (!timestamps_) {
      text = payload;
    } else {
      const std::string stamp = rfc3339_nano(written) + " ";
      for (char c : payload) {
        if (line_start) text += stamp;
        text += c;
        line_start = c == '\n';
      }
    }
    if (!timestamps_ && !payload.empty()) line_start = payload.back() == '\n';
    if (raw_) {
      ready_.append(text);
      return;
    }
    uint32_t n = static_cast<uint32_t>(text.size());
    char header[8] = {static_cast<char>(stream), 0, 0, 0, static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                      static_cast<char>(n >> 8), static_cast<char>(n)};
    ready_.append(header, 8).append(text);
  }

  LogReader reader_;
  LogTimes times_;
  bool want_[3];
  std::optional<int64_t> since_ns_;
  bool timestamps_, raw_;
  bool at_line_start_[3] = {true, true, true};
  uint32_t skip_first_ = 0;
  uint64_t pending_offset_ = 0;  // of pending_'s first byte in the log
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
  ContainerWake wake(container, ContainerWake::Watch::Changes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);  // a start that never comes
  while (!stopping && std::chrono::steady_clock::now() < deadline) {
    try {
      if (container.state().status != "created") break;
    } catch (const std::exception&) {
      break;  // removed
    }
    wake.wait(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
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

void end_all_streams() {
  stopping = true;
  wake_all_waiters();
}
bool streams_ending() { return stopping; }

std::optional<int> wait_for_exit(const ContainerDir& container, int timeout_ms) {
  UniqueFd exit_fd = open_read(container.file("exit"));
  ContainerWake wake(container, ContainerWake::Watch::Changes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    wake.look_at_supervisor();
    if (auto code = exit_code_in(exit_fd.get())) return code;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || stopping) return std::nullopt;
    wake.wait(left);
  }
}

BodyStream wait_stream(const ContainerDir& container, const std::string& condition) {
  auto exit_fd = std::make_shared<UniqueFd>(open_read(container.file("exit")));
  bool not_running_now = condition == "not-running" && container.state().status == "created";
  auto done = std::make_shared<bool>(false);
  return [exit_fd, container, condition, not_running_now, done](char* buffer, size_t size) -> size_t {
    if (*done) return 0;
    *done = true;
    ContainerWake wake(container, ContainerWake::Watch::Changes);  // armed before the first check
    std::optional<int> code = not_running_now ? std::optional<int>(0) : std::nullopt;
    while (!code) {
      if (stopping) return 0;
      wake.look_at_supervisor();
      code = exit_code_in(exit_fd->get());
      if (!code) wake.wait();
    }
    while (condition == "removed" && std::filesystem::exists(container.path()) && !stopping) wake.wait();
    std::string body = nlohmann::json{{"StatusCode", *code}, {"Error", nullptr}}.dump() + "\n";
    size_t n = std::min(size, body.size());
    std::copy_n(body.data(), n, buffer);
    return n;
  };
}

}  // namespace sandcell::dockerapi
