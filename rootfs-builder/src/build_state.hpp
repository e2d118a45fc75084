#pragma once
// What a build stage is while it is being built.
#include <map>
#include <string>
#include <vector>

#include "sandcell/rootfs_builder/build.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {

struct ImageState {
  ImageConfig config;
  std::vector<Descriptor> layers;  // bottom first, as in a manifest
  std::string cache_key;           // the chain key of the last step (build_cache.hpp)
};

// A stage's variables: ENV (persisted in the config) and ARG (build time only).
struct StageScope {
  std::map<std::string, std::string> args;  // declared ARGs that have a value
  bool cmd_set = false;                      // CMD given in this stage (ENTRYPOINT keeps it)
  std::map<std::string, std::string> env() const;
};

struct BuildContext {
  ImageStore& store;
  const BuildOptions& options;
  const Dockerfile& dockerfile;
  std::vector<std::string> context_files;  // relative paths, .dockerignore applied
  std::vector<ImageState> built_stages;    // by stage index, filled as stages finish
  int step = 0, total_steps = 0, cached = 0;
  void say(const std::string& line) const;
};

// The unpacked layer directories of an image state, topmost first (overlay lowerdir order).
std::vector<std::string> unpacked_layers_top_first(ImageStore& store, const ImageState& state);

// env of the config as a map, and back.
std::map<std::string, std::string> env_map(const std::vector<std::string>& env);
void set_env(ImageConfig& config, const std::string& key, const std::string& value);

}  // namespace sandcell::rootfs_builder
