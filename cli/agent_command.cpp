// `sandcell agent TASK`: a model solves TASK by running code in sandboxes (agent/service).
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "commands.hpp"
#include "request_ceiling_flags.hpp"
#include "sandcell/agent_service/agent.hpp"

namespace sandcell::cli {
namespace {

namespace svc = agent_service;

struct AgentFlags {
  svc::ProviderConfig provider;
  svc::AgentOptions agent;
  std::string config_file, sandcell_bin;
  agent::RequestCeilings ceilings;
  WorkspaceFlags workspace;
  int max_time_s = 600;
  bool no_tools = false, json = false;
};

// One line on stderr per step, so a user sees the run progress.
void print_progress(const svc::Json& r) {
  std::string type = r.value("type", "");
  if (type == "tool_call") {
    std::cerr << "sandcell agent: " << r.value("name", "") << " " << r.value("arguments", "").substr(0, 120) << "\n";
  } else if (type == "tool_result" && r.contains("result")) {
    const auto& result = r["result"];
    std::cerr << "sandcell agent:   -> " << result.value("status", svc::Json("?")).dump();
    if (result.contains("error") && result["error"].is_object()) std::cerr << " " << result["error"].value("class", "");
    std::cerr << "\n";
  } else if (type == "fallback" || type == "model_error") {
    std::cerr << "sandcell agent: " << type << ": " << r.value("reason", r.value("error", "")) << "\n";
  }
}

int run_agent_command(AgentFlags& f, const Globals& globals) {
  agent::check_ceilings(f.ceilings);
  check_workspace_flags(f.workspace, f.ceilings);
  std::string config = f.config_file;
  if (config.empty()) config = std::getenv("SANDCELL_AGENT_CONFIG") ? std::getenv("SANDCELL_AGENT_CONFIG") : globals->store_root() + "/agent.json";
  auto model = svc::make_chat_model(svc::resolve_provider_config(f.provider, config));
  auto executor =
      svc::make_subprocess_executor(executor_options(f.sandcell_bin, globals->root, f.ceilings, f.workspace));
  svc::Transcript transcript(globals->store_root(), svc::new_run_id());
  transcript.on_record(print_progress);
  f.agent.max_time = std::chrono::seconds(f.max_time_s);
  f.agent.use_tools = !f.no_tools;
  std::cerr << "sandcell agent: run " << transcript.run_id() << " with " << model->describe() << "\n";
  svc::AgentOutcome outcome = svc::run_agent(*model, *executor, transcript, f.agent);
  std::cerr << "sandcell agent: " << outcome.status << " after " << outcome.steps << " steps, "
            << outcome.executions << " executions; transcript " << transcript.path().string() << "\n";
  std::cerr << "security summary: " << outcome.security.dump() << "\n";
  if (f.json) {
    std::cout << svc::Json{{"run", transcript.run_id()}, {"status", outcome.status}, {"answer", outcome.answer},
                           {"error", outcome.error}, {"steps", outcome.steps}, {"executions", outcome.executions},
                           {"security", outcome.security}, {"transcript", transcript.path().string()}}
                     .dump(2)
              << "\n";
  } else if (!outcome.answer.empty()) {
    std::cout << outcome.answer << "\n";
  }
  if (outcome.status == "model_error") {
    std::cerr << "sandcell: " << outcome.error << "\n";
    return 125;
  }
  return outcome.status == "answered" ? 0 : 1;
}

}  // namespace

void add_agent_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* cmd = app.add_subcommand("agent", "Let a language model solve a task by writing code and running it in sandboxes");
  auto f = std::make_shared<AgentFlags>();
  cmd->add_option("task", f->agent.task, "What the model should do")->required();
  cmd->add_option("--provider", f->provider.provider, "openai (any OpenAI-compatible server) or anthropic [$SANDCELL_PROVIDER]")
      ->check(CLI::IsMember({"openai", "anthropic"}));
  cmd->add_option("--model", f->provider.model, "Model name [$OPENAI_MODEL / $ANTHROPIC_MODEL]");
  cmd->add_option("--base-url", f->provider.base_url,
                  "API base URL, e.g. http://localhost:8000/v1 for vLLM, http://localhost:11434/v1 for Ollama "
                  "[$OPENAI_BASE_URL / $ANTHROPIC_BASE_URL]");
  cmd->add_option("--config", f->config_file, "JSON config file {provider, model, base_url, timeout} [$SANDCELL_AGENT_CONFIG, ROOT/agent.json]");
  cmd->add_option("--skill", f->agent.skill, "Default language of the code")->capture_default_str();
  cmd->add_option("--max-steps", f->agent.max_steps, "Model calls at most")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-time", f->max_time_s, "Seconds for the whole run")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--net", f->agent.net, "Network policy of every execution (none, allow:HOSTS, full)");
  cmd->add_option("--timeout", f->agent.exec_timeout_s, "Seconds per execution (default: the skill's)");
  add_ceiling_flags(cmd, f->ceilings, true);
  add_workspace_flags(cmd, f->workspace);
  cmd->add_flag("--no-tools", f->no_tools, "The model has no tool calling: run its fenced code blocks instead");
  cmd->add_flag("--keep-session", f->agent.keep_session, "Keep the run's session (its /workspace) afterwards");
  cmd->add_flag("--json", f->json, "Print the outcome as JSON");
  cmd->add_option(
      "--sandcell-bin", f->sandcell_bin,
      "The sandcell executable that runs code [$SANDCELL_BIN, sandcell-images next to this one]");
  cmd->footer(
      "Examples:\n"
      "  OPENAI_API_KEY=... sandcell agent \"plot sin(x) and save it as out/sin.png\"\n"
      "  sandcell agent --base-url http://localhost:11434/v1 --model qwen2.5-coder --no-tools \"sum of primes below 1e6\"\n"
      "  ANTHROPIC_API_KEY=... sandcell agent --provider anthropic --model claude-sonnet-4-5 --net allow:pypi.org \"...\"\n"
      "The answer goes to stdout; progress, the transcript path and a security summary to stderr.\n"
      "Exit: 0 answered, 1 step or time budget used up, 125 provider or sandcell error.");
  cmd->callback([&action, f, globals, cmd] {
    // The model's requests are bounded by the ceilings; the operator's own --net and --timeout
    // raise them unless they were given too.
    if (!f->agent.net.empty() && cmd->count("--allowed-net") == 0) f->ceilings.net = f->agent.net;
    if (f->agent.exec_timeout_s > 0 && cmd->count("--max-timeout") == 0)
      f->ceilings.timeout = std::to_string(std::max(f->agent.exec_timeout_s, std::stoi(*f->ceilings.timeout)));
    action = [f, globals] { return run_agent_command(*f, globals); };
  });
}

}  // namespace sandcell::cli
