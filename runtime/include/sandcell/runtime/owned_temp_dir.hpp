#pragma once
// A temporary directory that says whether its owner is alive: the owner holds an flock on it
// for as long as it lives, so a builder that was killed (SIGKILL, a crash) leaves a directory
// nobody holds, which `sandcell gc` and `sandcell prune` remove. Removed by the destructor on
// every other way out, the error paths included.
#include <chrono>
#include <string>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell::runtime {

class OwnedTempDir {
 public:
  // parent/<prefix>XXXXXX, mode 0700, created with parent if missing.
  OwnedTempDir(const std::string& parent, const std::string& prefix);
  ~OwnedTempDir();
  OwnedTempDir(const OwnedTempDir&) = delete;
  OwnedTempDir& operator=(const OwnedTempDir&) = delete;
  const std::string& path() const { return path_; }
  void release() { path_.clear(); }  // it was renamed into place: nothing to remove

 private:
  std::string path_;
  UniqueFd lock_;
};

// Removes the directories directly under `parent` that no live owner holds and that are older
// than `min_age` (an owner takes its lock right after mkdtemp). Files are left alone. Returns
// the paths removed.
std::vector<std::string> remove_abandoned_temp_dirs(const std::string& parent,
                                                    std::chrono::seconds min_age = std::chrono::seconds(60));

}  // namespace sandcell::runtime
