#pragma once
// The agent loop: ask the model, run the code it wants in the sandbox (one session per run, so
// files persist between steps), feed back a compact result, until it answers or a budget ends.
#include <chrono>
#include <string>

#include "sandcell/agent_service/chat_model.hpp"
#include "sandcell/agent_service/executor.hpp"
#include "sandcell/agent_service/transcript.hpp"

namespace sandcell::agent_service {

struct AgentOptions {
  std::string task{};
  std::string skill = "python";  // the default language of run_code and of fenced blocks
  int max_steps = 12;            // model calls
  std::chrono::seconds max_time{600};
  std::string net{};         // network policy of every execution; empty: the skill's default
  int exec_timeout_s = 0;  // per execution; 0: the skill's default
  bool use_tools = true;   // false: run fenced code blocks instead (models without tool calling)
  bool keep_session = false;
};

struct AgentOutcome {
  std::string status{};  // answered, max_steps, time_budget, model_error
  std::string answer{};
  std::string error{};   // model_error: what the provider said
  int steps = 0;
  int executions = 0;
  Json security;       // see SecurityTally::summary()
};

AgentOutcome run_agent(ChatModel& model, Executor& executor, Transcript& transcript, const AgentOptions& options);

}  // namespace sandcell::agent_service
