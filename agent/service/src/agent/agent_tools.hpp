#pragma once
// The tools the agent offers its model: run_code, write_file, read_file, list_skills. All of
// them act in the run's one session, so a file written in step 2 is there in step 5.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/agent_service/chat_model.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

struct ToolOutcome {
  std::string text{};             // what goes back to the model
  bool is_error = false;
  std::optional<Json> result{};   // the runner's full result, when code ran
};

struct AgentToolSettings {
  std::string skill{};    // default language
  std::string session{};  // the run's session
  std::string net{};
  int timeout_s = 0;
};

class AgentTools {
 public:
  AgentTools(Executor& executor, AgentToolSettings settings) : executor_(executor), settings_(std::move(settings)) {}
  static std::vector<ToolSpec> specs();
  // `arguments` is the model's JSON text; invalid JSON is an error result, not an exception.
  ToolOutcome call(const std::string& name, const std::string& arguments);
  ToolOutcome run_code(const std::string& language, const std::string& code);

 private:
  // A call in two phases: its arguments read and checked (Error::invalid: the model's to fix),
  // then the work, returned to run (its failures are not). nullopt: no such tool.
  std::optional<std::function<ToolOutcome()>> tool_work(const std::string& name, const Json& args);
  ToolOutcome write_file(const std::string& path, const std::string& content);
  ToolOutcome read_file(const std::string& path);
  ToolOutcome list_skills();
  Executor& executor_;
  AgentToolSettings settings_;
};

}  // namespace sandcell::agent_service
