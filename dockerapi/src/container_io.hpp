#pragma once
// A container's output and stdin as streams: the log followed until the container is over,
// the hijacked attach connection, and waiting for the exit file.
#include <cstdint>
#include <optional>
#include <string>

#include "container_store.hpp"
#include "http_server.hpp"

namespace sandcell::dockerapi {

struct AttachOptions {
  bool replay_log = false;  // logs=1: from the start of the log, not its current end
  bool follow = true;       // stream=1: until the container is over
  bool forward_stdin = false;
  bool stdout = true, stderr = true;  // which streams' frames are sent
  // logs' `tail`: with replay_log, only the last N lines of the streams asked for (counted in
  // two passes over the log, no line kept in memory); nullopt: all.
  std::optional<uint64_t> tail_lines;
  // logs' `since`: frames written before it (ns since the epoch) are left out; `timestamps`:
  // each line starts with the RFC 3339 time its frame was written and a space.
  std::optional<int64_t> since_ns;
  bool timestamps = false;
  // A Tty container's: the payloads alone, without Docker's 8-byte frame headers (Docker's
  // raw stream; its log has only the pty's output, in stdout frames).
  bool raw = false;
};

// <container>/log.times: one entry per frame of the log, appended by the supervisor.
struct LogTime {
  uint64_t offset;  // of the frame in the log
  int64_t unix_ns;
};

// The log as Docker's multiplexed frames, from the start or the end, optionally following.
BodyStream log_stream(const ContainerDir& container, const AttachOptions& options);
// attach after the 101: the log to the client, the client's bytes into the stdin FIFO.
Hijack attach_connection(const ContainerDir& container, const AttachOptions& options);
// POST /wait: the body {"StatusCode":N,"Error":null} once the condition holds.
BodyStream wait_stream(const ContainerDir& container, const std::string& condition);

// Ends every stream above at its next poll (the server is stopping).
void end_all_streams();
bool streams_ending();  // end_all_streams was called: other streams (job_lines.hpp) end too

// Blocks until the exit file is written (or `timeout_ms` passed); the status code if written.
std::optional<int> wait_for_exit(const ContainerDir& container, int timeout_ms);

}  // namespace sandcell::dockerapi
