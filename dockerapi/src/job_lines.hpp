#pragma once
// The streamed answer of a job that runs on a thread of its own (pull, push, build): JSON lines
// as Docker's progress streams carry them. The route waits for the job's first line or its end,
// so a job that fails before it wrote anything is a plain HTTP error ({"message"}, 4xx/5xx); one
// that fails later ends its 200 stream with Docker's {"errorDetail":{"message"},"error"} line.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api_error.hpp"
#include "http_server.hpp"

namespace sandcell::dockerapi {

class JobLines {
 public:
  void write(const nlohmann::json& line);
  void fail(int status, const std::string& message);  // the job's last word
  void finish();
  // Blocks until the job wrote a line or ended: nullopt once it wrote (stream it), else its error.
  std::optional<ApiError> wait_started();
  // The streamed body: blocks for the next lines; 0 at the end (or when the server stops).
  size_t read(char* buffer, size_t size);
  // The client went away: later lines are dropped instead of kept (the job runs to its end).
  void abandon();

 private:
  std::mutex mutex_;
  std::condition_variable changed_;
  std::string pending_;
  size_t sent_ = 0;  // of pending_
  bool started_ = false, ended_ = false, abandoned_ = false;
  std::optional<ApiError> early_error_;
};

// Runs `job` on a detached thread (it finishes even if the client hangs up) and answers as
// above. An ApiError the job throws keeps its status; Error is 400 for bad input, else 500.
HttpReply run_job(std::function<void(JobLines&)> job);

// {"errorDetail":{"message":m},"error":m}: how Docker's streams end in failure.
nlohmann::json error_line(const std::string& message);

}  // namespace sandcell::dockerapi
