#pragma once
// Looking at an image's filesystem through its unpacked layers (topmost first) without mounting
// it: what a path is, and where it leads once symlinks in its directories are followed inside
// the image.
#include <sys/stat.h>

#include <optional>
#include <string>
#include <vector>

namespace sandcell::rootfs_builder {

// lstat of `path` (absolute, inside the image) as the layer stack shows it; nullopt when
// absent or hidden by a whiteout.
std::optional<struct stat> image_lstat(const std::vector<std::string>& layers, const std::string& path);

// `path` with every symlink among its directories resolved inside the image (the last
// component is kept as it is). Used so that COPY to /lib/x on a merged-/usr image writes to
// /usr/lib/x instead of shadowing the /lib symlink with a directory.
std::string resolve_parents_in_image(const std::vector<std::string>& layers, const std::string& path);

}  // namespace sandcell::rootfs_builder
