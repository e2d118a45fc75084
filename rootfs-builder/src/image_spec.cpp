#include "sandcell/rootfs_builder/image_spec.hpp"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "sandcell/rootfs_builder/image_user.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::rootfs_builder {
namespace {

std::vector<std::string> command_of(const ContainerConfig& config, const std::vector<std::string>& override_cmd) {
  std::vector<std::string> args = config.entrypoint.value_or(std::vector<std::string>{});
  const std::vector<std::string>& cmd = override_cmd.empty() ? config.cmd.value_or(std::vector<std::string>{}) : override_cmd;
  args.insert(args.end(), cmd.begin(), cmd.end());
  return args;
}

}  // namespace

ImageStore::Lease apply_image(ImageStore& store, const std::string& image, const ImageRunRequest& request,
                              runtime::Spec& spec) {
  ImageStore::Lease lease = store.lease();
  ImageRecord record;
  try {
    record = store.resolve(image);
  } catch (const Error& e) {
    throw Error::invalid("image " + image + ": " + e.what() + " (`sandcell images` lists the store " + store.root() + ")");
  }
  apply_resolved_image(store, image, record, request, spec);
  return lease;
}

void apply_resolved_image(ImageStore& store, const std::string& image, const ImageRecord& record,
                          const ImageRunRequest& request, runtime::Spec& spec) {
  std::vector<std::string> layers = store.unpacked_layers(record);
  std::reverse(layers.begin(), layers.end());  // overlay wants the topmost lower first
  if (layers.empty()) throw Error::invalid("image " + image + " has no layers");
  spec.rootfs_layers = layers;
  const ContainerConfig& config = record.config.config;
  spec.args = command_of(config, request.command);
  if (spec.args.empty()) throw Error::invalid("image " + image + " has no Entrypoint or Cmd: give a command");
  // The image's entries replace the spec's (runtime::merge_env: linear, as an image may list 100k
  // entries; this was once quadratic, and an entry without '=' once erased every entry).
  runtime::merge_env(spec.env, config.env);
  spec.cwd = request.workdir.value_or(config.working_dir.empty() ? "/" : config.working_dir);
  std::string user = request.user.value_or(config.user);
  if (!user.empty()) {
    ResolvedUser resolved = resolve_user(user, layers);
    spec.uid = resolved.uid;
    spec.gid = resolved.gid;
    spec.additional_gids = resolved.additional_gids;
    // HOME follows the user, as Docker sets it, unless the image's Env set one.
    bool image_home = std::any_of(config.env.begin(), config.env.end(),
                                  [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
    if (!image_home) {
      std::erase_if(spec.env, [](const std::string& e) { return e.rfind("HOME=", 0) == 0; });
      spec.env.push_back("HOME=" + resolved.home);
    }
  }
}

}  // namespace sandcell::rootfs_builder
