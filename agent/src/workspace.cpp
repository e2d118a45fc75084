// Every access to a workspace the sandboxed program could have shaped goes through openat2 with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV relative to the workspace's fd
// (openat2(2)): a symlink anywhere in the path fails with ELOOP instead of being followed.
#include "sandcell/agent/workspace.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <algorithm>
#include <cstring>

#include "host_privilege_strip.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent {
namespace {

using runtime::UniqueFd;

constexpr uint64_t kResolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

int open_beneath(int dir, const std::string& path, uint64_t flags, mode_t mode = 0) {
  open_how how{.flags = flags | O_CLOEXEC | O_NOFOLLOW, .mode = mode, .resolve = kResolve};
  long fd;
  do fd = syscall(SYS_openat2, dir, path.c_str(), &how, sizeof how);
  while (fd < 0 && errno == EAGAIN);  // RESOLVE_* may ask to retry after a concurrent rename
  return static_cast<int>(fd);
}

std::pair<std::string, std::string> split_parent(const std::string& rel) {
  auto slash = rel.rfind('/');
  if (slash == std::string::npos) return {".", rel};
  return {rel.substr(0, slash), rel.substr(slash + 1)};
}

bool regular_single_link(int fd, struct stat& st) {
  return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

struct DirWalk {
  const CollectBounds& bounds;
  Workspace::Snapshot& out;

  void walk(int dir_fd, const std::string& prefix, int depth) {
    if (depth > bounds.max_depth) return;
    UniqueFd own(dup(dir_fd));
    DIR* d = fdopendir(own.get());
    if (!d) return;
    own.release();
    std::vector<std::string> names;
    while (dirent* e = readdir(d))
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());  // the same files in the same order every time
    for (const std::string& name : names) {
      if (out.size() >= bounds.max_files) return;
      struct stat st;
      if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      std::string path = prefix + "/" + name;
      if (S_ISREG(st.st_mode)) {
        out[path] = {st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec, static_cast<uint64_t>(st.st_size),
                     st.st_ino};
      } else if (S_ISDIR(st.st_mode)) {
        UniqueFd sub(open_beneath(dir_fd, name, O_RDONLY | O_DIRECTORY));
        if (sub) walk(sub.get(), path, depth + 1);
      }  // symlinks, FIFOs, sockets: never artifacts
    }
  }
};

}  // namespace

Workspace::Workspace(std::string host_dir) : host_dir_(std::move(host_dir)) {
  dir_ = UniqueFd(open(host_dir_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir_) throw Error(errno, "open workspace " + host_dir_);
}

std::string Workspace::relative(const std::string& path) {
  std::string rel = path;
  if (rel == "/workspace") return ".";
  if (rel.rfind("/workspace/", 0) == 0) rel = rel.substr(11);
  else if (!rel.empty() && rel[0] == '/')
    throw Error::invalid("path '" + path + "' is outside /workspace");
  while (!rel.empty() && rel.back() == '/') rel.pop_back();
  if (rel.empty()) throw Error::invalid("empty workspace path '" + path + "'");
  size_t start = 0;
  for (size_t end; start <= rel.size(); start = end + 1) {
    end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == "..")
      throw Error::invalid("workspace path '" + path + "' must not contain '..', '.' or '//'");
  }
  if (rel.find('\0') != std::string::npos) throw Error::invalid("workspace path contains a NUL byte");
  return rel;
}

void Workspace::make_dirs(const std::string& path) {
  std::string rel = relative(path);
  UniqueFd dir(dup(dir_.get()));
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    std::string part = rel.substr(start, end - start);
    if (part != "." && mkdirat(dir.get(), part.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error(errno, "mkdir /workspace/" + rel.substr(0, end));
    UniqueFd next(open_beneath(dir.get(), part, O_RDONLY | O_DIRECTORY));
    if (!next) throw Error(errno, "open /workspace/" + rel.substr(0, end) + " (a symlink or not a directory?)");
    dir = std::move(next);
    start = end + 1;
  }
}

void Workspace::write_file(const std::string& path, std::string_view content, mode_t mode) {
  std::string rel = relative(path);
  auto [parent, name] = split_parent(rel);
  if (parent != ".") make_dirs(parent);
  // O_NONBLOCK: a FIFO the program planted must fail the open, not hang sandcell.
  UniqueFd fd(open_beneath(dir_.get(), rel, O_WRONLY | O_CREAT | O_NONBLOCK, mode));
  if (!fd) throw Error(errno, "open /workspace/" + rel + " for writing");
  struct stat st;
  if (!regular_single_link(fd.get(), st))
    throw Error::invalid("/workspace/" + rel + " is not a plain file (a device, FIFO or hard link?)");
  check(ftruncate(fd.get(), 0), "truncate /workspace/" + rel);
  for (size_t done = 0; done < content.size();) {
    ssize_t n = write(fd.get(), content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(errno ? errno : EIO, "write /workspace/" + rel);
    done += static_cast<size_t>(n);
  }
}

void Workspace::remove_file(const std::string& path) {
  std::string rel = relative(path);
  auto [parent, name] = split_parent(rel);
  UniqueFd dir(open_beneath(dir_.get(), parent, O_RDONLY | O_DIRECTORY));
  if (!dir) return;
  if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) throw Error(errno, "remove /workspace/" + rel);
}

void Workspace::strip_privileges() const { strip_host_privileges(dir_.get()); }

WorkspaceFile Workspace::read_file(const std::string& path, uint64_t max_bytes) const {
  std::string rel = relative(path);
  WorkspaceFile file{.path = "/workspace/" + rel, .mime = mime_type(rel)};
  UniqueFd fd(open_beneath(dir_.get(), rel, O_RDONLY | O_NONBLOCK));
  if (!fd) {
    file.note = errno == ELOOP ? "a symlink (never followed)" : std::string("cannot open: ") + strerror(errno);
    return file;
  }
  struct stat st;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    file.note = "not a regular file";
    return file;
  }
  file.size = static_cast<uint64_t>(st.st_size);
  if (file.size > max_bytes) {
    file.note = "larger than " + std::to_string(max_bytes) + " bytes; not inlined";
    return file;
  }
  std::string bytes(file.size, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = read(fd.get(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  file.content = std::move(bytes);
  return file;
}

std::string Workspace::read_small_text(const std::string& path) const {
  WorkspaceFile f = read_file(path, 64 << 10);
  return f.content.value_or("");
}

Workspace::Snapshot Workspace::snapshot(const std::string& dir, const CollectBounds& bounds) const {
  Snapshot out;
  std::string rel = relative(dir);
  UniqueFd fd(open_beneath(dir_.get(), rel, O_RDONLY | O_DIRECTORY));
  if (!fd) return out;  // no out/ directory: nothing written
  DirWalk{bounds, out}.walk(fd.get(), "/workspace/" + rel, 1);
  return out;
}

std::vector<WorkspaceFile> Workspace::changed_files(const Snapshot& before, const Snapshot& after,
                                                    const CollectBounds& bounds) const {
  std::vector<WorkspaceFile> files;
  uint64_t inlined = 0;
  for (const auto& [path, stamp] : after) {
    auto old = before.find(path);
    if (old != before.end() && old->second == stamp) continue;
    uint64_t budget = std::min(bounds.max_inline_bytes, bounds.max_total_inline_bytes - inlined);
    WorkspaceFile f = read_file(path, budget);
    if (f.content) inlined += f.content->size();
    else if (f.note.rfind("larger", 0) == 0 && budget < bounds.max_inline_bytes)
      f.note = "not inlined: the artifacts together exceed " + std::to_string(bounds.max_total_inline_bytes) + " bytes";
    files.push_back(std::move(f));
  }
  return files;
}

std::string mime_type(std::string_view path) {
  static const std::pair<std::string_view, std::string_view> kTypes[] = {
      {".png", "image/png"},   {".jpg", "image/jpeg"},     {".jpeg", "image/jpeg"},  {".gif", "image/gif"},
      {".svg", "image/svg+xml"}, {".webp", "image/webp"},  {".pdf", "application/pdf"},
      {".csv", "text/csv"},    {".tsv", "text/tab-separated-values"}, {".txt", "text/plain"},
      {".md", "text/markdown"}, {".html", "text/html"},    {".json", "application/json"},
      {".xml", "application/xml"}, {".py", "text/x-python"}, {".js", "text/javascript"},
      {".c", "text/x-c"},      {".cpp", "text/x-c++"},     {".sh", "text/x-shellscript"},
      {".log", "text/plain"},  {".zip", "application/zip"}, {".gz", "application/gzip"},
      {".tar", "application/x-tar"}, {".parquet", "application/vnd.apache.parquet"},
  };
  auto dot = path.rfind('.');
  if (dot == std::string_view::npos || path.find('/', dot) != std::string_view::npos) return "application/octet-stream";
  std::string ext(path.substr(dot));
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [e, type] : kTypes)
    if (e == ext) return std::string(type);
  return "application/octet-stream";
}

}  // namespace sandcell::agent
