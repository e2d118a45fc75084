#include "agent/compact_result.hpp"

namespace sandcell::agent_service {
namespace {

std::string text_field(const Json& object, const char* key) {
  return object.contains(key) && object[key].is_string() ? object[key].get<std::string>() : "";
}

// Events a model should know about: it may have tried something the sandbox denies.
void add_events(const Json& report, Json& out) {
  if (!report.is_object() || !report.contains("events") || !report["events"].is_object()) return;
  const Json& events = report["events"];
  for (const char* key : {"denied_syscalls", "blocked_connections"})
    if (events.contains(key) && events[key].is_array() && !events[key].empty()) out[key] = events[key];
}

}  // namespace

std::string head_and_tail(std::string_view text, size_t keep) {
  if (text.size() <= keep) return std::string(text);
  size_t half = keep / 2;
  return std::string(text.substr(0, half)) + "\n...[" + std::to_string(text.size() - 2 * half) +
         " bytes cut]...\n" + std::string(text.substr(text.size() - half));
}

Json compact_result(const Json& result, size_t keep_output) {
  Json out{{"status", result.value("status", Json("error"))}};
  if (result.contains("exit_code")) out["exit_code"] = result["exit_code"];
  if (result.contains("error") && result["error"].is_object()) out["error"] = result["error"];
  for (const char* stream : {"stdout", "stderr"}) {
    std::string text = text_field(result, stream);
    if (!text.empty()) out[stream] = head_and_tail(text, keep_output);
  }
  if (result.contains("artifacts") && result["artifacts"].is_array() && !result["artifacts"].empty()) {
    out["artifacts"] = Json::array();
    for (const Json& a : result["artifacts"])
      if (a.is_object())
        out["artifacts"].push_back({{"path", a.value("path", "")}, {"mime", a.value("mime", "")}, {"size", a.value("size", 0)}});
  }
  if (result.contains("report")) {
    if (result["report"].is_array())
      for (const Json& r : result["report"]) add_events(r, out);
    else add_events(result["report"], out);
  }
  // A pooled run is as isolated as a cold one; the client (MCP's run_code) may still want to know.
  if (result.contains("report") && result["report"].is_object() && result["report"].value("pooled", false))
    out["pooled"] = true;
  return out;
}

Json without_payloads(Json result) {
  for (const char* list : {"artifacts", "files"}) {
    if (!result.contains(list) || !result[list].is_array()) continue;
    for (Json& item : result[list])
      if (item.is_object() && item.contains("base64") && item["base64"].is_string()) {
        item["base64_bytes"] = item["base64"].get<std::string>().size();
        item.erase("base64");
      }
  }
  return result;
}

}  // namespace sandcell::agent_service
