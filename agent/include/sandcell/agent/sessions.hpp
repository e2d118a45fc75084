#pragma once
// Sessions: a workspace kept across `sandcell code --session ID` calls, under
// <sessions dir>/<ID>/{disk.img, session.json, lock}: the workspace is the directory "workspace"
// of the image's filesystem (sandcell/base/workspace_disk.hpp), mounted at <ID>/disk only while a call holds the
// session (<ID>/workspace/ where the host cannot mount one, or for a session made before). One call
// at a time holds a session (flock); sessions idle longer than the TTL are removed by the next
// sweep. A session's workspace is only ever bind-mounted into its own calls' sandboxes.
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell {
class WorkspaceDisk;
}

namespace sandcell::agent {

struct SessionInfo {
  std::string id{};
  std::string skill{};       // of the call that created it
  int64_t created = 0;     // unix seconds
  int64_t last_used = 0;
  uint64_t bytes = 0;       // what it takes on the host's disk (the image's allocated blocks)
  uint64_t disk_bytes = 0;  // its bound (the image's size); 0: unbounded
  int64_t expires = 0;     // last_used + TTL
};

// A session held for one call: the workspace path, its mounted disk and the lock.
class SessionLease {
 public:
  SessionLease(std::string workspace, runtime::UniqueFd lock, std::unique_ptr<WorkspaceDisk> disk);
  SessionLease(SessionLease&&) noexcept;
  ~SessionLease();  // unmounts, then lets go of the lock
  const std::string& workspace() const { return workspace_; }
  const WorkspaceDisk* disk() const { return disk_.get(); }

 private:
  std::string workspace_;
  runtime::UniqueFd lock_;
  std::unique_ptr<WorkspaceDisk> disk_;
};

// What all sessions together may hold (`--sessions-max`, `--sessions-max-bytes`). A new session
// that would pass either removes the least recently used idle sessions first; when those in use
// alone pass it, the call is refused. Bytes count each session's bound (its image's size), the
// most it can ever hold, so the sum stays within the bound whatever the sessions write.
struct SessionBounds {
  size_t max_sessions = 64;
  uint64_t max_total_bytes = 16ull << 30;
};

class SessionStore {
 public:
  // ttl: idle time after which a session is removed.
  SessionStore(std::string dir, std::chrono::seconds ttl, SessionBounds bounds = {});

  // Session IDs: 1-64 of [A-Za-z0-9_.-], starting with [A-Za-z0-9_] (never '-' or '.').
  // Throws Error::invalid.
  static void check_id(const std::string& id);

  // Creates the session on first use (with a disk of disk_bytes, a copy of its template in
  // disk_templates, unless unset: a plain directory); waits while another call holds it.
  SessionLease open(const std::string& id, const std::string& skill,
                    std::optional<uint64_t> disk_bytes, const std::string& disk_templates);
  std::vector<SessionInfo> list() const;
  // Throws Error::invalid when there is no such session.
  void remove(const std::string& id);
  // Removes idle sessions (never one in use). Returns their IDs.
  std::vector<std::string> expire();

 private:
  std::string dir_;
  std::chrono::seconds ttl_;
  SessionBounds bounds_;

  void make_room(const std::string& id, uint64_t disk_bytes);
};

// --sessions-dir, else $SANDCELL_SESSIONS, else <store root>/sessions.
std::string resolve_sessions_dir(const std::string& flag, const std::string& store_root);
// --session-ttl, else $SANDCELL_SESSION_TTL (seconds), else one hour.
std::chrono::seconds resolve_session_ttl(const std::optional<double>& flag);

}  // namespace sandcell::agent
