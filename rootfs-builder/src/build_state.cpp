#include "build_state.hpp"

#include <stdlib.h>

#include <filesystem>
#include <iostream>

#include "build_steps.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {

std::map<std::string, std::string> StageScope::env() const { return args; }

void BuildContext::say(const std::string& line) const {
  if (options.progress) options.progress(line);
  else std::cerr << line << std::endl;
}

std::vector<std::string> unpacked_layers_top_first(ImageStore& store, const ImageState& state) {
  std::vector<std::string> dirs;
  for (size_t i = state.layers.size(); i-- > 0;)
    dirs.push_back(store.unpacked_layer(state.config.diff_ids.at(i), state.layers[i]));
  return dirs;
}

std::map<std::string, std::string> env_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> map;
  for (const std::string& entry : env) {
    auto eq = entry.find('=');
    if (eq != std::string::npos) map[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return map;
}

void set_env(ImageConfig& config, const std::string& key, const std::string& value) {
  for (std::string& entry : config.config.env)
    if (entry.rfind(key + "=", 0) == 0) {
      entry = key + "=" + value;
      return;
    }
  config.config.env.push_back(key + "=" + value);
}

}  // namespace sandcell::rootfs_builder
