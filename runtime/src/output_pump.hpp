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
  bool open() const { return static_cast<bool>(fd_); }
  // Reads what is available (non-blocking fd); closes on EOF.
  void drain();
  void close() { fd_.reset(); }

  uint64_t total_bytes() const { return total_; }
  bool truncated() const { return total_ > cap_; }

 private:
  UniqueFd fd_;
  Stream stream_;
  uint64_t cap_;
  const OutputSink& sink_;
  uint64_t total_ = 0;
};

}  // namespace sandcell::runtime
