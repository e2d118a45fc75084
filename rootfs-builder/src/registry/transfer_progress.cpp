#include "transfer_progress.hpp"

#include <cstdio>

namespace sandcell::rootfs_builder {

TransferProgress::TransferProgress(bool enabled, std::string title, std::int64_t total_bytes, Callback callback)
    : enabled_(enabled && total_bytes > 0), callback_(total_bytes > 0 ? std::move(callback) : Callback()),
      title_(std::move(title)), total_(total_bytes) {}

TransferProgress::TransferProgress(TransferProgress& whole, std::int64_t total_bytes, Callback callback)
    : enabled_(false), whole_(&whole), callback_(total_bytes > 0 ? std::move(callback) : Callback()), title_(),
      total_(total_bytes) {}

TransferProgress::~TransferProgress() {
  if (!enabled_ && !callback_) return;
  draw(true);
  if (enabled_) std::fputc('\n', stderr);
}

void TransferProgress::add(std::int64_t bytes) {
  done_ += bytes;
  if (whole_) whole_->add(bytes);
  if (enabled_ || callback_) draw(false);
}

void TransferProgress::take_back(std::int64_t bytes) {
  done_ -= bytes;
  if (whole_) whole_->take_back(bytes);
}

void TransferProgress::draw(bool force) {
  std::unique_lock lock(draw_mutex_, std::try_to_lock);
  if (!lock) return;
  auto now = std::chrono::steady_clock::now();
  if (!force && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  if (callback_) callback_(std::min(done_.load(), total_), total_);
  if (!enabled_) return;
  constexpr int kWidth = 30;
  std::int64_t done = std::min(done_.load(), total_);
  int filled = static_cast<int>(kWidth * done / total_);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, ' ');
  std::fprintf(stderr, "\r%s [%s] %.1f/%.1f MB", title_.c_str(), bar.c_str(), static_cast<double>(done) / 1e6,
               static_cast<double>(total_) / 1e6);
  std::fflush(stderr);
}

}  // namespace sandcell::rootfs_builder
