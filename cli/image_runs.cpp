// sandcell-images: `run IMAGE` through the image store.
#include "commands.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/image_spec.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::cli {

void enable_image_runs(const Globals& globals) {
  GlobalOptions* g = globals.get();
  globals->apply_image = [g](const std::string& image, const std::vector<std::string>& command,
                             const std::optional<std::string>& user, const std::optional<std::string>& workdir,
                             runtime::Spec& spec) -> std::shared_ptr<void> {
    auto store = std::make_shared<rootfs_builder::ImageStore>(g->store_root());
    // Held from the resolve on: no prune between it and the run.
    auto lease = std::make_shared<rootfs_builder::ImageStore::Lease>(store->lease());
    rootfs_builder::ImageRecord record;
    try {
      record = store->resolve(image);
    } catch (const Error& missing) {
      // Only an image that is not here is pulled, as docker run does; one that is here but
      // broken is an error: a pull would fetch whatever the registry has under that name.
      if (!missing.not_found()) throw Error::invalid("image " + image + ": " + missing.what());
      try {
        record = store->resolve(image_fetcher(*g, false)(image));
      } catch (const Error& e) {
        throw Error::invalid(std::string(missing.what()) + "; pulling it failed: " + e.what());
      }
    }
    rootfs_builder::ImageRunRequest request{.command = command, .user = user, .workdir = workdir};
    rootfs_builder::apply_resolved_image(*store, image, record, request, spec);
    return std::make_shared<std::pair<decltype(store), decltype(lease)>>(store, lease);
  };
}

}  // namespace sandcell::cli
