#include "sandcell/rootfs_builder/image_user.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <sstream>

#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

struct PasswdEntry {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

struct GroupEntry {
  std::string name;
  gid_t gid = 0;
  std::vector<std::string> members;
};

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  for (std::string field; std::getline(in, field, sep);) fields.push_back(field);
  if (!line.empty() && line.back() == sep) fields.emplace_back();
  return fields;
}

std::optional<uint32_t> number(const std::string& text) {
  uint32_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  // (uid_t)-1 is "leave unchanged" to setresuid(2): a User of 4294967295 would stay root.
  if (value == UINT32_MAX) return std::nullopt;
  return value;
}

std::vector<PasswdEntry> parse_passwd(const std::string& text) {
  std::vector<PasswdEntry> entries;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() < 7 || !number(f[2]) || !number(f[3])) continue;  // malformed lines are skipped
    entries.push_back({.name = f[0], .uid = *number(f[2]), .gid = *number(f[3]), .home = f[5]});
  }
  return entries;
}

std::vector<GroupEntry> parse_group(const std::string& text) {
  std::vector<GroupEntry> entries;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto f = split(line, ':');
    if (f.size() < 4 || !number(f[2])) continue;
    entries.push_back({.name = f[0], .gid = *number(f[2]), .members = split(f[3], ',')});
  }
  return entries;
}

// 1: the layer has the file (fd returned), 0: not in this layer, -1: a whiteout hides it.
int open_in_layer(const std::string& layer, const std::string& path, int& fd) {
  int root = open(layer.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (root < 0) return 0;
  open_how how{.flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW, .mode = 0,
               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
  fd = static_cast<int>(syscall(SYS_openat2, root, path.c_str(), &how, sizeof how));
  struct stat st {};
  bool whiteout = fd < 0 && fstatat(root, path.c_str() + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                  S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
  close(root);
  if (whiteout) return -1;
  return fd >= 0 ? 1 : 0;
}

}  // namespace

std::string read_image_file(const std::vector<std::string>& layers_top_first, const std::string& path) {
  for (const std::string& layer : layers_top_first) {
    int fd = -1;
    int found = open_in_layer(layer, path, fd);
    if (found < 0) return "";
    if (found == 0) continue;
    std::string text;
    char buffer[8192];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0 && text.size() < (16u << 20);)
      text.append(buffer, static_cast<size_t>(n));
    close(fd);
    return text;
  }
  return "";
}

ResolvedUser resolve_user(const std::string& user, const std::vector<std::string>& layers_top_first) {
  auto parts = split(user, ':');
  if (user.empty() || parts.size() > 2 || parts[0].empty())
    throw Error::invalid("USER must be NAME|UID[:GROUP|GID], got '" + user + "'");
  auto passwd = parse_passwd(read_image_file(layers_top_first, "/etc/passwd"));
  auto groups = parse_group(read_image_file(layers_top_first, "/etc/group"));
  ResolvedUser resolved;
  const PasswdEntry* entry = nullptr;
  for (const auto& p : passwd)
    if (number(parts[0]) ? p.uid == *number(parts[0]) : p.name == parts[0]) entry = entry ? entry : &p;
  if (entry == nullptr && !number(parts[0]))
    throw Error::invalid("user '" + parts[0] + "' is not in the image's /etc/passwd");
  resolved.uid = entry ? entry->uid : *number(parts[0]);
  resolved.gid = entry ? entry->gid : 0;
  if (entry && !entry->home.empty()) resolved.home = entry->home;
  if (parts.size() == 2) {
    const GroupEntry* group = nullptr;
    for (const auto& g : groups)
      if (number(parts[1]) ? g.gid == *number(parts[1]) : g.name == parts[1]) group = group ? group : &g;
    if (group == nullptr && !number(parts[1]))
      throw Error::invalid("group '" + parts[1] + "' is not in the image's /etc/group");
    resolved.gid = group ? group->gid : *number(parts[1]);
  }
  for (const auto& g : groups)
    for (const auto& member : g.members)
      if (entry && member == entry->name && g.gid != resolved.gid) resolved.additional_gids.push_back(g.gid);
  return resolved;
}

}  // namespace sandcell::rootfs_builder
