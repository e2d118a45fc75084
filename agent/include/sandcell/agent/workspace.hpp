#pragma once
// The host directory a code run sees as /workspace. The sandboxed program can plant anything in
// it (symlinks to /etc/shadow, FIFOs, hard links, deep trees), and sandcell touches it as root on
// the host, so every access goes through the directory's fd with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): no path the program made can lead outside, and only
// regular files are read, with a size bound.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::agent {

struct WorkspaceFile {
  std::string path{};      // "/workspace/out/figure-1.png"
  std::string mime{};
  uint64_t size = 0;
  std::optional<std::string> content{};  // the bytes, when within the inline bound
  std::string note{};    // why content is missing ("larger than 1048576 bytes", "not a regular file")
};

// Where collection stops: a program may write millions of files or a 10 GB one.
struct CollectBounds {
  size_t max_files = 64;
  uint64_t max_inline_bytes = 1 << 20;       // per file
  uint64_t max_total_inline_bytes = 8 << 20;
  int max_depth = 8;
};

class Workspace {
 public:
  explicit Workspace(std::string host_dir);  // the directory must exist
  const std::string& host_dir() const { return host_dir_; }

  // "/workspace/a/b" or "a/b" → "a/b"; throws Error::invalid for "..", other absolute paths,
  // empty names.
  static std::string relative(const std::string& path);

  // Creates or replaces a regular file (parents made as needed). Refuses to write through a
  // symlink, into a FIFO or device, or to a file with other hard links.
  void write_file(const std::string& path, std::string_view content, mode_t mode = 0644);
  void make_dirs(const std::string& path);
  // Removes a file (not a directory) if it is there; never follows a symlink in the path.
  void remove_file(const std::string& path);
  // Takes away what would grant privilege on the host: setuid/setgid bits, file capabilities,
  // ACLs, device nodes (host_privilege_strip.hpp). Called before and after every phase.
  void strip_privileges() const;
  // A regular file's bytes, at most `max_bytes` (size says the whole size).
  WorkspaceFile read_file(const std::string& path, uint64_t max_bytes) const;
  // The first line of a regular file, or "" when it is missing.
  std::string read_small_text(const std::string& path) const;

  // Regular files under `dir` (recursively), keyed by path, with (mtime ns, size, inode): taken
  // before and after a run, the difference is what the run wrote.
  using Snapshot = std::map<std::string, std::tuple<int64_t, uint64_t, uint64_t>>;
  Snapshot snapshot(const std::string& dir, const CollectBounds& bounds) const;
  std::vector<WorkspaceFile> changed_files(const Snapshot& before, const Snapshot& after,
                                           const CollectBounds& bounds) const;

 private:
  std::string host_dir_;
  runtime::UniqueFd dir_;
};

// "image/png" for figure.png... by extension; "application/octet-stream" otherwise.
std::string mime_type(std::string_view path);

}  // namespace sandcell::agent
