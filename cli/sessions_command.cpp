// `sandcell sessions list | rm ID...`: workspaces kept across `sandcell code --session` calls.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "sandcell/agent/sessions.hpp"

namespace sandcell::cli {
namespace {

struct SessionsFlags {
  std::string sessions_dir;
  std::optional<double> ttl;
  std::vector<std::string> ids;
  bool json = false;
};

agent::SessionStore open_store(const SessionsFlags& f, const GlobalOptions& g) {
  return agent::SessionStore(agent::resolve_sessions_dir(f.sessions_dir, g.store_root()),
                             agent::resolve_session_ttl(f.ttl));
}

int list(const SessionsFlags& f, const GlobalOptions& g) {
  agent::SessionStore store = open_store(f, g);
  store.expire();
  auto sessions = store.list();
  if (f.json) {
    nlohmann::json all = nlohmann::json::array();
    for (const auto& s : sessions)
      all.push_back(
          {{"id", s.id},
           {"skill", s.skill},
           {"created", s.created},
           {"last_used", s.last_used},
           {"expires", s.expires},
           {"bytes", s.bytes},
           {"disk_bytes", s.disk_bytes ? nlohmann::json(s.disk_bytes) : nlohmann::json(nullptr)}});
    std::cout << all.dump(2) << std::endl;
    return 0;
  }
  std::cout << std::left << std::setw(24) << "ID" << std::setw(10) << "SKILL" << std::setw(14)
            << "BYTES" << std::setw(14) << "DISK LIMIT"
            << "IDLE EXPIRES IN\n";
  int64_t now = static_cast<int64_t>(time(nullptr));
  for (const auto& s : sessions)
    std::cout << std::setw(24) << s.id << std::setw(10) << s.skill << std::setw(14) << s.bytes
              << std::setw(14) << (s.disk_bytes ? std::to_string(s.disk_bytes) : "none")
              << (s.expires - now) << " s\n";
  return 0;
}

int remove(const SessionsFlags& f, const GlobalOptions& g) {
  agent::SessionStore store = open_store(f, g);
  for (const std::string& id : f.ids) {
    store.remove(id);
    std::cout << id << "\n";
  }
  return 0;
}

}  // namespace

void add_sessions_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<SessionsFlags>();
  auto* cmd = app.add_subcommand("sessions", "Sessions of `sandcell code --session ID`: list, remove");
  cmd->require_subcommand(1);
  cmd->add_option("--sessions-dir", f->sessions_dir, "Sessions directory [$SANDCELL_SESSIONS, ROOT/sessions]");
  cmd->add_option("--session-ttl", f->ttl, "Idle seconds after which a session is removed [$SANDCELL_SESSION_TTL, 3600]");
  cmd->footer("Examples:\n  sandcell sessions list --json\n  sandcell sessions rm s1\n"
              "Idle sessions are removed by `sessions list` and by every `code --session` call.");
  auto* ls = cmd->add_subcommand("list", "List sessions (removing expired ones first)");
  ls->add_flag("--json", f->json, "JSON: [{id, skill, created, last_used, expires, bytes}]");
  ls->callback([&action, f, globals] { action = [f, globals] { return list(*f, *globals); }; });
  auto* rm = cmd->add_subcommand("rm", "Remove sessions and their workspaces");
  rm->add_option("ids", f->ids, "Session IDs")->required();
  rm->callback([&action, f, globals] { action = [f, globals] { return remove(*f, *globals); }; });
}

}  // namespace sandcell::cli
