#pragma once
// What the sandbox stopped, across every execution of one agent run (or server lifetime):
// denied syscalls by name, blocked connections, limits that ended a run.
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>

namespace sandcell::agent_service {

using Json = nlohmann::json;

class SecurityTally {
 public:
  // Adds one code result (its "status" and "report").
  void add(const Json& result);
  // {"executions", "denied_syscalls": [{name, count}], "blocked_connections": [{host, port,
  //  reason, count}], "limits_hit": [{limit, count}]}
  Json summary() const;
  // One line per kind, for a terminal.
  std::string text() const;

 private:
  void add_report(const Json& report);
  int executions_ = 0;
  std::map<std::string, long> denied_;
  std::map<std::tuple<std::string, long, std::string>, long> blocked_;
  std::map<std::string, long> limits_;
};

}  // namespace sandcell::agent_service
