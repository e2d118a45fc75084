// Safe extraction of layer tars. Every path is resolved by the kernel inside the destination
// (openat2 RESOLVE_IN_ROOT): a symlink in the tar, even "a -> /", means what it would mean in
// the container, never the host. Files are created with *at() calls on the resolved parent fd,
// so no joined path string ever reaches open(2). This is the class of bug behind
// CVE-2019-14271 (docker cp), CVE-2018-15664 and the many "zip slip" tar bugs.
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "archive_handles.hpp"
#include "fs_tree.hpp"
#include "gzip_sink.hpp"
#include "sandcell/base/loaded_libs.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

// A layer with more entries is refused: each costs an inode and a line in every walk of it.
constexpr std::uint64_t kMaxEntries = 4'000'000;

// A hostile or unusable entry: recorded and skipped, the extraction goes on.
struct Rejected {
  std::string reason;
};

struct Attributes {
  mode_t mode = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  timespec mtime{};
  std::vector<std::pair<std::string, std::string>> xattrs;
};

// Splits a tar path into components: no absolute paths, no "..", "." and "" dropped.
std::vector<std::string> normalise(const char* raw) {
  if (raw == nullptr) throw Rejected{"path not representable"};
  std::string_view path = raw;
  if (path.starts_with('/')) throw Rejected{"absolute path"};
  std::vector<std::string> parts;
  while (!path.empty()) {
    auto slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") throw Rejected{"'..' component"};
    parts.emplace_back(part);
  }
  return parts;
}

std::string join(const std::vector<std::string>& parts, std::size_t count) {
  std::string out;
  for (std::size_t i = 0; i < count; ++i) out += (i ? "/" : "") + parts[i];
  return out;
}

bool is_overlay_xattr(std::string_view name) {
  return name.starts_with("trusted.overlay.") || name.starts_with("user.overlay.");
}

class SafeExtractor {
 public:
  SafeExtractor(const std::string& dest, const ExtractOptions& options);
  ExtractStats run(archive* a);

 private:
  UniqueFd open_parent(const std::vector<std::string>& parts, bool create);
  void extract(archive* a, archive_entry* e, const std::vector<std::string>& parts);
  void clear_name(int parent, const std::string& name, bool keep_dir);
  void extract_file(archive* a, archive_entry* e, int parent, const std::string& name, const Attributes& attrs);
  void extract_hardlink(archive_entry* e, int parent, const std::string& name);
  void extract_whiteout(int parent, const std::string& name);
  void set_owner_and_time(int parent, const std::string& name, const Attributes& attrs);
  void apply_dir_attributes();
  Attributes attributes_of(archive_entry* e) const;

  void count_bytes(std::uint64_t bytes, const std::string& name);

  std::string dest_;
  UniqueFd root_;
  std::uint64_t max_bytes_;
  WhiteoutHandling whiteouts_;
  bool preserve_owner_;
  bool drop_setid_bits_;
  std::string opaque_xattr_;
  ExtractStats stats_;
  std::map<std::string, Attributes> dirs_;  // applied last, deepest first
};

// EINVAL from chown: the id has no mapping in this user namespace (rootless without subordinate ids).
Error chown_error(const std::string& name, uid_t uid, gid_t gid) {
  int err = errno;
  std::string step = "chown " + name + " to " + std::to_string(uid) + ":" + std::to_string(gid);
  if (err == EINVAL && runtime::rootless_single_id())
    step += " (rootless without an /etc/subuid and /etc/subgid range only uid and gid 0 exist; add one, e.g. "
            "`sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 $USER`)";
  return Error(err, step);
}

SafeExtractor::SafeExtractor(const std::string& dest, const ExtractOptions& options)
    : dest_(dest),
      root_(::open(dest.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)),
      max_bytes_(options.max_bytes.value_or(UINT64_MAX)),
      whiteouts_(options.whiteouts),
      preserve_owner_(options.preserve_owner.value_or(::geteuid() == 0)),
      drop_setid_bits_(options.drop_setid_bits),
      // trusted.* needs CAP_SYS_ADMIN on the host; in rootless mode overlayfs reads user.*
      // (its `userxattr` option).
      opaque_xattr_(options.opaque_xattr.value_or(::geteuid() == 0 && !runtime::rootless()
                                                      ? "trusted.overlay.opaque"
                                                      : "user.overlay.opaque")) {
  if (!root_) throw Error(errno, "open extraction root " + dest);
}

ExtractStats SafeExtractor::run(archive* a) {
  archive_entry* e = nullptr;
  for (;;) {
    int r = libarchive().read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw archive_error(a, "read tar entry");
    if (stats_.entries + stats_.rejected.size() >= kMaxEntries)
      throw Error::invalid("extract into " + dest_ + ": more than " + std::to_string(kMaxEntries) + " entries");
    const char* raw = libarchive().entry_pathname(e);
    try {
      extract(a, e, normalise(raw));
      ++stats_.entries;
    } catch (const Rejected& rejected) {
      stats_.rejected.push_back({raw != nullptr ? raw : "", rejected.reason});
    }
  }
  apply_dir_attributes();
  return std::move(stats_);
}

// The parent directory of parts, resolved inside the root; missing directories are created
// (tar entries may come without their parents).
UniqueFd SafeExtractor::open_parent(const std::vector<std::string>& parts, bool create) {
  std::size_t depth = parts.size() - 1;
  UniqueFd fd(openat2_in_root(root_.get(), join(parts, depth), O_RDONLY | O_DIRECTORY));
  if (fd || errno != ENOENT || !create) {
    if (!fd) throw Rejected{std::string("parent directory: ") + std::strerror(errno)};
    return fd;
  }
  UniqueFd dir(::dup(root_.get()));
  for (std::size_t i = 1; i <= depth; ++i) {
    UniqueFd next(openat2_in_root(root_.get(), join(parts, i), O_RDONLY | O_DIRECTORY));
    if (!next && errno == ENOENT) {
      if (::mkdirat(dir.get(), parts[i - 1].c_str(), 0755) != 0 && errno != EEXIST)
        throw Error(errno, "mkdir " + dest_ + "/" + join(parts, i));
      next.reset(openat2_in_root(root_.get(), join(parts, i), O_RDONLY | O_DIRECTORY));
    }
    if (!next) throw Rejected{std::string("parent directory: ") + std::strerror(errno)};
    dir = std::move(next);
  }
  return dir;
}

Attributes SafeExtractor::attributes_of(archive_entry* e) const {
  Attributes attrs;
  attrs.mode = libarchive().entry_perm(e) & (drop_setid_bits_ ? 01777 : 07777);
  attrs.uid = static_cast<uid_t>(libarchive().entry_uid(e));
  attrs.gid = static_cast<gid_t>(libarchive().entry_gid(e));
  attrs.mtime = {libarchive().entry_mtime(e), libarchive().entry_mtime_nsec(e)};
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  libarchive().entry_xattr_reset(e);
  while (libarchive().entry_xattr_next(e, &name, &value, &size) == ARCHIVE_OK) {
    // A layer must not forge overlayfs metadata (redirect, origin, opaque) of its own.
    if (is_overlay_xattr(name)) continue;
    if (drop_setid_bits_ && std::string_view(name) == "security.capability") continue;  // as setuid
    attrs.xattrs.emplace_back(name, std::string(static_cast<const char*>(value), size));
  }
  return attrs;
}

void SafeExtractor::extract(archive* a, archive_entry* e, const std::vector<std::string>& parts) {
  mode_t type = libarchive().entry_filetype(e);
  bool is_link = libarchive().entry_hardlink(e) != nullptr;
  if (parts.empty()) {
    if (type != AE_IFDIR || is_link) throw Rejected{"replaces the root with a non-directory"};
    // The root's mode and owner are not the tar's to set: a "./" entry of mode 0777 (or
    // setgid, or another owner) would make the container's "/" or the destination directory
    // of an ADD writable to everyone. Only its time is taken.
    Attributes attrs = attributes_of(e);
    struct stat st {};
    if (::fstat(root_.get(), &st) != 0) throw Error(errno, "stat " + dest_);
    attrs.mode = st.st_mode & 07777;
    attrs.uid = st.st_uid;
    attrs.gid = st.st_gid;
    attrs.xattrs.clear();
    dirs_[""] = std::move(attrs);
    return;
  }
  if (!is_link && (type == AE_IFCHR || type == AE_IFBLK)) throw Rejected{"device node dropped"};
  if (!is_link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK && type != AE_IFIFO)
    throw Rejected{"unsupported entry type"};
  const std::string& name = parts.back();
  UniqueFd parent = open_parent(parts, true);
  if (whiteouts_ == WhiteoutHandling::Overlay && name.starts_with(".wh."))
    return extract_whiteout(parent.get(), name);
  Attributes attrs = attributes_of(e);
  clear_name(parent.get(), name, type == AE_IFDIR && !is_link);
  if (is_link) return extract_hardlink(e, parent.get(), name);
  switch (type) {
    case AE_IFREG:
      return extract_file(a, e, parent.get(), name, attrs);
    case AE_IFDIR:
      if (::mkdirat(parent.get(), name.c_str(), 0700) != 0 && errno != EEXIST)
        throw Error(errno, "mkdir " + dest_ + "/" + join(parts, parts.size()));
      dirs_[join(parts, parts.size())] = std::move(attrs);
      return;
    case AE_IFLNK: {
      // The target is stored verbatim; it is only ever resolved inside the root. A tar symlink
      // header with an empty link name has none at all (libarchive returns null).
      const char* target = libarchive().entry_symlink(e);
      if (target == nullptr || *target == '\0') throw Rejected{"symlink without a target"};
      if (::symlinkat(target, parent.get(), name.c_str()) != 0)
        throw Rejected{std::string("symlink: ") + std::strerror(errno)};
      return set_owner_and_time(parent.get(), name, attrs);
    }
    default:  // AE_IFIFO
      if (::mknodat(parent.get(), name.c_str(), S_IFIFO | 0600, 0) != 0)
        throw Error(errno, "mkfifo " + join(parts, parts.size()));
      set_owner_and_time(parent.get(), name, attrs);
      if (::fchmodat(parent.get(), name.c_str(), attrs.mode, 0) != 0)
        throw Error(errno, "chmod " + join(parts, parts.size()));
      return;
  }
}

// A later entry replaces an earlier one of the same name, as tar does; a directory stays when
// the new entry is a directory too.
void SafeExtractor::clear_name(int parent, const std::string& name, bool keep_dir) {
  if (!is_single_name(name)) throw Rejected{"'" + name + "' is not a single entry"};
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    if (!keep_dir) remove_tree_at(parent, name);
    return;
  }
  if (::unlinkat(parent, name.c_str(), 0) != 0) throw Error(errno, "unlink " + name);
}

void SafeExtractor::count_bytes(std::uint64_t bytes, const std::string& name) {
  stats_.bytes += bytes;
  if (stats_.bytes > max_bytes_)
    throw Error::invalid("extract " + name + " into " + dest_ + ": the archive unpacks to more than " +
                         std::to_string(max_bytes_ >> 20) + " MiB (200 times its size): refused as a decompression bomb");
}

void SafeExtractor::extract_file(archive* a, archive_entry* e, int parent, const std::string& name,
                                 const Attributes& attrs) {
  UniqueFd fd(
      ::openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) throw Error(errno, "create " + name);
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  std::int64_t end = 0;
  for (;;) {
    int r = libarchive().read_data_block(a, &block, &size, &offset);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw archive_error(a, "read data of " + name);
    if (offset < end) throw Rejected{"data blocks out of order"};
    // Holes count: a 10 KB tar must not declare a 4 GiB sparse file into the store.
    count_bytes(static_cast<std::uint64_t>(offset - end) + size, name);
    if (::lseek(fd.get(), offset, SEEK_SET) < 0) throw Error(errno, "seek " + name);
    write_all(fd.get(), block, size, "write " + name);
    end = offset + static_cast<std::int64_t>(size);
  }
  // A sparse file ending in a hole has no block at its end: its size is the entry's.
  std::int64_t size_of_entry = libarchive().entry_size_is_set(e) ? libarchive().entry_size(e) : 0;
  if (size_of_entry > end) count_bytes(static_cast<std::uint64_t>(size_of_entry - end), name);
  if (::ftruncate(fd.get(), std::max<std::int64_t>({end, size_of_entry, 0})) != 0)
    throw Error(errno, "truncate " + name);
  // chown before chmod: chown clears setuid/setgid bits.
  if (preserve_owner_ && ::fchown(fd.get(), attrs.uid, attrs.gid) != 0)
    throw chown_error(name, attrs.uid, attrs.gid);
  if (::fchmod(fd.get(), attrs.mode) != 0) throw Error(errno, "chmod " + name);
  for (const auto& [key, value] : attrs.xattrs)
    (void)::fsetxattr(fd.get(), key.c_str(), value.data(), value.size(),
                      0);  // best effort: EPERM/ENOTSUP
  const timespec times[2] = {attrs.mtime, attrs.mtime};
  if (::futimens(fd.get(), times) != 0) throw Error(errno, "set times of " + name);
}

void SafeExtractor::extract_hardlink(archive_entry* e, int parent, const std::string& name) {
  std::vector<std::string> target = normalise(libarchive().entry_hardlink(e));
  if (target.empty()) throw Rejected{"hardlink to the root"};
  UniqueFd target_parent = open_parent(target, false);
  struct stat st {};
  if (::fstatat(target_parent.get(), target.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    throw Rejected{"hardlink target missing"};
  if (S_ISDIR(st.st_mode)) throw Rejected{"hardlink to a directory"};
  // No AT_SYMLINK_FOLLOW: a link to a symlink links the symlink, not what it points at.
  if (::linkat(target_parent.get(), target.back().c_str(), parent, name.c_str(), 0) != 0)
    throw Rejected{std::string("hardlink: ") + std::strerror(errno)};
}

// OCI whiteouts -> overlayfs whiteouts (Documentation/filesystems/overlayfs.rst).
void SafeExtractor::extract_whiteout(int parent, const std::string& name) {
  if (name == ".wh..wh..opq") {
    if (::fsetxattr(parent, opaque_xattr_.c_str(), "y", 1, 0) != 0)
      throw Error(errno, "set " + opaque_xattr_);
    return;
  }
  std::string hidden = name.substr(4);
  if (hidden.starts_with(".wh.")) return;  // aufs metadata (.wh..wh.plnk): ignored
  // ".wh.." and ".wh..." name "." and "..": the layer's own directory and its parent, i.e. the
  // whole store of unpacked layers. A whiteout hides one entry of its directory, nothing else.
  if (!is_single_name(hidden)) throw Rejected{"whiteout of '" + hidden + "' is not of a single entry"};
  clear_name(parent, hidden, false);
  if (::mknodat(parent, hidden.c_str(), S_IFCHR, makedev(0, 0)) != 0)
    throw Error(errno, "whiteout " + hidden);
}

void SafeExtractor::set_owner_and_time(int parent, const std::string& name,
                                       const Attributes& attrs) {
  if (preserve_owner_ &&
      ::fchownat(parent, name.c_str(), attrs.uid, attrs.gid, AT_SYMLINK_NOFOLLOW) != 0)
    throw chown_error(name, attrs.uid, attrs.gid);
  const timespec times[2] = {attrs.mtime, attrs.mtime};
  if (::utimensat(parent, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0)
    throw Error(errno, "set times of " + name);
}

// Directories get their mode and mtime after their contents were written (which changes the
// mtime and may need the write bit), deepest first.
void SafeExtractor::apply_dir_attributes() {
  std::vector<const std::pair<const std::string, Attributes>*> order;
  for (const auto& dir : dirs_) order.push_back(&dir);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return std::count(a->first.begin(), a->first.end(), '/') >
           std::count(b->first.begin(), b->first.end(), '/');
  });
  for (const auto* dir : order) {
    const Attributes& attrs = dir->second;
    UniqueFd fd(openat2_in_root(root_.get(), dir->first, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
    if (!fd) continue;  // replaced by a later entry
    if (preserve_owner_ && ::fchown(fd.get(), attrs.uid, attrs.gid) != 0)
      throw chown_error(dir->first, attrs.uid, attrs.gid);
    if (::fchmod(fd.get(), attrs.mode) != 0) throw Error(errno, "chmod " + dir->first);
    for (const auto& [key, value] : attrs.xattrs)
      (void)::fsetxattr(fd.get(), key.c_str(), value.data(), value.size(), 0);
    const timespec times[2] = {attrs.mtime, attrs.mtime};
    if (::futimens(fd.get(), times) != 0) throw Error(errno, "set times of " + dir->first);
  }
}

}  // namespace

ExtractStats extract_layer(const std::string& archive_path, const std::string& dest_dir,
                           const ExtractOptions& options) {
  ArchiveReader a = open_tar_reader(archive_path);
  ExtractOptions bounded = options;
  if (!bounded.max_bytes) bounded.max_bytes = decompressed_limit_of(archive_path);
  SafeExtractor extractor(dest_dir, bounded);
  return extractor.run(a.get());
}

}  // namespace sandcell::rootfs_builder
