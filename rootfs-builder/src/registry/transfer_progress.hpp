#pragma once
// One progress bar on stderr for all the blobs of a pull or push, redrawn in place at most
// ten times a second; nothing at all when disabled (not a terminal, or -q). A callback, when
// given, is told as often (the Docker API turns it into progress lines).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

namespace sandcell::rootfs_builder {

class TransferProgress {
 public:
  using Callback = std::function<void(std::int64_t done, std::int64_t total)>;
  TransferProgress(bool enabled, std::string title, std::int64_t total_bytes, Callback callback = {});
  // One blob's share of `whole`: its bytes count there too (no bar of its own; the callback is
  // told about this blob alone).
  TransferProgress(TransferProgress& whole, std::int64_t total_bytes, Callback callback);
  ~TransferProgress();  // ends the line
  TransferProgress(const TransferProgress&) = delete;
  TransferProgress& operator=(const TransferProgress&) = delete;

  void add(std::int64_t bytes);      // thread-safe
  void take_back(std::int64_t bytes);  // a download restarted from zero

 private:
  void draw(bool force);

  bool enabled_;
  TransferProgress* whole_ = nullptr;
  Callback callback_;
  std::string title_;
  std::int64_t total_;
  std::atomic<std::int64_t> done_{0};
  std::mutex draw_mutex_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace sandcell::rootfs_builder
