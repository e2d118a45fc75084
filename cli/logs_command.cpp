// `sandcell logs [RUN]`: the transcripts of agent runs.
#include <iomanip>
#include <iostream>

#include "commands.hpp"
#include "sandcell/agent_service/transcript.hpp"

namespace sandcell::cli {
namespace {

namespace svc = agent_service;

std::string one_line(std::string text, size_t max) {
  for (char& c : text)
    if (c == '\n' || c == '\t') c = ' ';
  return text.size() > max ? text.substr(0, max - 3) + "..." : text;
}

void print_record(const svc::Json& r) {
  std::string type = r.value("type", "");
  std::cout << r.value("ts", "") << " " << std::left << std::setw(16) << type << " ";
  if (type == "start") std::cout << r.value("task", "") << "  [" << r.value("model", "") << "]";
  else if (type == "model_reply") std::cout << one_line(r.value("text", ""), 200) << (r["tool_calls"].empty() ? "" : "  +" + std::to_string(r["tool_calls"].size()) + " tool call(s)");
  else if (type == "tool_call") std::cout << r.value("name", "") << " " << one_line(r.value("arguments", ""), 200);
  else if (type == "tool_result" || type == "code_block") std::cout << one_line(r.value("content", r.value("code", "")), 200);
  else if (type == "final") std::cout << r.value("answer", "");
  else {
    svc::Json rest = r;
    rest.erase("ts");
    rest.erase("type");
    std::cout << rest.dump();
  }
  std::cout << "\n";
}

int show_logs(const std::string& root, const std::string& run, bool json) {
  if (run.empty()) {
    for (const auto& s : svc::list_transcripts(root))
      std::cout << s.run_id << "  " << s.started << "  " << std::left << std::setw(12) << s.status << one_line(s.task, 60) << "\n";
    return 0;
  }
  for (const svc::Json& r : svc::read_transcript(root, run)) {
    if (json) std::cout << r.dump() << "\n";
    else print_record(r);
  }
  return 0;
}

}  // namespace

void add_logs_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* cmd = app.add_subcommand("logs", "List agent runs, or show the transcript of one");
  auto run = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  cmd->add_option("run", *run, "Run id (from `sandcell logs`)");
  cmd->add_flag("--json", *json, "Print the transcript's JSON lines as they are stored");
  cmd->footer("Examples:\n  sandcell logs\n  sandcell logs 20261202-141500-3fa9c2\n  sandcell logs --json RUN | jq 'select(.type==\"tool_result\")'");
  cmd->callback([&action, run, json, globals] {
    action = [run, json, globals] { return show_logs(globals->store_root(), *run, *json); };
  });
}

}  // namespace sandcell::cli
