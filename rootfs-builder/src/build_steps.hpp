#pragma once
// The steps of a build stage, one file each: RUN (build_run_step.cpp), COPY/ADD
// (build_copy_step.cpp), and the instructions that only change the config
// (build_config_steps.cpp).
#include <string>

#include "build_cache.hpp"
#include "build_state.hpp"
#include "sandcell/rootfs_builder/dockerfile.hpp"
#include "sandcell/runtime/owned_temp_dir.hpp"

namespace sandcell::rootfs_builder {

// A temporary directory under the store's tmp/, removed with everything in it on scope exit,
// and held (flock) while the builder lives so that gc can tell a killed builder's from a live one.
class ScratchDir {
 public:
  ScratchDir(const std::string& parent, const std::string& tag) : dir_(parent, tag + "-") {}
  const std::string& path() const { return dir_.path(); }

 private:
  runtime::OwnedTempDir dir_;
};

CachedStep run_step(BuildContext& ctx, const ImageState& state, const StageScope& scope,
                    const Instruction& ins, const std::string& where);

// COPY and ADD. `words` are the instruction's words after expansion (sources then destination);
// `from` is the stage or image of --from, or null for the build context. `cached` gets the
// hash of the staged sources and the destination, and returns the cached step on a hit: then
// no layer is made.
CachedStep copy_step(BuildContext& ctx, const ImageState& state, const Instruction& ins,
                     const std::vector<std::string>& words, const ImageState* from, const std::string& where,
                     const std::function<std::optional<CachedStep>(const std::string& sources_hash)>& cached);

// A directory tree as a layer blob in the store; an empty directory gives no layer.
CachedStep layer_from_directory(BuildContext& ctx, const std::string& dir);

// ENV ARG WORKDIR USER ENTRYPOINT CMD LABEL EXPOSE VOLUME SHELL STOPSIGNAL HEALTHCHECK ONBUILD
// MAINTAINER. Returns false for an instruction that is not one of these.
bool apply_config_step(ImageState& state, StageScope& scope, const BuildContext& ctx,
                       const Instruction& ins, const std::string& where);

// The stage's variables for $VAR expansion: ENV first, then its ARGs.
VariableLookup stage_lookup(const ImageState& state, const StageScope& scope);

// $VAR expansion with the stage's ENV first, then its ARGs.
std::string expand(const BuildContext& ctx, const ImageState& state, const StageScope& scope,
                   const std::string& word, const std::string& where);

}  // namespace sandcell::rootfs_builder
