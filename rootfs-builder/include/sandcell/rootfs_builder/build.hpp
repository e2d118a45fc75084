#pragma once
// `sandcell build`: a Dockerfile and a context directory → an image in the store. RUN steps run
// in the sandcell runtime (the same isolation as `sandcell run`, with Docker's default
// capabilities and, by default, the host's network as `docker build --network host` does);
// COPY and ADD are done by sandcell itself. Each step's result is cached by its key (see
// build_cache.hpp); with SOURCE_DATE_EPOCH set the image digest is reproducible.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {

struct BuildOptions {
  std::string context_dir = ".";
  std::string dockerfile;  // empty: <context>/Dockerfile
  // `dockerfile` is a path inside the context, resolved inside it as the context's own
  // Dockerfile is (the Docker API's `dockerfile=`: a client's name, never a host path).
  bool dockerfile_in_context = false;
  std::string tag;         // NAME[:TAG]; empty: the image is stored untagged
  BuildArgs build_args;
  std::string target;      // stage name or index; empty: the last stage
  bool no_cache = false;
  // Added to the final image's config labels (the Docker API's `labels=`).
  std::map<std::string, std::string> labels;
  bool host_network = true;  // false: RUN steps get `--net none`
  // A RUN step's memory limit, which also bounds what it may write: its writable layer is a
  // tmpfs of this size whose pages are charged to the step's memory cgroup.
  std::uint64_t memory_bytes = 8ull << 30;
  // What a RUN step may write (`--disk`): the size of that tmpfs, when smaller than memory_bytes;
  // past it the step's writes fail with ENOSPC and the build says the bound was reached.
  std::optional<std::uint64_t> disk_bytes;
  // Step lines ("[2/5] RUN make") and RUN output; default: stderr.
  std::function<void(const std::string&)> progress;
  // FROM an image the store lacks: fetches it (`sandcell pull`) and returns the name the store
  // now has it under. Unset: such a FROM is an error.
  std::function<std::string(const std::string& image)> fetch_image;
};

struct BuildResult {
  std::string manifest_digest;
  std::string image_id;  // the config digest, as docker shows it
  int steps = 0;
  int cached_steps = 0;
};

BuildResult build_image(ImageStore& store, const BuildOptions& options);

}  // namespace sandcell::rootfs_builder
