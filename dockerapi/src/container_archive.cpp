// docker cp (container_archive.hpp). The API server is root on the host: every file it touches
// in a container is reached by an fd resolved inside the container's root, never by a name
// under /proc/<pid>/root (an absolute symlink there would be followed on the host).
#include "container_archive.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/loaded_libs.hpp"

namespace sandcell::dockerapi {
namespace {

using sandcell::libarchive;
using runtime::UniqueFd;

constexpr int kMaxDepth = 256;
constexpr unsigned long kMqueueMagic = 0x19800202;  // ipc/mqueue.c, not in linux/magic.h

UniqueFd open_in_root(int root, const std::string& path, int flags) {
  open_how how{};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const std::string relative = path.empty() ? "." : path;
  long fd;
  do {
    fd = syscall(SYS_openat2, root, relative.c_str(), &how, sizeof how);
  } while (fd < 0 && errno == EAGAIN);  // a rename raced the lookup
  return UniqueFd(static_cast<int>(fd));
}

// The kernel's own file systems: their files are the host kernel's interfaces (a process's
// environ, memory, attributes) and would be read or written with sandcell's privileges.
bool is_kernel_file_system(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) < 0) throw Error(errno, "statfs in the container");
  switch (static_cast<unsigned long>(fs.f_type)) {
    case PROC_SUPER_MAGIC:
    case SYSFS_MAGIC:
    case CGROUP_SUPER_MAGIC:
    case CGROUP2_SUPER_MAGIC:
    case DEVPTS_SUPER_MAGIC:
    case DEBUGFS_MAGIC:
    case TRACEFS_MAGIC:
    case SECURITYFS_MAGIC:
    case BPF_FS_MAGIC:
    case kMqueueMagic:
    case NSFS_MAGIC:
    case PSTOREFS_MAGIC:
    case EFIVARFS_MAGIC:
    case SELINUX_MAGIC:
    case SMACK_MAGIC:
    case BINFMTFS_MAGIC:
    case HUGETLBFS_MAGIC:
      return true;
    default:
      return false;
  }
}

// The path as its parent directory (resolved in the root) and its last name ("." for the
// parent itself: "/" and "dir/.").
struct ResolvedPath {
  UniqueFd parent;
  std::string name;
};

ResolvedPath resolve(int root, const std::string& path) {
  std::filesystem::path p = std::filesystem::path(path).lexically_normal();
  std::string name = p.filename().string();
  std::string parent = p.parent_path().string();
  if (name.empty() || name == "." || name == "/" || name == "..") {
    parent = p.string();
    name = ".";
  }
  UniqueFd dir = open_in_root(root, parent, O_PATH | O_DIRECTORY);
  if (!dir) {
    if (errno == ENOENT || errno == ENOTDIR)
      throw not_found("Could not find the file " + path + " in container");
    throw Error(errno, "open " + parent + " in the container");
  }
  return {std::move(dir), name};
}

uint32_t go_file_mode(mode_t mode) {
  uint32_t m = mode & 0777;
  if (S_ISDIR(mode)) m |= 1u << 31;
  if (S_ISLNK(mode)) m |= 1u << 27;
  if (S_ISBLK(mode)) m |= 1u << 26;
  if (S_ISFIFO(mode)) m |= 1u << 25;
  if (S_ISSOCK(mode)) m |= 1u << 24;
  if (S_ISCHR(mode)) m |= (1u << 26) | (1u << 21);
  if (mode & S_ISUID) m |= 1u << 23;
  if (mode & S_ISGID) m |= 1u << 22;
  if (mode & S_ISVTX) m |= 1u << 20;
  return m;
}

std::string rfc3339(const timespec& t) {
  tm utc{};
  gmtime_r(&t.tv_sec, &utc);
  char text[64];
  strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  return std::string(text) + "." + std::to_string(t.tv_nsec) + "Z";
}

std::string base64(const std::string& in) {
  static constexpr char kTable[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < in.size(); i += 3) {
    const size_t left = std::min<size_t>(3, in.size() - i);
    uint32_t n = 0;
    for (size_t k = 0; k < 3; ++k)
      n = (n << 8) | (k < left ? static_cast<unsigned char>(in[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= left ? kTable[(n >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

struct ArchiveWriter {
  archive* a;
  explicit ArchiveWriter(int fd) : a(libarchive().write_new()) {
    if (a == nullptr) throw Error(ENOMEM, "archive_write_new");
    if (libarchive().write_set_format(a, ARCHIVE_FORMAT_TAR_PAX_RESTRICTED) != ARCHIVE_OK ||
        libarchive().write_open_fd(a, fd) != ARCHIVE_OK)
      throw Error(EIO, std::string("start the tar: ") + libarchive().error_string(a));
  }
  ~ArchiveWriter() { libarchive().write_free(a); }
  void check(int r, const std::string& what) const {
    if (r < ARCHIVE_WARN) throw Error(EIO, what + ": " + libarchive().error_string(a));
  }
};

struct Entry {
  archive_entry* e = libarchive().entry_new();
  ~Entry() { libarchive().entry_free(e); }
};

void write_file_data(ArchiveWriter& w, int fd, int64_t size, const std::string& name) {
  char buffer[65536];
  int64_t done = 0;
  while (done < size) {
    ssize_t n =
        read(fd, buffer, static_cast<size_t>(std::min<int64_t>(sizeof buffer, size - done)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, "read " + name + " in the container");
    if (n == 0) {  // shrank while read: the header's size is kept, padded with zeros
      std::memset(buffer, 0, sizeof buffer);
      n = static_cast<ssize_t>(std::min<int64_t>(sizeof buffer, size - done));
    }
    if (libarchive().write_data(w.a, buffer, static_cast<size_t>(n)) < 0)
      throw Error(EIO, std::string("write the tar: ") + libarchive().error_string(w.a));
    done += n;
  }
}

void add_tree(ArchiveWriter& w, int parent, const std::string& name, const std::string& tar_name,
              dev_t dev, int depth);

void add_children(ArchiveWriter& w, int dir, const std::string& tar_name, dev_t dev, int depth) {
  if (depth >= kMaxDepth)
    throw bad_request("the directory tree is deeper than " + std::to_string(kMaxDepth));
  int listing_fd = dup(dir);
  DIR* listing = listing_fd < 0 ? nullptr : fdopendir(listing_fd);
  if (listing == nullptr) {
    if (listing_fd >= 0) close(listing_fd);
    throw Error(errno, "list " + tar_name + " in the container");
  }
  std::vector<std::string> names;
  while (dirent* d = readdir(listing))
    if (strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0) names.emplace_back(d->d_name);
  closedir(listing);
  std::sort(names.begin(), names.end());
  for (const std::string& child : names)
    add_tree(w, dir, child, tar_name + "/" + child, dev, depth + 1);
}

// One entry, by an fd opened without following a symlink and checked to be what was stat'ed
// (the container may swap names while we read).
void add_tree(ArchiveWriter& w, int parent, const std::string& name, const std::string& tar_name,
              dev_t dev, int depth) {
  struct stat st {};
  if (fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) < 0) return;  // gone meanwhile
  if (S_ISSOCK(st.st_mode)) return;
  if (depth == 0) dev = st.st_dev;
  UniqueFd fd;
  if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
    fd.reset(openat(parent, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat again {};
    if (!fd || fstat(fd.get(), &again) < 0 || again.st_ino != st.st_ino ||
        again.st_dev != st.st_dev)
      return;
    if (st.st_dev != dev && S_ISREG(st.st_mode) && is_kernel_file_system(fd.get()))
      return;  // a bound-in one
  }
  Entry entry;
  libarchive().entry_copy_pathname(entry.e, tar_name.c_str());
  libarchive().entry_set_mode(entry.e, st.st_mode);
  libarchive().entry_set_uid(entry.e, st.st_uid);
  libarchive().entry_set_gid(entry.e, st.st_gid);
  libarchive().entry_set_mtime(entry.e, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  libarchive().entry_set_size(entry.e, S_ISREG(st.st_mode) ? st.st_size : 0);
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) libarchive().entry_set_rdev(entry.e, st.st_rdev);
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(parent, name.c_str(), target, sizeof target - 1);
    if (n < 0) return;
    target[n] = '\0';
    libarchive().entry_copy_symlink(entry.e, target);
  }
  w.check(libarchive().write_header(w.a, entry.e), "write the tar entry " + tar_name);
  if (S_ISREG(st.st_mode)) write_file_data(w, fd.get(), st.st_size, tar_name);
  // Below a mount of another file system (a kernel one above all) nothing is copied.
  if (S_ISDIR(st.st_mode) && st.st_dev == dev) add_children(w, fd.get(), tar_name, dev, depth);
}

}  // namespace

ContainerPathStat stat_in_container(int root, const std::string& path) {
  ResolvedPath resolved = resolve(root, path);
  struct stat st {};
  UniqueFd self(
      openat(resolved.parent.get(), resolved.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  if (!self || fstat(self.get(), &st) < 0) {
    if (errno == ENOENT) throw not_found("Could not find the file " + path + " in container");
    throw Error(errno, "stat " + path + " in the container");
  }
  if (is_kernel_file_system(self.get()))  // a mount point of one (/proc), or a file bound from one
    throw bad_request(path + " is on a kernel file system: sandcell does not copy from or into it");
  ContainerPathStat out{.name = std::filesystem::path(path).lexically_normal().filename().string(),
                        .size = st.st_size,
                        .mode = go_file_mode(st.st_mode),
                        .mtime = rfc3339(st.st_mtim),
                        .link_target = ""};
  if (out.name.empty()) out.name = "/";
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(resolved.parent.get(), resolved.name.c_str(), target, sizeof target - 1);
    if (n >= 0) out.link_target.assign(target, static_cast<size_t>(n));
  }
  return out;
}

std::string path_stat_header(const ContainerPathStat& stat) {
  return base64(nlohmann::json{{"name", stat.name},
                               {"size", stat.size},
                               {"mode", stat.mode},
                               {"mtime", stat.mtime},
                               {"linkTarget", stat.link_target}}
                    .dump());
}

UniqueFd tar_from_container(int root, const std::string& path, const std::string& scratch_dir) {
  stat_in_container(root, path);  // 404 and the kernel file systems
  ResolvedPath resolved = resolve(root, path);
  UniqueFd out(open(scratch_dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
  if (!out) throw Error(errno, "temporary file in " + scratch_dir);
  {
    ArchiveWriter w(out.get());
    add_tree(w, resolved.parent.get(), resolved.name, resolved.name, 0, 0);
    w.check(libarchive().write_close(w.a), "finish the tar");
  }
  if (lseek(out.get(), 0, SEEK_SET) < 0) throw Error(errno, "rewind the tar");
  return out;
}

void untar_into_container(int root, const std::string& dir, const std::string& tar) {
  UniqueFd dest = open_in_root(root, dir, O_RDONLY | O_DIRECTORY);
  if (!dest && errno == ENOTDIR)
    throw bad_request("extraction point " + dir + " is not a directory");
  if (!dest && errno == ENOENT) throw not_found("Could not find the file " + dir + " in container");
  if (!dest) throw Error(errno, "open " + dir + " in the container");
  if (is_kernel_file_system(dest.get()))
    throw bad_request(dir + " is on a kernel file system: sandcell does not copy from or into it");
  UniqueFd body(memfd_create("docker-cp", MFD_CLOEXEC));
  if (!body) throw Error(errno, "memfd_create");
  for (size_t done = 0; done < tar.size();) {
    ssize_t n = write(body.get(), tar.data() + done, tar.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(errno, "write the tar to memory");
    done += static_cast<size_t>(n);
  }
  rootfs_builder::ExtractStats stats;
  try {
    stats = rootfs_builder::extract_layer("/proc/self/fd/" + std::to_string(body.get()),
                                          "/proc/self/fd/" + std::to_string(dest.get()),
                                          {.whiteouts = rootfs_builder::WhiteoutHandling::Keep,
                                           .preserve_owner = true,
                                           .opaque_xattr = std::nullopt,
                                           .max_bytes = std::nullopt,
                                           .drop_setid_bits = true});
  } catch (const Error& e) {
    throw bad_request(std::string("extract the tar into ") + dir + ": " + e.what());
  }
  refuse_rejected_entries(stats);
}

void refuse_rejected_entries(const rootfs_builder::ExtractStats& stats) {
  if (!stats.rejected.empty())
    throw bad_request(
        "refused tar entry \"" + stats.rejected[0].path + "\": " + stats.rejected[0].reason +
        (stats.rejected.size() > 1 ? " (and " + std::to_string(stats.rejected.size() - 1) + " more)"
                                   : ""));
}

}  // namespace sandcell::dockerapi
