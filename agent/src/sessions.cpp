// Sessions on disk: <dir>/<id>/{disk.img, session.json, lock} (or workspace/ without a disk).
// last_used is the mtime of session.json (touched by every call), so expiry needs no clock of its
// own.
#include "sandcell/agent/sessions.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/spec.hpp"
#include "sandcell/base/workspace_disk.hpp"

namespace sandcell::agent {
namespace {

namespace fs = std::filesystem;
using runtime::UniqueFd;

int64_t now_s() { return static_cast<int64_t>(time(nullptr)); }

int64_t mtime_s(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? st.st_mtim.tv_sec : 0;
}

// Bytes of the regular files under `dir`, at any depth. By fd, one directory open at a time
// (".." to come back up), so neither PATH_MAX nor the fd limit stops it: the code decides how
// deep its workspace is, and a walk by path gave up at the first name too long and
// under-reported.
uint64_t tree_bytes(const std::string& dir) {
  struct Level {
    std::vector<std::string> subdirs;
  };
  UniqueFd cur(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!cur) return 0;
  uint64_t bytes = 0;
  std::vector<Level> stack;
  auto read_level = [&](int fd) {
    Level level;
    UniqueFd own(dup(fd));
    DIR* d = own ? fdopendir(own.get()) : nullptr;
    if (!d) return level;
    own.release();
    while (dirent* e = readdir(d)) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      struct stat st;
      if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode)) bytes += static_cast<uint64_t>(st.st_size);
      else if (S_ISDIR(st.st_mode)) level.subdirs.emplace_back(e->d_name);
    }
    closedir(d);
    return level;
  };
  stack.push_back(read_level(cur.get()));
  while (!stack.empty()) {
    if (stack.back().subdirs.empty()) {
      stack.pop_back();
      if (!stack.empty()) cur = UniqueFd(openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!cur) break;
      continue;
    }
    std::string name = std::move(stack.back().subdirs.back());
    stack.back().subdirs.pop_back();
    UniqueFd sub(openat(cur.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) continue;
    cur = std::move(sub);
    stack.push_back(read_level(cur.get()));
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

// Removes a session directory whose lock the caller holds. A disk still mounted there belongs to
// a call that died (a live one holds the lock): unmounted first, or remove_all would empty it
// through the mount and fail on the mount point.
void remove_session_dir(const std::string& dir) {
  umount2((dir + "/disk").c_str(), MNT_DETACH);  // EINVAL when not mounted: nothing to do
  std::error_code ec;
  fs::remove_all(dir, ec);  // never follows symlinks the code planted: it removes them
}

uint64_t bound_of(const std::string& dir) {
  struct stat st;
  return stat((dir + "/disk.img").c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

}  // namespace

SessionLease::SessionLease(std::string workspace, UniqueFd lock,
                           std::unique_ptr<WorkspaceDisk> disk)
    : workspace_(std::move(workspace)), lock_(std::move(lock)), disk_(std::move(disk)) {}
SessionLease::SessionLease(SessionLease&&) noexcept = default;
SessionLease::~SessionLease() {
  disk_.reset();
}

SessionStore::SessionStore(std::string dir, std::chrono::seconds ttl, SessionBounds bounds)
    : dir_(std::move(dir)), ttl_(ttl), bounds_(bounds) {}

// Before a new session: the least recently used idle sessions go until the new one fits the
// count and the bytes; refused when the sessions in use alone leave no room.
void SessionStore::make_room(const std::string& id, uint64_t disk_bytes) {
  if (disk_bytes > bounds_.max_total_bytes)
    throw Error::invalid("a session of " + std::to_string(disk_bytes) +
                         " bytes is over --sessions-max-bytes " +
                         std::to_string(bounds_.max_total_bytes));
  std::vector<SessionInfo> others;
  for (SessionInfo& s : list())
    if (s.id != id) others.push_back(std::move(s));
  std::sort(others.begin(), others.end(),
            [](const auto& a, const auto& b) { return a.last_used < b.last_used; });
  uint64_t total = disk_bytes;
  for (const SessionInfo& s : others) total += s.disk_bytes;
  size_t count = others.size() + 1;
  for (const SessionInfo& s : others) {
    if (count <= bounds_.max_sessions && total <= bounds_.max_total_bytes) return;
    std::string dir = dir_ + "/" + s.id;
    UniqueFd lock = lock_file(dir + "/lock", false);
    if (!lock) continue;  // in use
    remove_session_dir(dir);
    --count;
    total -= s.disk_bytes;
  }
  if (count > bounds_.max_sessions || total > bounds_.max_total_bytes)
    throw Error::invalid("no room for session '" + id + "': the sessions in use hold " +
                         std::to_string(count - 1) + " sessions and " +
                         std::to_string(total - disk_bytes) + " bytes (--sessions-max " +
                         std::to_string(bounds_.max_sessions) + ", --sessions-max-bytes " +
                         std::to_string(bounds_.max_total_bytes) + ")");
}

void SessionStore::check_id(const std::string& id) {
  // Not starting with '-': an ID is a positional argument of `sandcell sessions rm` and of
  // whatever else a front end runs, where "-h" would be an option. Not with '.': a directory.
  constexpr std::string_view kFirst = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_";
  bool ok = !id.empty() && id.size() <= 64 && kFirst.find(id[0]) != std::string_view::npos &&
            id.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") == std::string::npos;
  if (!ok)
    throw Error::invalid("session ID '" + id + "' must be 1-64 of A-Z a-z 0-9 _ . - (starting with a letter, digit or _)");
}

SessionLease SessionStore::open(const std::string& id, const std::string& skill,
                                std::optional<uint64_t> disk_bytes,
                                const std::string& disk_templates) {
  check_id(id);
  std::string dir = dir_ + "/" + id;
  fs::create_directories(dir_);
  chmod(dir_.c_str(), 0700);  // workspaces may hold what one user's code wrote: not for others
  unmount_stale_disks(dir_);
  bool is_new = !fs::exists(dir);
  if (is_new) make_room(id, disk_bytes.value_or(0));
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + dir);
  UniqueFd lock = lock_file(dir + "/lock", true);
  std::string meta_path = dir + "/session.json";
  nlohmann::json meta = {{"id", id}, {"skill", skill}, {"created", now_s()}};
  if (std::ifstream in(meta_path); in) {
    try {
      meta = parse_bounded_json(in);
    } catch (const nlohmann::json::exception&) {
    }  // rewritten below
  }
  write_meta(meta_path, meta);  // also the last_used stamp (mtime)
  // A session keeps what it was made with: a disk, or (made before disk bounds, or where none can
  // be mounted) a plain directory.
  if (disk_bytes && (is_new || fs::exists(dir + "/disk.img"))) {
    auto disk = WorkspaceDisk::session(disk_templates, dir + "/disk.img", dir + "/disk", *disk_bytes);
    std::string workspace = disk->workspace();
    return SessionLease(workspace, std::move(lock), std::move(disk));
  }
  if (mkdir((dir + "/workspace").c_str(), 0755) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + dir + "/workspace");
  return SessionLease(dir + "/workspace", std::move(lock), nullptr);
}

std::vector<SessionInfo> SessionStore::list() const {
  std::vector<SessionInfo> sessions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string meta_path = entry.path().string() + "/session.json";
    SessionInfo s{.id = entry.path().filename().string()};
    if (std::ifstream in(meta_path); in) {
      try {
        auto meta = parse_bounded_json(in);
        s.skill = meta.value("skill", "");
        s.created = meta.value("created", int64_t{0});
      } catch (const nlohmann::json::exception&) {
      }
    }
    s.last_used = mtime_s(meta_path);
    s.expires = s.last_used + ttl_.count();
    s.disk_bytes = bound_of(entry.path().string());
    s.bytes = s.disk_bytes ? allocated_bytes(entry.path().string() + "/disk.img")
                           : tree_bytes(entry.path().string() + "/workspace");
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
  remove_session_dir(dir);
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
    remove_session_dir(dir);
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
