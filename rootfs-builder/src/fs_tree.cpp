#include "fs_tree.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "gzip_sink.hpp"
#include "sandcell/base/error.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {

namespace {
struct DirClose {
  void operator()(DIR* d) const { ::closedir(d); }
};
}  // namespace

int openat2_in_root(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  return static_cast<int>(
      ::syscall(SYS_openat2, root, path.empty() ? "." : path.c_str(), &how, sizeof how));
}

std::vector<std::string> list_dir_fd(int fd, const std::string& what) {
  if (fd < 0) throw Error(errno, "open " + what);
  std::unique_ptr<DIR, DirClose> dir(::fdopendir(fd));
  if (!dir) {
    int err = errno;
    ::close(fd);
    throw Error(err, "fdopendir " + what);
  }
  std::vector<std::string> names;
  while (dirent* d = ::readdir(dir.get())) {
    std::string_view name = d->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> list_dir(const std::string& path) {
  return list_dir_fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), path);
}

bool is_single_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

namespace {

void walk_at(int dir_fd, const std::string& prefix, const std::string& what, std::vector<std::string>& out,
             std::size_t max_entries) {
  for (const std::string& name : list_dir_fd(::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), what)) {
    if (out.size() >= max_entries)
      throw Error(E2BIG, "walk " + what + ": more than " + std::to_string(max_entries) + " entries");
    std::string relative = prefix.empty() ? name : prefix + "/" + name;
    // PATH_MAX: patterns are matched against these paths, and so is a depth bound.
    if (relative.size() > 4096) throw Error(ENAMETOOLONG, "walk " + what + ": a path longer than 4096 characters");
    out.push_back(relative);
    struct stat st {};
    if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw Error(errno, "stat " + what + "/" + relative);
    if (!S_ISDIR(st.st_mode)) continue;
    UniqueFd child(::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!child) throw Error(errno, "open " + what + "/" + relative);
    walk_at(child.get(), relative, what, out, max_entries);
  }
}

}  // namespace

std::vector<std::string> list_tree_at(int dir_fd, const std::string& what, std::size_t max_entries) {
  std::vector<std::string> out;
  walk_at(dir_fd, "", what, out, max_entries);
  return out;
}

void remove_tree_at(int parent, const std::string& name) {
  // Never "..", "." or a path: a name from a layer must not reach the parent's parent.
  if (!is_single_name(name)) throw Error(EINVAL, "remove '" + name + "': not a single file name");
  if (::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno != EISDIR && errno != EPERM) throw Error(errno, "unlink " + name);
  UniqueFd fd(::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + name);
  std::vector<std::string> children = list_dir_fd(::dup(fd.get()), name);
  // Deletion needs write and search permission on the directory, which we own.
  (void)::fchmod(fd.get(), 0700);
  for (const auto& child : children) remove_tree_at(fd.get(), child);
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    throw Error(errno, "rmdir " + name);
}

void remove_tree(const std::string& path) {
  std::string parent = parent_dir(path);
  UniqueFd fd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return;
    throw Error(errno, "open " + parent);
  }
  remove_tree_at(fd.get(), path.substr(path.rfind('/') + 1));
}

TempDir::~TempDir() {
  if (path().empty()) return;
  try {
    remove_tree(path());  // fd-relative, and makes unreadable directories removable
  } catch (const Error&) {
    // Left for `sandcell gc` and `sandcell prune`: unowned once this process ends.
  }
}

void fsync_path(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  if (::fsync(fd.get()) != 0) throw Error(errno, "fsync " + path);
}

std::string parent_dir(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void rename_durably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) throw Error(errno, "rename " + from + " to " + to);
  fsync_path(parent_dir(to));
}

void write_file_atomic(const std::string& tmp_dir, const std::string& path, std::string_view data) {
  std::string tmp = tmp_dir + "/write-XXXXXX";
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd) throw Error(errno, "create temp file in " + tmp_dir);
  try {
    write_all(fd.get(), data.data(), data.size(), "write " + tmp);
    if (::fchmod(fd.get(), 0644) != 0) throw Error(errno, "chmod " + tmp);
    if (::fsync(fd.get()) != 0) throw Error(errno, "fsync " + tmp);
    rename_durably(tmp, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
}

std::string read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, "read " + path);
    if (n == 0) return out;
    out.append(buf, static_cast<std::size_t>(n));
  }
}

}  // namespace sandcell::rootfs_builder
