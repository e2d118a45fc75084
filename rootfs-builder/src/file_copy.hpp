#pragma once
// Copies a file tree keeping what an image layer records: types, modes, owners, symlink targets
// (verbatim, never followed), file contents. Special files other than fifos are skipped.
#include <sys/types.h>

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

}  // namespace sandcell::rootfs_builder
