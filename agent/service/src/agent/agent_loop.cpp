#include <chrono>

#include "agent/agent_tools.hpp"
#include "agent/code_blocks.hpp"
#include "agent/compact_result.hpp"
#include "sandcell/agent_service/agent.hpp"
#include "sandcell/agent_service/security_summary.hpp"

namespace sandcell::agent_service {
namespace {

using Clock = std::chrono::steady_clock;

std::string system_prompt(const AgentOptions& o) {
  std::string common =
      "You solve the user's task by running code in sandcell, an isolated sandbox without internet access "
      "unless allowed. Files in /workspace persist for the whole task; write files meant for the user "
      "(plots, data) under /workspace/out. The default language is " + o.skill + ". When a run fails, read the "
      "error class, message and line, fix the code and run it again. ";
  if (o.use_tools)
    return common + "Use the run_code tool to execute code. When you have the answer, reply with it in plain text "
                    "and no tool call.";
  return common + "To run code, put it in a fenced block such as ```" + o.skill + "\n...\n```; every block is run "
                  "and its result sent back to you. When you have the answer, reply without any code block.";
}

Json calls_json(const std::vector<ToolCall>& calls) {
  Json out = Json::array();
  for (const auto& c : calls) out.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  return out;
}

class AgentRun {
 public:
  AgentRun(ChatModel& model, Executor& executor, Transcript& transcript, const AgentOptions& options)
      : model_(model), executor_(executor), transcript_(transcript), options_(options),
        tools_(executor, {options.skill, "agent-" + transcript.run_id(), options.net, options.exec_timeout_s}),
        use_tools_(options.use_tools), deadline_(Clock::now() + options.max_time) {}

  AgentOutcome run() {
    transcript_.write("start", {{"task", options_.task}, {"model", model_.describe()}, {"skill", options_.skill},
                                {"session", "agent-" + transcript_.run_id()}, {"max_steps", options_.max_steps},
                                {"tools", use_tools_}});
    messages_.push_back({Role::user, options_.task, {}, "", false});
    outcome_.status = "max_steps";
    while (outcome_.steps < options_.max_steps) {
      if (Clock::now() >= deadline_) {
        outcome_.status = "time_budget";
        break;
      }
      if (!step()) break;
    }
    finish();
    return outcome_;
  }

 private:
  // One model call and the tools it asked for; false when the run is over.
  bool step() {
    ++outcome_.steps;
    ChatReply reply;
    try {
      reply = model_.complete(system_prompt(with_tools()), messages_, use_tools_ ? AgentTools::specs() : std::vector<ToolSpec>{});
    } catch (const ProviderError& e) {
      if (e.tools_unsupported && use_tools_) {
        // The server has no tool calling: go on with fenced code blocks.
        transcript_.write("fallback", {{"reason", e.what()}, {"mode", "code_blocks"}});
        use_tools_ = false;
        --outcome_.steps;
        return true;
      }
      outcome_.status = "model_error";
      outcome_.error = e.what();
      transcript_.write("model_error", {{"error", e.what()}, {"http_status", e.http_status}});
      return false;
    }
    transcript_.write("model_reply", {{"step", outcome_.steps}, {"text", reply.text}, {"tool_calls", calls_json(reply.tool_calls)},
                                      {"stop_reason", reply.stop_reason}, {"usage", reply.usage}});
    messages_.push_back({Role::assistant, reply.text, reply.tool_calls, "", false});
    return use_tools_ ? run_tool_calls(reply) : run_code_blocks(reply);
  }

  bool run_tool_calls(const ChatReply& reply) {
    if (reply.tool_calls.empty()) return answered(reply.text);
    for (const auto& call : reply.tool_calls) {
      transcript_.write("tool_call", {{"id", call.id}, {"name", call.name}, {"arguments", call.arguments}});
      ToolOutcome outcome = tools_.call(call.name, call.arguments);
      session_used_ = session_used_ || call.name != "list_skills";
      record(call.id, outcome);
      messages_.push_back({Role::tool, outcome.text, {}, call.id, outcome.is_error});
    }
    return true;
  }

  bool run_code_blocks(const ChatReply& reply) {
    auto blocks = extract_code_blocks(reply.text, options_.skill);
    if (blocks.empty()) return answered(reply.text);
    std::string feedback;
    for (size_t i = 0; i < blocks.size(); ++i) {
      transcript_.write("code_block", {{"index", i}, {"language", blocks[i].language}, {"code", blocks[i].code}});
      ToolOutcome outcome = tools_.run_code(blocks[i].language, blocks[i].code);
      session_used_ = true;
      record("block-" + std::to_string(i), outcome);
      feedback += "Result of code block " + std::to_string(i + 1) + " (" + blocks[i].language + "):\n" + outcome.text + "\n";
    }
    messages_.push_back({Role::user, feedback, {}, "", false});
    return true;
  }

  void record(const std::string& id, const ToolOutcome& outcome) {
    Json fields{{"id", id}, {"is_error", outcome.is_error}, {"content", outcome.text}};
    if (outcome.result) {
      ++outcome_.executions;
      security_.add(*outcome.result);
      fields["result"] = without_payloads(*outcome.result);
    }
    transcript_.write("tool_result", fields);
  }

  bool answered(const std::string& text) {
    outcome_.status = "answered";
    outcome_.answer = text;
    transcript_.write("final", {{"answer", text}});
    return false;
  }

  void finish() {
    outcome_.security = security_.summary();
    transcript_.write("security_summary", outcome_.security);
    if (session_used_ && !options_.keep_session) {
      try {
        executor_.remove_session("agent-" + transcript_.run_id());
      } catch (const std::exception& e) {
        transcript_.write("warning", {{"message", std::string("removing the session: ") + e.what()}});
      }
    }
    transcript_.write("end", {{"status", outcome_.status}, {"steps", outcome_.steps}, {"executions", outcome_.executions}});
  }

  AgentOptions with_tools() const {
    AgentOptions o = options_;
    o.use_tools = use_tools_;
    return o;
  }

  ChatModel& model_;
  Executor& executor_;
  Transcript& transcript_;
  const AgentOptions& options_;
  AgentTools tools_;
  bool use_tools_;
  bool session_used_ = false;
  Clock::time_point deadline_;
  std::vector<Message> messages_;
  SecurityTally security_;
  AgentOutcome outcome_;
};

}  // namespace

AgentOutcome run_agent(ChatModel& model, Executor& executor, Transcript& transcript, const AgentOptions& options) {
  return AgentRun(model, executor, transcript, options).run();
}

}  // namespace sandcell::agent_service
