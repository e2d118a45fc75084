#pragma once
// Sessions: a workspace kept across `sandcell code --session ID` calls, under
// <sessions dir>/<ID>/{workspace/, session.json, lock}. One call at a time holds a session
// (flock); sessions idle longer than the TTL are removed by the next sweep. A session's
// workspace is only ever bind-mounted into its own calls' sandboxes.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::agent {

struct SessionInfo {
  std::string id{};
  std::string skill{};       // of the call that created it
  int64_t created = 0;     // unix seconds
  int64_t last_used = 0;
  uint64_t bytes = 0;      // size of its workspace
  int64_t expires = 0;     // last_used + TTL
};

// A session held for one call: the workspace path and the lock.
class SessionLease {
 public:
  SessionLease(std::string workspace, runtime::UniqueFd lock)
      : workspace_(std::move(workspace)), lock_(std::move(lock)) {}
  const std::string& workspace() const { return workspace_; }

 private:
  std::string workspace_;
  runtime::UniqueFd lock_;
};

class SessionStore {
 public:
  // ttl: idle time after which a session is removed.
  SessionStore(std::string dir, std::chrono::seconds ttl);

  // Session IDs: 1-64 of [A-Za-z0-9_.-], starting with [A-Za-z0-9_] (never '-' or '.').
  // Throws Error::invalid.
  static void check_id(const std::string& id);

  // Creates the session on first use; waits while another call holds it.
  SessionLease open(const std::string& id, const std::string& skill);
  std::vector<SessionInfo> list() const;
  // Throws Error::invalid when there is no such session.
  void remove(const std::string& id);
  // Removes idle sessions (never one in use). Returns their IDs.
  std::vector<std::string> expire();

 private:
  std::string dir_;
  std::chrono::seconds ttl_;
};

// --sessions-dir, else $SANDCELL_SESSIONS, else <store root>/sessions.
std::string resolve_sessions_dir(const std::string& flag, const std::string& store_root);
// --session-ttl, else $SANDCELL_SESSION_TTL (seconds), else one hour.
std::chrono::seconds resolve_session_ttl(const std::optional<double>& flag);

}  // namespace sandcell::agent
