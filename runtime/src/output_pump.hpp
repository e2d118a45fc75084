#pragma once
// Moves one output stream of the program to its sink, up to a byte cap. Beyond the cap it keeps
// reading and counting (so the program never blocks on a full pipe) but forwards nothing.
#include <cstdint>

#include "sandcell/runtime/sandbox.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

class OutputPump {
 public:
  OutputPump(UniqueFd read_end, Stream stream, uint64_t cap, const OutputSink& sink)
      : fd_(std::move(read_end)), stream_(stream), cap_(cap), sink_(sink) {}

  int fd() const { return fd_.get(); }
  // False once EOF was read; the fd itself stays open until close(). The caller takes it out of
  // its epoll set first: an epoll entry lives as long as the open file description, which a
  // close() here would not end while another process (the sandbox's init) holds a copy, and a
  // hung-up pipe still in the set makes every epoll_wait return at once.
  bool open() const { return fd_ && !eof_; }
  // Reads what is available (non-blocking fd), up to EOF, at most 1 MiB a call: true when it
  // stopped at that bound (more may be waiting), false once the pipe was empty or at EOF.
  bool drain();
  void close() { fd_.reset(); }

  // The hand-over of a pooled run: what came before is not the program's.
  void restart(uint64_t cap) {
    total_ = 0;
    cap_ = cap;
  }

  uint64_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > cap_; }

 private:
  UniqueFd fd_;
  bool eof_ = false;
  Stream stream_;
  uint64_t cap_;
  const OutputSink& sink_;
  uint64_t total_ = 0;
};

}  // namespace sandcell::runtime
