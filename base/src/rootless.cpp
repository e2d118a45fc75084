// Rootless mode: entering the user namespace an unprivileged sandcell works in, and the small
// facts the rest of the runtime asks about it.
#include "sandcell/base/rootless.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sched.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "sandcell/base/number.hpp"

extern char** environ;

namespace sandcell::runtime {
namespace {

std::string unavailable_reason;
constexpr const char* kNewuidmap = "/usr/bin/newuidmap";  // package uidmap
constexpr const char* kNewgidmap = "/usr/bin/newgidmap";

// Plain reads, no streams: rootless() reads /proc/self/uid_map on the way to every clone, and
// an ifstream and its stream parsing cost ~0.014 ms more there (phase marks).
std::string read_text(const std::string& path) {
  std::string text;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

std::string first_word_of(const std::string& text) {
  std::istringstream in(text);
  std::string word;
  in >> word;
  return word;
}

std::string first_word(const std::string& path) { return first_word_of(read_text(path)); }

// The lines of an id map ("inside outside count"), split into their words; lines of any other
// shape are left out.
std::vector<std::vector<std::string>> map_lines(std::string_view map_text) {
  std::vector<std::vector<std::string>> lines;
  while (!map_text.empty()) {
    size_t newline = map_text.find('\n');
    std::string_view line = map_text.substr(0, newline);
    map_text =
        newline == std::string_view::npos ? std::string_view() : map_text.substr(newline + 1);
    std::vector<std::string> fields;
    for (size_t start = line.find_first_not_of(" \t"); start != std::string_view::npos;) {
      size_t end = line.find_first_of(" \t", start);
      fields.emplace_back(line.substr(start, end - start));
      start = end == std::string_view::npos ? end : line.find_first_not_of(" \t", end);
    }
    if (fields.size() == 3) lines.push_back(std::move(fields));
  }
  return lines;
}

bool write_file(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  int saved = errno;
  close(fd);
  errno = saved;
  return ok;
}

// Starts `tool PID 0 OWN 1 1 START COUNT` (newuidmap(1), newgidmap(1)); -1 when it cannot.
pid_t start_id_tool(const char* tool, pid_t pid, unsigned long own, const SubIdRange& range) {
  std::vector<std::string> args = {tool, std::to_string(pid), "0", std::to_string(own), "1", "1",
                                   std::to_string(range.start), std::to_string(range.count)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t child = -1;
  return posix_spawn(&child, tool, nullptr, nullptr, argv.data(), environ) == 0 ? child : -1;
}

bool succeeded(pid_t child) {
  int status = 0;
  return child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// The helper runs outside the new namespace (newuidmap must), waits until the parent has
// unshared, maps it (both tools at once: each is a setuid exec of a few ms), and exits 0 on success.
[[noreturn]] void map_with_tools(int ready_fd, pid_t target, uid_t uid, gid_t gid,
                                 const SubIdRange& uids, const SubIdRange& gids) {
  char byte = 0;
  if (read(ready_fd, &byte, 1) != 1) _exit(2);
  pid_t uid_tool = start_id_tool(kNewuidmap, target, uid, uids);
  pid_t gid_tool = start_id_tool(kNewgidmap, target, gid, gids);
  bool uids_mapped = succeeded(uid_tool);
  bool gids_mapped = succeeded(gid_tool);
  _exit(uids_mapped && gids_mapped ? 0 : 3);
}

// Only the user's own ids: an unprivileged process may write exactly that, after giving up
// setgroups(2) (user_namespaces(7)).
bool map_single_id(uid_t uid, gid_t gid) {
  return write_file("/proc/self/setgroups", "deny") &&
         write_file("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1") &&
         write_file("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1");
}

std::optional<SubIdRange> own_range(const char* file, uid_t uid) {
  const passwd* pw = getpwuid(uid);
  return find_subid_range(read_text(file), pw != nullptr ? pw->pw_name : "", uid);
}

bool unshare_and_map(uid_t uid, gid_t gid) {
  auto uids = own_range("/etc/subuid", uid), gids = own_range("/etc/subgid", uid);
  bool tools = uids && gids && access(kNewuidmap, X_OK) == 0 && access(kNewgidmap, X_OK) == 0;
  int ready[2] = {-1, -1};
  pid_t helper = -1;
  if (tools && pipe2(ready, O_CLOEXEC) == 0) {
    pid_t target = getpid();
    helper = fork();
    if (helper == 0) {
      // Its copy of the write end closed, or a parent whose unshare failed (and closed its own)
      // would leave it waiting in read() for ever, and the parent in waitpid() with it.
      close(ready[1]);
      map_with_tools(ready[0], target, uid, gid, *uids, *gids);
    }
    close(ready[0]);
  }
  if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0) {
    unavailable_reason = userns_denied_message(errno, "unshare(CLONE_NEWUSER | CLONE_NEWNS)");
    if (helper > 0) {
      close(ready[1]);
      waitpid(helper, nullptr, 0);
    }
    return false;
  }
  int status = -1;
  if (helper > 0) {
    ssize_t ignored = write(ready[1], "u", 1);
    (void)ignored;
    close(ready[1]);
    waitpid(helper, &status, 0);
  }
  if (status == 0) return true;
  // No subordinate ids (or the tools failed, and said why on stderr): the user's own ids only.
  if (map_single_id(uid, gid)) return true;
  unavailable_reason = userns_denied_message(errno, "write the user namespace's uid_map/gid_map");
  return false;
}

}  // namespace

bool rootless() {
  static const bool value = geteuid() != 0 || !is_initial_id_map(read_text("/proc/self/uid_map"));
  return value;
}

bool rootless_single_id() {
  auto lines = map_lines(read_text("/proc/self/uid_map"));
  return rootless() && lines.size() == 1 && lines[0][2] == "1";
}

uid_t rootless_host_uid() {
  for (const auto& f : map_lines(read_text("/proc/self/uid_map")))
    if (f[0] == "0") return parse_number<uid_t>(f[1]).value_or(geteuid());
  return geteuid();
}

const std::string& rootless_unavailable() {
  return unavailable_reason;
}

void enter_rootless_namespace() {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (uid == 0 || !unshare_and_map(uid, gid)) return;
  // Ubuntu's AppArmor lets the unshare succeed, then moves the process to a profile that takes
  // every capability inside the namespace away.
  std::string label = first_word("/proc/self/attr/current");
  if (label.starts_with("unprivileged_userns"))
    unavailable_reason = userns_denied_message(EPERM, "user namespace confined by AppArmor profile " + label);
}

std::optional<SubIdRange> find_subid_range(std::string_view file_text, std::string_view user, uid_t id) {
  std::istringstream in{std::string(file_text)};
  const std::string id_text = std::to_string(id);
  for (std::string line; std::getline(in, line);) {
    size_t first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string_view owner = std::string_view(line).substr(0, first);
    if (owner.empty() || (owner != user && owner != id_text)) continue;
    auto start = parse_number<unsigned long>(std::string_view(line).substr(first + 1, second - first - 1));
    auto count = parse_number<unsigned long>(std::string_view(line).substr(second + 1));
    if (start && count && *count > 0) return SubIdRange{.start = *start, .count = *count};
  }
  return std::nullopt;
}

bool is_initial_id_map(std::string_view map_text) {
  auto lines = map_lines(map_text);
  return lines.size() == 1 && lines[0][0] == "0" && lines[0][1] == "0" && lines[0][2] == "4294967295";
}

std::string identity_map_of(std::string_view map_text) {
  std::string out;
  for (const auto& f : map_lines(map_text)) out += f[0] + " " + f[0] + " " + f[2] + "\n";
  return out;
}

std::string userns_denied_message(int err, const std::string& step, const std::string& proc_sys) {
  std::string message = "rootless mode needs a user namespace: " + step + ": " + strerror(err);
  if (first_word(proc_sys + "/kernel/apparmor_restrict_unprivileged_userns") == "1")
    return message +
           ". AppArmor restricts unprivileged user namespaces on this host "
           "(kernel.apparmor_restrict_unprivileged_userns = 1, Ubuntu >= 23.10). Fix: `sudo sandcell "
           "setup apparmor` (a profile that lets the sandcell binaries create them), or for every "
           "program: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`";
  if (first_word(proc_sys + "/kernel/unprivileged_userns_clone") == "0")
    return message + ". Fix: `sudo sysctl -w kernel.unprivileged_userns_clone=1`";
  if (first_word(proc_sys + "/user/max_user_namespaces") == "0")
    return message + ". Fix: `sudo sysctl -w user.max_user_namespaces=15000`";
  return message + ". Run sandcell as root, or on a host that allows unprivileged user namespaces";
}

namespace {

// The child of the probe: it only has to exist.
int exit_at_once(void*) {
  return 0;
}

// 0 when clone(CLONE_NEWUSER) works here, else its errno. The child shares our memory and runs on
// its own small stack until it exits (CLONE_VFORK: we wait for that before the stack goes away).
int probe_user_namespace() {
  alignas(16) char stack[16 * 1024];
  pid_t pid = clone(exit_at_once, stack + sizeof stack,
                    CLONE_NEWUSER | CLONE_VM | CLONE_VFORK | SIGCHLD, nullptr);
  if (pid < 0) return errno;
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return 0;
}

// Whether our root is our mount namespace's: a child that enters the namespace again gets the
// namespace's root as its own, and compares. nullopt when it cannot tell (no /proc, no privilege).
std::optional<bool> chrooted() {
  pid_t pid = fork();
  if (pid < 0) return std::nullopt;
  if (pid == 0) {
    struct statx before {
    }, after{};
    int ns = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (ns < 0 || statx(AT_FDCWD, "/", 0, STATX_INO | STATX_MNT_ID, &before) < 0 ||
        setns(ns, CLONE_NEWNS) < 0 || statx(AT_FDCWD, "/", 0, STATX_INO | STATX_MNT_ID, &after) < 0)
      _exit(2);
    _exit(before.stx_mnt_id != after.stx_mnt_id || before.stx_ino != after.stx_ino ? 1 : 0);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return std::nullopt;
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) return std::nullopt;
  return WEXITSTATUS(status) == 1;
}

bool seccomp_filtered() {
  std::string status = read_text("/proc/self/status");
  size_t at = status.find("\nSeccomp:");
  return at != std::string::npos && first_word_of(status.substr(at + 9)) == "2";
}

bool same_file(const char* a, const char* b) {
  struct statx x {
  }, y{};
  return statx(AT_FDCWD, a, 0, STATX_INO | STATX_MNT_ID, &x) == 0 &&
         statx(AT_FDCWD, b, 0, STATX_INO | STATX_MNT_ID, &y) == 0 && x.stx_ino == y.stx_ino &&
         x.stx_dev_major == y.stx_dev_major && x.stx_dev_minor == y.stx_dev_minor &&
         x.stx_mnt_id == y.stx_mnt_id;
}

// The signs of a host that may refuse: a seccomp filter on us, the sysctl at 0, another mount
// namespace or root than PID 1's (a container, a chroot). Without them (~0.03 ms to look) the
// probe's clone is spared: creating and freeing a user namespace costs 0.1-0.4 ms here.
bool refusal_possible() {
  return seccomp_filtered() || first_word("/proc/sys/user/max_user_namespaces") == "0" ||
         !same_file("/proc/self/ns/mnt", "/proc/1/ns/mnt") || !same_file("/", "/proc/1/root");
}

}  // namespace

std::string UsernsRefusal::message() const {
  return "the kernel refuses this process a user namespace (clone(CLONE_NEWUSER): " +
         std::string(strerror(error)) + "): " + cause + ". Fix: " + fix;
}

UsernsRefusal explain_userns_refusal(int err, const std::string& proc_sys) {
  UsernsRefusal r{.error = err, .cause = "", .fix = ""};
  bool unprivileged = geteuid() != 0 || rootless();
  if (first_word(proc_sys + "/user/max_user_namespaces") == "0") {
    r.cause = "user.max_user_namespaces is 0";
    r.fix = "`sudo sysctl -w user.max_user_namespaces=15000` (and in /etc/sysctl.d/ to keep it)";
  } else if (err == ENOSPC || err == EUSERS) {
    r.cause =
        "the limit on nested or per-user user namespaces is reached (user.max_user_namespaces, 32 "
        "levels)";
    r.fix = "end the processes holding user namespaces, or raise user.max_user_namespaces";
  } else if (unprivileged && first_word(proc_sys + "/kernel/unprivileged_userns_clone") == "0") {
    r.cause =
        "kernel.unprivileged_userns_clone is 0 (Debian's switch: only root may make user "
        "namespaces)";
    r.fix =
        "`sudo sysctl -w kernel.unprivileged_userns_clone=1` (and in /etc/sysctl.d/ to keep it), "
        "or run "
        "sandcell as root";
  } else if (unprivileged &&
             first_word(proc_sys + "/kernel/apparmor_restrict_unprivileged_userns") == "1") {
    r.cause =
        "AppArmor restricts unprivileged user namespaces "
        "(kernel.apparmor_restrict_unprivileged_userns = 1)";
    r.fix =
        "`sudo sandcell setup apparmor`, or `sudo sysctl -w "
        "kernel.apparmor_restrict_unprivileged_userns=0`";
  } else if (chrooted().value_or(false)) {
    r.cause =
        "this process is chrooted (its / is not its mount namespace's root), and the kernel gives "
        "no user "
        "namespace to a chrooted process";
    r.fix = "run sandcell outside the chroot (a container made with pivot_root is fine)";
  } else if (seccomp_filtered()) {
    r.cause =
        "a seccomp filter confines this process (Seccomp: 2 in /proc/self/status): sandcell runs "
        "inside "
        "another container or sandbox, whose filter refuses new user namespaces";
    r.fix = "let that container create user namespaces (Docker: --security-opt seccomp=unconfined)";
  } else {
    r.cause =
        "no sysctl, chroot or seccomp filter explains it; a Linux security module may deny it";
    r.fix = "look for the denial in the kernel log (dmesg)";
  }
  return r;
}

std::optional<UsernsRefusal> user_namespace_refusal() {
  static const std::optional<UsernsRefusal> refusal = []() -> std::optional<UsernsRefusal> {
    if (!refusal_possible()) return std::nullopt;
    int err = probe_user_namespace();
    if (err == 0) return std::nullopt;
    return explain_userns_refusal(err);
  }();
  return refusal;
}

}  // namespace sandcell::runtime
