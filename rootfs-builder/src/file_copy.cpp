#include "file_copy.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "fs_tree.hpp"
#include "sandcell/base/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

void copy_contents_from(int in, const std::string& source, const std::string& destination, mode_t mode) {
  if (in < 0) throw Error(errno, "open " + source);
  int out = open(destination.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode & 07777);
  if (out < 0) {
    int err = errno;
    close(in);
    throw Error(err, "create " + destination);
  }
  char buffer[1 << 16];
  ssize_t n = 0;
  while ((n = read(in, buffer, sizeof buffer)) > 0)
    if (write(out, buffer, static_cast<size_t>(n)) != n) break;
  int err = n < 0 ? errno : 0;
  close(in);
  if (close(out) < 0 || err != 0) throw Error(err ? err : errno, "copy " + source + " to " + destination);
}

void copy_contents(const std::string& source, const std::string& destination, mode_t mode) {
  copy_contents_from(open(source.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW), source, destination, mode);
}

std::vector<std::string> sorted_entries(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) throw Error(errno, "open directory " + dir);
  std::vector<std::string> names;
  while (dirent* entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

void apply_owner(const std::string& path, const struct stat& st, const CopyOwnership& owner, bool is_link) {
  uid_t uid = owner.uid.value_or(st.st_uid);
  gid_t gid = owner.gid.value_or(st.st_gid);
  if (lchown(path.c_str(), uid, gid) < 0 && errno != EPERM) throw Error(errno, "chown " + path);
  if (!is_link && chmod(path.c_str(), owner.mode.value_or(st.st_mode & 07777)) < 0)
    throw Error(errno, "chmod " + path);
}

}  // namespace

void copy_tree(const std::string& source, const std::string& destination, const CopyOwnership& owner) {
  struct stat st {};
  if (lstat(source.c_str(), &st) < 0) throw Error(errno, "stat " + source);
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(destination.c_str(), 0700) < 0) throw Error(errno, "mkdir " + destination);
    for (const std::string& name : sorted_entries(source))
      copy_tree(source + "/" + name, destination + "/" + name, owner);
  } else if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = readlink(source.c_str(), target.data(), target.size());
    if (n < 0) throw Error(errno, "readlink " + source);
    target.resize(static_cast<size_t>(n));
    if (symlink(target.c_str(), destination.c_str()) < 0) throw Error(errno, "symlink " + destination);
  } else if (S_ISREG(st.st_mode)) {
    copy_contents(source, destination, st.st_mode);
  } else if (S_ISFIFO(st.st_mode)) {
    if (mkfifo(destination.c_str(), st.st_mode & 07777) < 0) throw Error(errno, "mkfifo " + destination);
  } else {
    return;  // devices and sockets are not copied into images
  }
  apply_owner(destination, st, owner, S_ISLNK(st.st_mode));
}

void copy_tree_at(int parent, const std::string& name, const std::string& destination, const CopyOwnership& owner,
                  const std::string& prefix, const std::function<bool(const std::string&)>& keep) {
  std::string shown = prefix.empty() ? name : prefix + "/" + name;
  struct stat st {};
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) throw Error(errno, "stat " + shown);
  if (S_ISDIR(st.st_mode)) {
    UniqueFd dir(openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir) throw Error(errno, "open " + shown);
    if (mkdir(destination.c_str(), 0700) < 0) throw Error(errno, "mkdir " + destination);
    for (const std::string& child : list_dir_fd(dup(dir.get()), shown)) {
      std::string relative = shown == "." ? child : shown + "/" + child;
      if (keep && !keep(relative)) continue;
      copy_tree_at(dir.get(), child, destination + "/" + child, owner, shown == "." ? "" : shown, keep);
    }
  } else if (S_ISLNK(st.st_mode)) {
    std::string target(static_cast<size_t>(st.st_size) + 1, '\0');
    ssize_t n = readlinkat(parent, name.c_str(), target.data(), target.size());
    if (n < 0) throw Error(errno, "readlink " + shown);
    target.resize(static_cast<size_t>(n));
    if (symlink(target.c_str(), destination.c_str()) < 0) throw Error(errno, "symlink " + destination);
  } else if (S_ISREG(st.st_mode)) {
    copy_contents_from(openat(parent, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK), shown,
                       destination, st.st_mode);
  } else if (S_ISFIFO(st.st_mode)) {
    if (mkfifo(destination.c_str(), st.st_mode & 07777) < 0) throw Error(errno, "mkfifo " + destination);
  } else {
    return;  // devices and sockets are not copied into images
  }
  apply_owner(destination, st, owner, S_ISLNK(st.st_mode));
}

}  // namespace sandcell::rootfs_builder
