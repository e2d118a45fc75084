#pragma once
// The build cache: a step's key is the parent's key, the instruction (after expansion), the
// build args in scope and, for COPY/ADD, a hash of the sources' names, modes, owners and
// contents (not mtimes). <root>/build-cache/<key> records the layer the step produced, so a hit
// reuses it without running anything.
#include <optional>
#include <string>
#include <vector>

#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {

struct CachedStep {
  std::optional<Descriptor> layer;  // nullopt: the step changed no file
  std::string diff_id;
};

std::string step_key(const std::string& parent_key, const std::vector<std::string>& parts);

// A hash of a directory tree or file: relative names, types, modes, owners, symlink targets and
// file contents, walked in sorted order.
std::string content_hash(const std::string& path);

std::optional<CachedStep> cache_lookup(ImageStore& store, const std::string& key);
void cache_record(ImageStore& store, const std::string& key, const CachedStep& step);

}  // namespace sandcell::rootfs_builder
