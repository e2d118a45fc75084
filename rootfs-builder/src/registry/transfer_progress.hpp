#pragma once
// One progress bar on stderr for all the blobs of a pull or push, redrawn in place at most
// ten times a second; nothing at all when disabled (not a terminal, or -q).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace sandcell::rootfs_builder {

class TransferProgress {
 public:
  TransferProgress(bool enabled, std::string title, std::int64_t total_bytes);
  ~TransferProgress();  // ends the line
  TransferProgress(const TransferProgress&) = delete;
  TransferProgress& operator=(const TransferProgress&) = delete;

  void add(std::int64_t bytes);      // thread-safe
  void take_back(std::int64_t bytes);  // a download restarted from zero

 private:
  void draw(bool force);

  bool enabled_;
  std::string title_;
  std::int64_t total_;
  std::atomic<std::int64_t> done_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace sandcell::rootfs_builder
