#include "sandcell/agent_service/security_summary.hpp"

#include <set>

namespace sandcell::agent_service {
namespace {

// Statuses of the result record that mean a limit stopped the program (README: result record).
const std::set<std::string> kLimitStatuses = {"timeout_wall", "timeout_cpu", "oom", "pids_limit", "output_limit"};

}  // namespace

void SecurityTally::add(const Json& result) {
  if (!result.is_object()) return;
  ++executions_;
  std::string status = result.value("status", "");
  if (kLimitStatuses.count(status)) ++limits_[status];
  if (!result.contains("report")) return;
  const Json& report = result["report"];
  // A compiled skill may report its compile and its run separately.
  if (report.is_array())
    for (const Json& r : report) add_report(r);
  else add_report(report);
}

void SecurityTally::add_report(const Json& report) {
  if (!report.is_object() || !report.contains("events") || !report["events"].is_object()) return;
  const Json& events = report["events"];
  if (events.contains("denied_syscalls") && events["denied_syscalls"].is_array())
    for (const Json& d : events["denied_syscalls"])
      if (d.is_object()) denied_[d.value("name", "?")] += d.value("count", 1L);
  if (events.contains("blocked_connections") && events["blocked_connections"].is_array())
    for (const Json& b : events["blocked_connections"])
      if (b.is_object())
        ++blocked_[{b.value("host", "?"), b.value("port", 0L), b.value("reason", "")}];
}

Json SecurityTally::summary() const {
  Json s{{"executions", executions_},
         {"denied_syscalls", Json::array()},
         {"blocked_connections", Json::array()},
         {"limits_hit", Json::array()}};
  for (const auto& [name, count] : denied_) s["denied_syscalls"].push_back({{"name", name}, {"count", count}});
  for (const auto& [key, count] : blocked_) {
    const auto& [host, port, reason] = key;
    s["blocked_connections"].push_back({{"host", host}, {"port", port}, {"reason", reason}, {"count", count}});
  }
  for (const auto& [limit, count] : limits_) s["limits_hit"].push_back({{"limit", limit}, {"count", count}});
  return s;
}

std::string SecurityTally::text() const {
  std::string out = "security summary (" + std::to_string(executions_) + " executions):\n  denied syscalls: ";
  if (denied_.empty()) out += "none";
  for (const auto& [name, count] : denied_) out += name + " x" + std::to_string(count) + " ";
  out += "\n  blocked connections: ";
  if (blocked_.empty()) out += "none";
  for (const auto& [key, count] : blocked_)
    out += std::get<0>(key) + ":" + std::to_string(std::get<1>(key)) + " (" + std::get<2>(key) + ") x" +
           std::to_string(count) + " ";
  out += "\n  limits hit: ";
  if (limits_.empty()) out += "none";
  for (const auto& [limit, count] : limits_) out += limit + " x" + std::to_string(count) + " ";
  return out + "\n";
}

}  // namespace sandcell::agent_service
