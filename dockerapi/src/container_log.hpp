#pragma once
// A container's log, bounded and rotated as Docker's json-file and local drivers do
// (docs/docker-api.md, "Log: bounded and rotated"). The current generation is <container>/log
// with its side file log.times; older ones are log.1 … log.N-1 with log.times.1 …, log.1 the
// newest. Each generation (frames + times together) stays within max-size: before a frame
// would pass it, `log` becomes log.1 (log.1 becomes log.2 …, the one past max-file goes) and a
// new `log` begins. Rotation happens with <container>/log.lock held exclusively (flock);
// readers take it shared to look names up, so a reader never sees half a rotation.
#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "container_store.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::dockerapi {

// The server's side (serve's --docker-api-log-max-size, --docker-api-log-max-file,
// --docker-api-max-log): what a container without LogConfig gets, and the ceiling on
// max-size × max-file any container may ask for.
struct LogBounds {
  uint64_t default_size = 20ull << 20;
  uint32_t default_files = 5;
  uint64_t max_total = 1ull << 30;
};

constexpr uint64_t kMinLogSize = 1024;  // a frame (8-byte header) and its time (16) fit with room
constexpr uint32_t kMaxLogFiles = 100;  // a reader holds every generation open

// Docker's size units (go-units RAMInBytes: "10m", "10MB", "1.5g", "100", binary multiples);
// nullopt when unreadable or past 2^63.
std::optional<uint64_t> parse_log_size(const std::string& text);

// The policy a container's log is kept by.
struct LogPolicy {
  std::string type = "json-file";  // json-file | local | none
  uint64_t max_size = 20ull << 20;
  uint32_t max_file = 5;
  bool readable() const { return type != "none"; }  // `none`: attach only, logs answers 501
};

// HostConfig.LogConfig of a create body, checked (ApiError 400 naming the field): the LogConfig
// to store, {"Type": T, "Config": {"max-size": S, "max-file": N}} with the server's defaults
// filled in (as text: inspect shows it as given or defaulted).
nlohmann::json checked_log_config(const nlohmann::json& host, const LogBounds& bounds);

// The policy of a stored create request; the built-in default (LogBounds{}) for a container
// created before log bounds.
LogPolicy log_policy_of(const nlohmann::json& request);
// The LogConfig inspect shows for a stored request.
nlohmann::json log_config_of(const nlohmann::json& request);

// The supervisor's side: appends Docker's multiplexed frames (and their times) to the current
// generation, rotating before one would pass max-size. Thread-safe (the Tty pump is a thread).
class LogWriter {
 public:
  LogWriter(const ContainerDir& container, const LogPolicy& policy);
  // A full disk loses output, not the run.
  void append(runtime::Stream stream, std::span<const char> data);

 private:
  void open_current();
  void reopen();
  void rotate();
  void append_frame(runtime::Stream stream, std::span<const char> payload);

  std::mutex mutex_;
  std::string dir_;
  LogPolicy policy_;
  runtime::UniqueFd log_, times_, lock_;
  uint64_t log_bytes_ = 0, times_bytes_ = 0;
};

// The reader's side: the generations as open files, oldest first, and the one after a given
// file (rotated under a follower). Names are looked up under log.lock (shared).
struct LogFile {
  runtime::UniqueFd log, times;  // times may be invalid (lost; a container from before)
  dev_t dev = 0;
  ino_t ino = 0;
};
// Every generation there is now, oldest first (a consistent set: taken under the lock).
std::vector<LogFile> open_log_generations(const ContainerDir& container);
// Only the current generation.
LogFile open_current_log(const ContainerDir& container);
// The generation that followed `file`, when `file` is no longer the current one: the next
// newer one, or the oldest there is when the reader fell so far behind that the one after it
// is deleted already (those lines are lost, as with Docker). nullopt: `file` is still current
// (or the container is gone).
std::optional<LogFile> log_successor(const ContainerDir& container, const LogFile& file);

// Readers hold <container>/log.readers shared while they read; an AutoRemove'd container's
// supervisor waits (at most `timeout_ms`) for them before removing the directory, so a reader
// still behind a rotation finds the generations that followed.
runtime::UniqueFd hold_log_readers(const ContainerDir& container);
void wait_for_log_readers(const ContainerDir& container, int timeout_ms);

}  // namespace sandcell::dockerapi
