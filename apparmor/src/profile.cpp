#include "sandcell/apparmor/profile.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

#include "sandcell/base/error.hpp"
#include "sandcell/base/shipped_data.hpp"

extern char** environ;

namespace sandcell::apparmor {

// Generated from apparmor/profiles/ (apparmor/CMakeLists.txt).
std::optional<std::string_view> embedded_template(std::string_view file_name);

namespace {

constexpr std::string_view kOpen = "{{";
constexpr std::string_view kClose = "}}";

std::string placeholder(std::string_view key) {
  return std::string(kOpen) + std::string(key) + std::string(kClose);
}

// A value lands inside rules (`profile NAME`, `peer=NAME`): a comma, brace, glob character or
// newline in it would end the rule and start one of the caller's choosing.
bool is_plain_profile_name(std::string_view value) {
  if (value.empty()) return false;
  for (char c : value) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("._-+:/").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

const std::string& value_for(const std::map<std::string, std::string>& values,
                             const std::string& key) {
  auto it = values.find(key);
  if (it == values.end())
    throw Error::invalid("AppArmor profile template: placeholder " + placeholder(key) +
                         " is not filled");
  if (!is_plain_profile_name(it->second))
    throw Error::invalid("AppArmor profile template: value for " + placeholder(key) + " (\"" +
                         it->second + "\") is not a plain profile name");
  return it->second;
}

void require_all_used(const std::map<std::string, std::string>& values,
                      const std::set<std::string>& used) {
  for (const auto& [key, value] : values)
    if (!used.contains(key))
      throw Error::invalid("AppArmor profile template: unknown placeholder " + placeholder(key) +
                           " (the template does not use it)");
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Skips `audit`, `deny`, `allow` qualifiers: `deny userns,` is as unparseable for AppArmor 3.
std::string_view rule_body(std::string_view line) {
  for (;;) {
    line.remove_prefix(std::min(line.find_first_not_of(" \t"), line.size()));
    bool qualified = false;
    for (std::string_view q : {"audit ", "deny ", "allow "})
      if (line.starts_with(q)) {
        line.remove_prefix(q.size());
        qualified = true;
      }
    if (!qualified) return line;
  }
}

bool is_userns_rule(std::string_view line) {
  std::string_view body = rule_body(line);
  constexpr std::string_view kRule = "userns";
  return body.starts_with(kRule) && body.size() > kRule.size() &&
         (body[kRule.size()] == ',' || body[kRule.size()] == ' ' || body[kRule.size()] == '\t');
}

// Closes the descriptors it holds when it goes out of scope, on the error paths too.
struct OwnedFds {
  std::array<int, 2> fd{-1, -1};
  void close_one(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
  ~OwnedFds() {
    close_one(0);
    close_one(1);
  }
};

std::string find_parser() {
  for (const char* path : {"/sbin/apparmor_parser", "/usr/sbin/apparmor_parser"})
    if (access(path, X_OK) == 0) return path;
  throw Error(ENOENT,
              "load AppArmor profile: apparmor_parser not found in /sbin or /usr/sbin "
              "(install the apparmor package)");
}

pid_t spawn_parser(const std::string& parser, int stdin_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  const char* argv[] = {parser.c_str(), "-r", nullptr};
  pid_t pid = -1;
  int err = posix_spawn(&pid, parser.c_str(), &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(err, "spawn " + parser);
  return pid;
}

// Returns 0 or the errno of the failed send. MSG_NOSIGNAL: a parser that exits early must turn
// into an error, not a SIGPIPE that kills the supervisor.
int send_all(int fd, std::string_view text) {
  while (!text.empty()) {
    ssize_t sent = send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent < 0) return errno;
    text.remove_prefix(static_cast<size_t>(sent));
  }
  return 0;
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(errno, "wait for apparmor_parser");
  return status;
}

}  // namespace

std::string render_profile(std::string_view template_text,
                           const std::map<std::string, std::string>& values) {
  std::string out;
  std::set<std::string> used;
  size_t pos = 0;
  for (size_t open; (open = template_text.find(kOpen, pos)) != std::string_view::npos;) {
    size_t close = template_text.find(kClose, open + kOpen.size());
    if (close == std::string_view::npos)
      throw Error::invalid("AppArmor profile template: unterminated placeholder at offset " +
                           std::to_string(open));
    std::string key(template_text.substr(open + kOpen.size(), close - open - kOpen.size()));
    out.append(template_text.substr(pos, open - pos)).append(value_for(values, key));
    used.insert(std::move(key));
    pos = close + kClose.size();
  }
  out.append(template_text.substr(pos));
  require_all_used(values, used);
  return out;
}

std::string load_profile_template(const std::string& name) {
  // A name, not a path: the caller may pass user input, and profiles/ is the only place to read.
  if (name.empty() || name.find('/') != std::string::npos || name.starts_with('.'))
    throw Error::invalid("AppArmor profile template name \"" + name + "\" is not a plain name");
  // An installed tree's copy, else the source tree's (base/shipped_data.hpp).
  const std::vector<std::string> dirs =
      runtime::shipped_data_candidates("apparmor", SANDCELL_APPARMOR_PROFILE_DIR);
  std::string tried;
  for (const std::string& dir : dirs) {
    if (auto text = read_file(dir + "/" + name)) return *text;
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  // No file: the copy compiled in (cmake/embed-files.cmake), so a binary copied alone runs.
  if (auto text = embedded_template(name)) return std::string(*text);
  throw Error(ENOENT, "AppArmor profile template " + name + " in none of " + tried + " and not compiled in");
}

std::string default_profile() {
  return render_profile(load_profile_template(kDefaultProfile), {{"name", kDefaultProfile}, {"sandcell_binary", "sandcell"}});
}

std::string binary_profile(const std::string& bin_dir) {
  if (!bin_dir.starts_with('/'))
    throw Error::invalid("AppArmor profile: " + bin_dir + " is not an absolute directory");
  std::string dir = bin_dir.size() > 1 && bin_dir.ends_with('/') ? bin_dir.substr(0, bin_dir.size() - 1) : bin_dir;
  return render_profile(load_profile_template("sandcell-binary"), {{"bin_dir", dir}});
}

std::string strip_userns_rule(std::string_view profile) {
  std::string out;
  out.reserve(profile.size());
  while (!profile.empty()) {
    size_t end = profile.find('\n');
    size_t take = end == std::string_view::npos ? profile.size() : end + 1;
    std::string_view line = profile.substr(0, take);
    if (!is_userns_rule(line)) out.append(line);
    profile.remove_prefix(take);
  }
  return out;
}

void load_profile(const std::string& text) {
  if (access("/sys/kernel/security/apparmor", F_OK) != 0)
    throw Error(ENOSYS,
                "load AppArmor profile: this kernel has no AppArmor "
                "(/sys/kernel/security/apparmor is missing)");
  const std::string parser = find_parser();
  // A socket rather than a pipe, for send(MSG_NOSIGNAL); apparmor_parser reads it as stdin.
  OwnedFds feed;
  check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, feed.fd.data()), "socketpair");
  pid_t pid = spawn_parser(parser, feed.fd[1]);
  feed.close_one(1);
  int send_err = send_all(feed.fd[0], text);
  feed.close_one(0);  // end of input: the parser starts compiling
  int status = wait_for(pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error(EINVAL, parser + " -r exited with status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                            " (its reasons are on stderr)");
  if (send_err != 0) throw Error(send_err, "feed the profile to " + parser);
}

namespace {

// CVE-2025-52881 class: "/proc/thread-self/attr/..." by name is whatever a mount or symlink made
// of it; a volume file there took the write and left the program unconfined. Opened beneath the
// caller's checked thread-self directory, with no symlink and no mount crossing on the way, and
// the file itself checked to be procfs.
int open_attr_exec(int thread_self) {
  for (const char* name : {"attr/apparmor/exec", "attr/exec"}) {
    open_how how{};
    how.flags = O_WRONLY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV | RESOLVE_NO_MAGICLINKS;
    int fd = static_cast<int>(syscall(SYS_openat2, thread_self, name, &how, sizeof how));
    if (fd < 0 && errno == ENOENT) continue;  // older kernels: only the shared attr/exec
    if (fd < 0) return -1;
    struct statfs fs{};
    if (fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) return fd;
    close(fd);
    errno = EXDEV;
    return -1;
  }
  return -1;
}

}  // namespace

int change_onexec(const char* profile, int thread_self) noexcept {
  // The same request libapparmor's aa_change_onexec writes, without its allocations.
  char request[1024];
  size_t name_len = strlen(profile);
  if (name_len == 0 || name_len + 6 > sizeof request) {
    errno = name_len == 0 ? EINVAL : ENAMETOOLONG;
    return -1;
  }
  memcpy(request, "exec ", 5);
  memcpy(request + 5, profile, name_len + 1);
  // Kernels with LSM stacking have a per-LSM attr/apparmor/; older ones only the shared attr/exec,
  // which is AppArmor's when AppArmor is the major LSM.
  int fd = open_attr_exec(thread_self);
  if (fd < 0) return -1;
  ssize_t written = write(fd, request, name_len + 5);
  int write_errno = errno;
  close(fd);
  if (written == static_cast<ssize_t>(name_len + 5)) return 0;
  errno = written < 0 ? write_errno : EIO;
  return -1;
}

}  // namespace sandcell::apparmor
