#pragma once
// Copies a file tree keeping what an image layer records: types, modes, owners, symlink targets
// (verbatim, never followed), file contents. Special files other than fifos are skipped.
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>

namespace sandcell::rootfs_builder {

struct CopyOwnership {
  std::optional<uid_t> uid;  // set: every copied entry gets this owner
  std::optional<gid_t> gid;
  std::optional<mode_t> mode;  // --chmod: applied to every copied entry
};

// Copies `source` (file, symlink or directory) to `destination` (which must not exist).
void copy_tree(const std::string& source, const std::string& destination, const CopyOwnership& owner = {});

// Copies the entry `name` of the directory fd `parent` the same way, reading only through
// *at() calls on fds: nothing below `parent` is ever followed out of it. `keep` (when set) is
// asked for every entry below `name` with its path relative to `parent`'s root as `prefix`
// names it; an entry it refuses is skipped with everything under it.
void copy_tree_at(int parent, const std::string& name, const std::string& destination, const CopyOwnership& owner,
                  const std::string& prefix = "", const std::function<bool(const std::string&)>& keep = {});

}  // namespace sandcell::rootfs_builder
