// Sessions on disk: <dir>/<id>/{workspace/, session.json, lock}. last_used is the mtime of
// session.json (touched by every call), so expiry needs no clock of its own.
#include "sandcell/agent/sessions.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/runtime/error.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::agent {
namespace {

namespace fs = std::filesystem;
using runtime::UniqueFd;

int64_t now_s() { return static_cast<int64_t>(time(nullptr)); }

int64_t mtime_s(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mtim.tv_sec : 0;
}

uint64_t tree_bytes(const std::string& dir) {
  uint64_t bytes = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end; it != end;
       it.increment(ec)) {
    if (ec) break;
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) bytes += it->file_size(ec);
  }
  return bytes;
}

UniqueFd lock_file(const std::string& path, bool wait) {
  UniqueFd fd(open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw Error(errno, "open " + path);
  if (flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB)) != 0) {
    if (!wait && errno == EWOULDBLOCK) return {};
    throw Error(errno, "lock " + path);
  }
  return fd;
}

void write_meta(const std::string& path, const nlohmann::json& meta) {
  std::string tmp = path + ".tmp";
  std::ofstream(tmp) << meta.dump() << "\n";
  check(rename(tmp.c_str(), path.c_str()), "rename " + tmp);
}

}  // namespace

SessionStore::SessionStore(std::string dir, std::chrono::seconds ttl) : dir_(std::move(dir)), ttl_(ttl) {}

void SessionStore::check_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64 && id[0] != '.' &&
            id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == std::string::npos;
  if (!ok) throw Error::invalid("session ID '" + id + "' must be 1-64 of A-Z a-z 0-9 _ . - (not starting with '.')");
}

SessionLease SessionStore::open(const std::string& id, const std::string& skill) {
  check_id(id);
  std::string dir = dir_ + "/" + id;
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0700);  // workspaces may hold what one user's code wrote: not for others
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + dir);
  UniqueFd lock = lock_file(dir + "/lock", true);
  std::string meta_path = dir + "/session.json";
  nlohmann::json meta = {{"id", id}, {"skill", skill}, {"created", now_s()}};
  if (std::ifstream in(meta_path); in) {
    try {
      meta = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception&) {
    }  // rewritten below
  }
  write_meta(meta_path, meta);  // also the last_used stamp (mtime)
  if (mkdir((dir + "/workspace").c_str(), 0755) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + dir + "/workspace");
  return SessionLease(dir + "/workspace", std::move(lock));
}

std::vector<SessionInfo> SessionStore::list() const {
  std::vector<SessionInfo> sessions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string meta_path = entry.path().string() + "/session.json";
    SessionInfo s{.id = entry.path().filename().string()};
    if (std::ifstream in(meta_path); in) {
      try {
        auto meta = nlohmann::json::parse(in);
        s.skill = meta.value("skill", "");
        s.created = meta.value("created", int64_t{0});
      } catch (const nlohmann::json::exception&) {
      }
    }
    s.last_used = mtime_s(meta_path);
    s.expires = s.last_used + ttl_.count();
    s.bytes = tree_bytes(entry.path().string() + "/workspace");
    sessions.push_back(s);
  }
  std::sort(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) { return a.id < b.id; });
  return sessions;
}

void SessionStore::remove(const std::string& id) {
  check_id(id);
  std::string dir = dir_ + "/" + id;
  if (!fs::is_directory(dir)) throw Error::invalid("no session '" + id + "' (see sandcell sessions list)");
  UniqueFd lock = lock_file(dir + "/lock", true);  // waits for a call that uses it
  fs::remove_all(dir);  // never follows symlinks the code planted: it removes them
}

std::vector<std::string> SessionStore::expire() {
  std::vector<std::string> removed;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string dir = entry.path().string();
    // The directory's own mtime covers a session being created right now (no session.json yet).
    auto idle = [&] { return now_s() - std::max(mtime_s(dir + "/session.json"), mtime_s(dir)) > ttl_.count(); };
    if (!idle()) continue;
    UniqueFd lock = lock_file(dir + "/lock", false);
    if (!lock || !idle()) continue;  // in use, or used while we took the lock
    fs::remove_all(dir, ec);
    removed.push_back(entry.path().filename().string());
  }
  return removed;
}

std::string resolve_sessions_dir(const std::string& flag, const std::string& store_root) {
  if (!flag.empty()) return flag;
  if (const char* env = getenv("SANDCELL_SESSIONS"); env && *env) return env;
  return store_root + "/sessions";
}

std::chrono::seconds resolve_session_ttl(const std::optional<double>& flag) {
  if (flag) return std::chrono::seconds(static_cast<int64_t>(*flag));
  if (const char* env = getenv("SANDCELL_SESSION_TTL"); env && *env)
    return std::chrono::seconds(static_cast<int64_t>(runtime::parse_positive_number(env, "$SANDCELL_SESSION_TTL")));
  return std::chrono::hours(1);
}

}  // namespace sandcell::agent
