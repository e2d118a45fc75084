#pragma once
// Running an image: its config (Entrypoint, Cmd, Env, WorkingDir, User) and its layers, unpacked
// once per diff_id and stacked read-only, become a runtime::Spec. A run copies nothing.
#include <optional>
#include <string>
#include <vector>

#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::rootfs_builder {

struct ImageRunRequest {
  std::vector<std::string> command;   // replaces the image's Cmd when not empty
  std::optional<std::string> user;    // replaces User: NAME|UID[:GROUP|GID], names from the image
  std::optional<std::string> workdir; // replaces WorkingDir
};

// Fills spec.rootfs_layers, args, env (image Env over the spec's defaults), cwd, uid, gid and
// groups. Hold the returned lease for as long as the run uses the layers (prune waits for it).
ImageStore::Lease apply_image(ImageStore& store, const std::string& image, const ImageRunRequest& request,
                              runtime::Spec& spec);

// The same for an image the caller resolved itself, while holding store.lease() (taken before
// the resolve, so that no prune comes between): a caller that had to resolve the name anyway
// (to pull it if missing, to check a skill is built) does not read and check the manifest and
// config twice. `image` names it in messages.
void apply_resolved_image(ImageStore& store, const std::string& image, const ImageRecord& record,
                          const ImageRunRequest& request, runtime::Spec& spec);

}  // namespace sandcell::rootfs_builder
