#include "host_privilege_strip.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::agent {
namespace {

using runtime::UniqueFd;

// security.capability: file capabilities (capabilities(7) "File capabilities"); a namespaced
// root may write them (v3, with its root id), and an idmapped mount maps that id to the host's.
// The POSIX ACLs could hand another host user access the mode bits do not show.
constexpr const char* kPrivilegedXattrs[] = {"security.capability", "system.posix_acl_access",
                                             "system.posix_acl_default"};

std::vector<std::string> entry_names(int dir_fd) {
  std::vector<std::string> names;
  // A new open file description: a dup() would share (and start from) the offset an earlier
  // listing through the same fd left at the end of the directory.
  UniqueFd own(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  DIR* d = own ? fdopendir(own.get()) : nullptr;
  if (!d) throw Error(errno, "list a workspace directory");
  own.release();
  while (dirent* e = readdir(d))
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  closedir(d);
  return names;
}

// Rootless, files the sandbox's other users wrote belong to the user's subordinate ids, which
// sandcell may not change; they carry no more than those ids (never root's), so they are left.
// As root nothing is refused, and every failure is an error.
bool refused_as_not_ours(const struct stat& st) {
  return (errno == EPERM || errno == EACCES) && geteuid() != 0 && st.st_uid != geteuid();
}

void strip_fd(int fd, const struct stat& st, const std::string& path, PrivilegeStrip& out) {
  if (st.st_mode & (S_ISUID | S_ISGID)) {
    if (fchmod(fd, st.st_mode & 07777 & ~(S_ISUID | S_ISGID)) == 0)
      ++out.modes_cleared;
    else if (!refused_as_not_ours(st))
      throw Error(errno, "clear the setuid/setgid bits of " + path);
  }
  for (const char* name : kPrivilegedXattrs) {
    if (fremovexattr(fd, name) == 0)
      ++out.xattrs_removed;
    else if (errno != ENODATA && errno != EOPNOTSUPP && !refused_as_not_ours(st))
      throw Error(errno, std::string("remove ") + name + " of " + path);
  }
}

// Strips one entry; returns true for a directory to descend into.
bool strip_entry(int dir_fd, const std::string& name, const std::string& path,
                 PrivilegeStrip& out) {
  struct stat st;
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return false;
    throw Error(errno, "stat " + path);
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    if (unlinkat(dir_fd, name.c_str(), 0) == 0)
      ++out.nodes_removed;
    else if (!refused_as_not_ours(st))
      throw Error(errno, "remove the device node " + path);
    return false;
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) return false;  // symlinks, FIFOs, sockets
  // O_NONBLOCK|O_NOFOLLOW: the entry cannot have become a FIFO or symlink that blocks or leads
  // out; nothing runs in the sandbox any more, but the check costs nothing.
  int flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY |
              (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0);
  UniqueFd fd(openat(dir_fd, name.c_str(), flags));
  if (!fd && refused_as_not_ours(st)) return false;
  if (!fd) throw Error(errno, "open " + path);
  check(fstat(fd.get(), &st), "stat " + path);
  strip_fd(fd.get(), st, path, out);
  return S_ISDIR(st.st_mode);
}

}  // namespace

// Depth first with one directory open at a time, coming back up through "..": the code chooses
// how deep its tree is, and neither PATH_MAX nor the fd limit may leave a part of it unstripped.
// ".." is safe here: nothing runs in the sandbox any more and the session (if any) is locked.
PrivilegeStrip strip_host_privileges(int dir_fd) {
  PrivilegeStrip out;
  struct stat st;
  check(fstat(dir_fd, &st), "stat the workspace");
  strip_fd(dir_fd, st, "/workspace", out);
  UniqueFd cur(openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!cur) throw Error(errno, "open the workspace");
  std::string path = "/workspace";
  auto level = [&] {  // the subdirectories of `cur`, every entry stripped
    std::vector<std::string> subdirs;
    for (const std::string& name : entry_names(cur.get()))
      if (strip_entry(cur.get(), name, path + "/" + name, out)) subdirs.push_back(name);
    return subdirs;
  };
  std::vector<std::vector<std::string>> pending{level()};
  while (!pending.empty()) {
    if (pending.back().empty()) {
      pending.pop_back();
      if (pending.empty()) break;
      cur = UniqueFd(openat(cur.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!cur) throw Error(errno, "open the parent of " + path);
      path.erase(path.rfind('/'));
      continue;
    }
    std::string name = std::move(pending.back().back());
    pending.back().pop_back();
    UniqueFd sub(openat(cur.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) continue;  // gone, or another user's (rootless): strip_entry has said which
    cur = std::move(sub);
    path += "/" + name;
    pending.push_back(level());
  }
  return out;
}

}  // namespace sandcell::agent
