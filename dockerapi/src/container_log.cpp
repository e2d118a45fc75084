// A container's log, bounded and rotated (container_log.hpp).
#include "container_log.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <regex>

#include "api_error.hpp"
#include "container_io.hpp"
#include "container_wake.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;
using runtime::UniqueFd;

constexpr uint64_t kFrameHeader = 8;
constexpr uint64_t kMaxPayload = 1u << 20;  // a frame's payload: output is cut into frames of at most this
constexpr uint64_t kNoneSize = 1u << 20;    // `none`: a window for attach only

// "log" for generation 0, "log.K" after; the times side file alike ("log.times", "log.times.K").
std::string generation_name(const char* base, unsigned k) {
  return k == 0 ? std::string(base) : std::string(base) + "." + std::to_string(k);
}

std::string format_size(uint64_t bytes) {
  for (auto [shift, unit] : {std::pair{30, "g"}, {20, "m"}, {10, "k"}})
    if (bytes >= (1ull << shift) && bytes % (1ull << shift) == 0) return std::to_string(bytes >> shift) + unit;
  return std::to_string(bytes);
}

// flock for the life of the object; EINTR retried.
class FileLock {
 public:
  FileLock(int fd, int how) : fd_(fd) {
    if (fd_ < 0) return;
    while (flock(fd_, how) != 0 && errno == EINTR) {
    }
  }
  ~FileLock() {
    if (fd_ >= 0) flock(fd_, LOCK_UN);
  }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

UniqueFd open_lock(const ContainerDir& container, const char* name) {
  return UniqueFd(open(container.file(name).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
}

bool open_generation(const ContainerDir& container, unsigned k, LogFile& out) {
  out.log = UniqueFd(open(container.file(generation_name("log", k).c_str()).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!out.log) return false;
  struct stat st {};
  if (fstat(out.log.get(), &st) != 0) return false;
  out.dev = st.st_dev;
  out.ino = st.st_ino;
  out.times = UniqueFd(open(container.file(generation_name("log.times", k).c_str()).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  return true;
}

// How many rotated generations there are (log.1 … log.N), counted under the lock.
unsigned rotated_count(const ContainerDir& container) {
  unsigned n = 0;
  struct stat st {};
  while (n < kMaxLogFiles && lstat(container.file(generation_name("log", n + 1).c_str()).c_str(), &st) == 0) ++n;
  return n;
}

std::string config_text(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end()) return "";
  if (!it->is_string())
    throw bad_request(std::string("HostConfig.LogConfig.Config.") + key + " must be a string");
  return it->get<std::string>();
}

}  // namespace

std::optional<uint64_t> parse_log_size(const std::string& text) {
  static const std::regex kSize("^(\\d+(\\.\\d+)?) ?([kKmMgGtTpP])?[iI]?[bB]?$");
  std::smatch m;
  if (text.size() > 32 || !std::regex_match(text, m, kSize)) return std::nullopt;
  double number = 0;
  auto parsed = std::from_chars(m[1].first.base(), m[1].second.base(), number);
  if (parsed.ec != std::errc()) return std::nullopt;
  int shift = 0;
  if (m[3].matched) shift = 10 * static_cast<int>(std::string("kmgtp").find(static_cast<char>(std::tolower(*m[3].first))) + 1);
  double bytes = std::ldexp(number, shift);
  if (!std::isfinite(bytes) || bytes >= 9.2e18) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

json checked_log_config(const json& host, const LogBounds& bounds) {
  LogPolicy policy{.type = "json-file", .max_size = bounds.default_size, .max_file = bounds.default_files};
  json given = host.contains("LogConfig") && !host["LogConfig"].is_null() ? host["LogConfig"] : json::object();
  if (!given.is_object()) throw bad_request("HostConfig.LogConfig must be an object");
  if (given.contains("Type") && !given["Type"].is_null()) {
    if (!given["Type"].is_string()) throw bad_request("HostConfig.LogConfig.Type must be a string");
    std::string type = given["Type"].get<std::string>();
    if (type != "" && type != "json-file" && type != "local" && type != "none")
      throw bad_request("HostConfig.LogConfig.Type " + type +
                        " is not supported by sandcell (json-file, local, none: the log is the container's own file)");
    if (!type.empty()) policy.type = type;
  }
  json config = given.contains("Config") && !given["Config"].is_null() ? given["Config"] : json::object();
  if (!config.is_object()) throw bad_request("HostConfig.LogConfig.Config must be an object");
  for (const auto& [key, value] : config.items()) {
    if (policy.type == "none")
      throw bad_request("HostConfig.LogConfig.Config." + key + ": the none log driver takes no options");
    if (key == "compress") {
      if (config_text(config, "compress") != "false")
        throw bad_request("HostConfig.LogConfig.Config.compress: sandcell does not compress rotated logs (give false or leave it out)");
    } else if (key != "max-size" && key != "max-file") {
      throw bad_request("HostConfig.LogConfig.Config." + key + " is not supported by sandcell (max-size, max-file, compress=false)");
    }
  }
  std::string size_text = config_text(config, "max-size"), file_text = config_text(config, "max-file");
  if (config.contains("max-size")) {
    std::optional<uint64_t> size = parse_log_size(size_text);
    if (size_text == "-1")
      throw bad_request("HostConfig.LogConfig.Config.max-size -1: an unbounded log is refused by sandcell");
    if (!size) throw bad_request("HostConfig.LogConfig.Config.max-size: invalid size '" + size_text + "' (e.g. 10m, 512k)");
    if (*size < kMinLogSize)
      throw bad_request("HostConfig.LogConfig.Config.max-size " + size_text + " is too small (at least 1k)");
    policy.max_size = *size;
  }
  if (config.contains("max-file")) {
    uint32_t files = 0;
    auto parsed = std::from_chars(file_text.data(), file_text.data() + file_text.size(), files);
    if (file_text.empty() || parsed.ec != std::errc() || parsed.ptr != file_text.data() + file_text.size() ||
        files < 1 || files > kMaxLogFiles)
      throw bad_request("HostConfig.LogConfig.Config.max-file: invalid value '" + file_text + "' (1 to " +
                        std::to_string(kMaxLogFiles) + ")");
    policy.max_file = files;
  }
  if (policy.type == "none") return {{"Type", "none"}, {"Config", json::object()}};
  // The product in long double: no overflow for any size that parsed.
  if (static_cast<long double>(policy.max_size) * policy.max_file > static_cast<long double>(bounds.max_total))
    throw bad_request("HostConfig.LogConfig.Config: max-size × max-file is over the server's --docker-api-max-log (" +
                      format_size(bounds.max_total) + ")");
  return {{"Type", policy.type},
          {"Config", {{"max-size", config.contains("max-size") ? size_text : format_size(policy.max_size)},
                      {"max-file", config.contains("max-file") ? file_text : std::to_string(policy.max_file)}}}};
}

LogPolicy log_policy_of(const json& request) {
  LogPolicy policy;
  const json& host = request["HostConfig"];
  if (!host.contains("LogConfig")) return policy;
  const json& stored = host["LogConfig"];
  policy.type = stored.value("Type", "json-file");
  if (policy.type == "none") {
    policy.max_size = kNoneSize;
    policy.max_file = 1;
    return policy;
  }
  const json& config = stored.value("Config", json::object());
  if (config.contains("max-size")) policy.max_size = parse_log_size(config["max-size"].get<std::string>()).value_or(policy.max_size);
  if (config.contains("max-file")) policy.max_file = static_cast<uint32_t>(std::stoul(config["max-file"].get<std::string>()));
  // Checked at create; kept in range whatever the file says (rotation counts down from it).
  policy.max_size = std::max(policy.max_size, kMinLogSize);
  policy.max_file = std::clamp<uint32_t>(policy.max_file, 1, kMaxLogFiles);
  return policy;
}

json log_config_of(const json& request) {
  const json& host = request["HostConfig"];
  if (host.contains("LogConfig")) return host["LogConfig"];
  LogPolicy policy;
  return {{"Type", policy.type},
          {"Config", {{"max-size", format_size(policy.max_size)}, {"max-file", std::to_string(policy.max_file)}}}};
}

LogWriter::LogWriter(const ContainerDir& container, const LogPolicy& policy)
    : dir_(container.path()), policy_(policy), lock_(open_lock(container, "log.lock")) {
  if (!lock_) throw Error(errno, "open " + container.file("log.lock"));
  FileLock held(lock_.get(), LOCK_EX);
  open_current();
}

void LogWriter::open_current() {
  const std::string log = dir_ + "/log", times = dir_ + "/log.times";
  log_ = UniqueFd(open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!log_) throw Error(errno, "open " + log);
  times_ = UniqueFd(open(times.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  struct stat st {};
  log_bytes_ = fstat(log_.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
  times_bytes_ = times_ && fstat(times_.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

// log.N-1 goes, log.K becomes log.K+1, log becomes log.1 (or goes, with max-file 1), and a new
// log begins; the same for the times. Readers look names up under the same lock.
void LogWriter::rotate() {
  FileLock held(lock_.get(), LOCK_EX);
  for (const char* base : {"log", "log.times"}) {
    const unsigned last = policy_.max_file - 1;
    unlink((dir_ + "/" + generation_name(base, last)).c_str());
    for (unsigned k = last; k-- > 0;)
      rename((dir_ + "/" + generation_name(base, k)).c_str(), (dir_ + "/" + generation_name(base, k + 1)).c_str());
  }
  log_.reset();
  times_.reset();
  log_bytes_ = times_bytes_ = 0;
  reopen();
}

// No new log (a full file system): this frame is lost, as on a full disk; the next one tries
// again (without rotating what is left).
void LogWriter::reopen() {
  try {
    open_current();
  } catch (const Error&) {
  }
}

// Docker's multiplexed frame: stream (1 stdout, 2 stderr), three zero bytes, big-endian length;
// its time (LogTime: the frame's offset in this generation, the time in ns) to the side file.
void LogWriter::append_frame(runtime::Stream stream, std::span<const char> payload) {
  const uint64_t cost = kFrameHeader + payload.size() + sizeof(LogTime);
  if (!log_) reopen();
  if (!log_) return;
  if (log_bytes_ + times_bytes_ > 0 && log_bytes_ + times_bytes_ + cost > policy_.max_size) rotate();
  if (!log_) return;
  LogTime when{.offset = log_bytes_,
               .unix_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::system_clock::now().time_since_epoch()).count()};
  const uint32_t size = static_cast<uint32_t>(payload.size());
  unsigned char header[8] = {static_cast<unsigned char>(stream == runtime::Stream::Stdout ? 1 : 2), 0, 0, 0,
                             static_cast<unsigned char>(size >> 24), static_cast<unsigned char>(size >> 16),
                             static_cast<unsigned char>(size >> 8), static_cast<unsigned char>(size)};
  iovec parts[2] = {{header, sizeof header}, {const_cast<char*>(payload.data()), payload.size()}};
  ssize_t n;
  while ((n = writev(log_.get(), parts, 2)) < 0 && errno == EINTR) {
  }
  if (n != static_cast<ssize_t>(kFrameHeader + payload.size())) {
    // A full disk: the frame goes whole (no half frame a reader would misparse).
    if (n > 0 && ftruncate(log_.get(), static_cast<off_t>(log_bytes_)) != 0) {
    }
    return;
  }
  log_bytes_ += static_cast<uint64_t>(n);
  if (times_ && write(times_.get(), &when, sizeof when) == static_cast<ssize_t>(sizeof when)) times_bytes_ += sizeof when;
  // else a full disk: the frame has no time (since skips it, timestamps show the zero time)
}

void LogWriter::append(runtime::Stream stream, std::span<const char> data) {
  std::lock_guard<std::mutex> guard(mutex_);
  // A frame and its time always fit in a generation: no file passes max-size.
  const uint64_t most = std::min(kMaxPayload, policy_.max_size - kFrameHeader - sizeof(LogTime));
  while (!data.empty()) {
    const size_t size = static_cast<size_t>(std::min<uint64_t>(data.size(), most));
    append_frame(stream, data.first(size));
    data = data.subspan(size);
  }
}

std::vector<LogFile> open_log_generations(const ContainerDir& container) {
  UniqueFd lock = open_lock(container, "log.lock");
  FileLock held(lock.get(), LOCK_SH);
  std::vector<LogFile> out;
  for (unsigned k = rotated_count(container) + 1; k-- > 0;) {
    LogFile file;
    if (open_generation(container, k, file)) out.push_back(std::move(file));
  }
  if (out.empty()) throw Error(ENOENT, "open " + container.file("log"));
  return out;
}

LogFile open_current_log(const ContainerDir& container) {
  UniqueFd lock = open_lock(container, "log.lock");
  FileLock held(lock.get(), LOCK_SH);
  LogFile file;
  if (!open_generation(container, 0, file)) throw Error(errno, "open " + container.file("log"));
  return file;
}

std::optional<LogFile> log_successor(const ContainerDir& container, const LogFile& file) {
  struct stat st {};
  // Without the lock first: this is asked at every poll of a follower.
  if (stat(container.file("log").c_str(), &st) != 0 || (st.st_dev == file.dev && st.st_ino == file.ino))
    return std::nullopt;
  UniqueFd lock = open_lock(container, "log.lock");
  if (!lock) return std::nullopt;  // removed
  FileLock held(lock.get(), LOCK_SH);
  unsigned rotated = rotated_count(container);
  unsigned next = rotated;  // not found: deleted, the reader fell behind; the oldest there is
  for (unsigned k = 1; k <= rotated; ++k)
    if (stat(container.file(generation_name("log", k).c_str()).c_str(), &st) == 0 && st.st_dev == file.dev &&
        st.st_ino == file.ino) {
      next = k - 1;
      break;
    }
  LogFile out;
  if (!open_generation(container, next, out)) return std::nullopt;
  return out;
}

UniqueFd hold_log_readers(const ContainerDir& container) {
  UniqueFd fd = open_lock(container, "log.readers");
  if (fd) flock(fd.get(), LOCK_SH);
  return fd;
}

void wait_for_log_readers(const ContainerDir& container, int timeout_ms) {
  UniqueFd fd = open_lock(container, "log.readers");
  if (!fd) return;
  // A reader lets go by closing its descriptor (opened for writing: IN_CLOSE_WRITE wakes us).
  ContainerWake wake(container, ContainerWake::Watch::Changes);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) return;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return;
    wake.wait(left);
  }
}

}  // namespace sandcell::dockerapi
