#include "job_lines.hpp"

#include <cstring>
#include <memory>
#include <thread>

#include "container_io.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::dockerapi {

nlohmann::json error_line(const std::string& message) {
  return {{"errorDetail", {{"message", message}}}, {"error", message}};
}

void JobLines::write(const nlohmann::json& line) {
  std::lock_guard lock(mutex_);
  started_ = true;
  if (ended_ || abandoned_) return;
  pending_ += line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\r\n";
  changed_.notify_all();
}

void JobLines::abandon() {
  std::lock_guard lock(mutex_);
  abandoned_ = true;
  pending_.clear();
  sent_ = 0;
}

void JobLines::fail(int status, const std::string& message) {
  {
    std::lock_guard lock(mutex_);
    if (ended_) return;
    if (!started_) {
      early_error_ = ApiError{status, message};
      ended_ = true;
      changed_.notify_all();
      return;
    }
  }
  write(error_line(message));
  finish();
}

void JobLines::finish() {
  std::lock_guard lock(mutex_);
  ended_ = true;
  changed_.notify_all();
}

std::optional<ApiError> JobLines::wait_started() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [this] { return started_ || ended_; });
  return early_error_;
}

size_t JobLines::read(char* buffer, size_t size) {
  std::unique_lock lock(mutex_);
  while (sent_ == pending_.size() && !ended_) {
    if (streams_ending()) return 0;
    changed_.wait_for(lock, std::chrono::milliseconds(200));
  }
  size_t n = std::min(size, pending_.size() - sent_);
  std::memcpy(buffer, pending_.data() + sent_, n);
  sent_ += n;
  if (sent_ == pending_.size()) pending_.clear(), sent_ = 0;
  return n;
}

HttpReply run_job(std::function<void(JobLines&)> job) {
  auto lines = std::make_shared<JobLines>();
  std::thread([lines, job = std::move(job)] {
    try {
      job(*lines);
      lines->finish();
    } catch (const ApiError& e) {
      lines->fail(e.status, e.message);
    } catch (const Error& e) {
      lines->fail(e.input_error() ? 400 : 500, e.what());
    } catch (const std::exception& e) {
      lines->fail(500, e.what());
    }
  }).detach();
  if (std::optional<ApiError> error = lines->wait_started()) throw *error;
  // Owned by the streamed body alone: MHD destroys that when the connection ends.
  std::shared_ptr<void> reader(nullptr, [lines](void*) { lines->abandon(); });
  HttpReply reply;
  reply.stream = [lines, reader](char* buffer, size_t size) { return lines->read(buffer, size); };
  return reply;
}

}  // namespace sandcell::dockerapi
