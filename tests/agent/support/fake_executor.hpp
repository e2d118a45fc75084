#pragma once
// An Executor for unit tests: answers each request with a scripted function and records it.
#include <mutex>
#include <vector>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::test {

using agent_service::Json;

class FakeExecutor : public agent_service::Executor {
 public:
  std::function<Json(const Json&)> answer = [](const Json&) { return Json{{"status", "ok"}, {"exit_code", 0}}; };
  Json skills = Json::array({{{"name", "python"}}});

  // When set, answers instead of `answer` and sees the run's stop token (cancellation tests).
  std::function<Json(const Json&, std::stop_token)> answer_stoppable;

  Json run(const Json& request, std::stop_token stop = {}) override {
    {
      std::lock_guard lock(mutex_);
      requests.push_back(request);
    }
    return answer_stoppable ? answer_stoppable(request, stop) : answer(request);
  }
  Json run_streaming(const Json& request, const agent_service::OutputSink& sink, std::stop_token stop = {}) override {
    Json result = run(request, stop);
    if (result.contains("stdout")) sink("stdout", result["stdout"].get<std::string>());
    if (result.contains("stderr")) sink("stderr", result["stderr"].get<std::string>());
    return result;
  }
  Json list_skills() override { return skills; }
  Json list_sessions() override { return Json::array(); }
  void remove_session(const std::string& id) override {
    std::lock_guard lock(mutex_);
    removed_sessions.push_back(id);
  }

  std::vector<Json> requests;
  std::vector<std::string> removed_sessions;

 private:
  std::mutex mutex_;
};

// A result the way `sandcell code` reports a program that ended with status `status`.
inline Json code_result(const std::string& status, const std::string& out, const std::string& err = "",
                        Json error = nullptr) {
  Json r{{"status", status}, {"exit_code", status == "ok" ? 0 : 1}, {"stdout", out}, {"stderr", err},
         {"report", {{"status", status}, {"events", {{"denied_syscalls", Json::array()}, {"blocked_connections", Json::array()}}}}},
         {"artifacts", Json::array()}};
  if (!error.is_null()) r["error"] = error;
  return r;
}

}  // namespace sandcell::test
