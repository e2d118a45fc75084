#pragma once
// Directory trees the store owns: temp dirs removed on scope exit, fd-relative recursive
// removal, atomic file writes (temp + fsync + rename) and directory fsync.
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/runtime/owned_temp_dir.hpp"

namespace sandcell::rootfs_builder {

// The names in a directory except "." and "..", sorted bytewise. list_dir_fd takes over fd.
std::vector<std::string> list_dir(const std::string& path);
std::vector<std::string> list_dir_fd(int fd, const std::string& what);

// openat2(root, path, flags | O_CLOEXEC) with RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: path
// resolves as if root were "/", symlinks included. Returns the fd or -1 with errno set.
int openat2_in_root(int root, const std::string& path, int flags);

// A single directory entry name: not empty, not "." or "..", no '/' and no NUL. Every name that
// input supplies (a heredoc, a URL's last segment, a whiteout's target) is checked with this
// before it is used under a directory fd.
bool is_single_name(std::string_view name);

// Every path below the directory fd (not itself), relative to it ("a", "a/b"), in walk order
// (a directory before its contents). Symlinks are listed, never followed; fd is borrowed.
// At most max_entries: a context or image with more is refused rather than walked forever.
std::vector<std::string> list_tree_at(int dir_fd, const std::string& what, std::size_t max_entries = 1'000'000);

// Removes name under the directory fd parent, recursively, never following symlinks.
void remove_tree_at(int parent, const std::string& name);
// Removes path recursively if it exists.
void remove_tree(const std::string& path);

// A fresh directory "<parent>/<prefix>XXXXXX", removed with its contents on scope exit
// unless released; held while its owner lives (runtime::OwnedTempDir), so that what a killed
// process left is told apart from what a live one is using.
class TempDir {
 public:
  TempDir(const std::string& parent, const std::string& prefix) : dir_(parent, prefix) {}
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return dir_.path(); }
  void release() { dir_.release(); }

 private:
  runtime::OwnedTempDir dir_;
};

void fsync_path(const std::string& path);  // a file or a directory
// Writes data to a temp file in tmp_dir, fsyncs it, renames it to path, fsyncs path's dir:
// a crash leaves either the old file or the new one, never half of it.
void write_file_atomic(const std::string& tmp_dir, const std::string& path, std::string_view data);
// Renames a finished temp file into place and makes the rename durable.
void rename_durably(const std::string& from, const std::string& to);
std::string read_file(const std::string& path);
std::string parent_dir(const std::string& path);

}  // namespace sandcell::rootfs_builder
