// Store verbs: images, inspect, tag, rmi, prune, save, load, import.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "sandcell/rootfs_builder/archive_io.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::cli {
namespace {

using rootfs_builder::ImageStore;

int list_images(const GlobalOptions& g) {
  ImageStore store(g.store_root());
  std::cout << std::left << std::setw(40) << "NAME" << std::setw(15) << "IMAGE ID" << std::setw(12) << "SIZE"
            << "CREATED\n";
  for (const auto& image : store.list()) {
    std::string id = rootfs_builder::digest_hex(image.config_digest).substr(0, 12);
    std::cout << std::setw(40) << image.name << std::setw(15) << id << std::setw(12)
              << (std::to_string(image.size / 1024) + "KiB") << image.created << "\n";
  }
  return 0;
}

int inspect(const GlobalOptions& g, const std::vector<std::string>& names) {
  ImageStore store(g.store_root());
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& name : names) {
    auto record = store.resolve(name);
    all.push_back({{"Name", record.name}, {"Digest", record.manifest_digest},
                   {"Id", record.manifest.config.digest},
                   {"Manifest", parse_bounded_json(record.manifest_json)},
                   {"Config", parse_bounded_json(record.config_json)}});
  }
  std::cout << all.dump(2) << "\n";
  return 0;
}

void add_simple(CLI::App& app, Action& action, const Globals& g) {
  app.add_subcommand("images", "List the images in the store")->callback([&action, g] {
    action = [g] { return list_images(*g); };
  });
  auto names = std::make_shared<std::vector<std::string>>();
  auto* inspect_cmd = app.add_subcommand("inspect", "Print images' manifests and configs as JSON");
  inspect_cmd->add_option("image", *names, "Image names, digests or IDs")->required();
  inspect_cmd->callback([&action, g, names] { action = [g, names] { return inspect(*g, *names); }; });
  auto pair = std::make_shared<std::vector<std::string>>();
  auto* tag_cmd = app.add_subcommand("tag", "Give an image another name: tag SOURCE TARGET");
  tag_cmd->add_option("names", *pair, "SOURCE TARGET")->required()->expected(2);
  tag_cmd->callback([&action, g, pair] {
    action = [g, pair] { ImageStore(g->store_root()).tag((*pair)[0], (*pair)[1]); return 0; };
  });
  auto doomed = std::make_shared<std::vector<std::string>>();
  auto* rmi = app.add_subcommand("rmi", "Remove image names (blobs go at the next prune)");
  rmi->add_option("image", *doomed, "Image names")->required();
  rmi->callback([&action, g, doomed] {
    action = [g, doomed] {
      ImageStore store(g->store_root());
      for (const auto& name : *doomed) store.remove(name), std::cout << "untagged " << name << "\n";
      return 0;
    };
  });
  app.add_subcommand("prune", "Delete blobs and unpacked layers no image name uses")->callback([&action, g] {
    action = [g] {
      auto stats = ImageStore(g->store_root()).prune();
      std::cout << "removed " << stats.blobs_removed << " blobs, " << stats.layers_removed
                << " unpacked layers, " << stats.bytes_freed << " bytes\n";
      return 0;
    };
  });
}

void add_archives(CLI::App& app, Action& action, const Globals& g) {
  auto save = std::make_shared<std::pair<std::string, std::string>>("", "docker-archive");
  auto save_names = std::make_shared<std::vector<std::string>>();
  auto* save_cmd = app.add_subcommand("save", "Write images to a docker-archive or oci-archive tar");
  save_cmd->add_option("-o,--output", save->first, "Output file")->required();
  save_cmd->add_option("--format", save->second, "docker-archive or oci-archive [docker-archive]");
  save_cmd->add_option("image", *save_names, "Image names")->required();
  save_cmd->callback([&action, g, save, save_names] {
    action = [g, save, save_names] {
      ImageStore store(g->store_root());
      rootfs_builder::save_images(store, *save_names, save->first, rootfs_builder::parse_archive_format(save->second));
      return 0;
    };
  });
  auto input = std::make_shared<std::string>();
  auto* load = app.add_subcommand("load", "Load images from a docker save (any layout) or OCI archive");
  load->add_option("-i,--input", *input, "Archive file")->required()->check(CLI::ExistingFile);
  load->callback([&action, g, input] {
    action = [g, input] {
      ImageStore store(g->store_root());
      for (const auto& name : rootfs_builder::load_images(store, *input)) std::cout << "loaded " << name << "\n";
      return 0;
    };
  });
  auto import_args = std::make_shared<std::vector<std::string>>();
  auto* import_cmd = app.add_subcommand("import", "Make a one-layer image from a rootfs tar: import ROOTFS.tar NAME");
  import_cmd->add_option("args", *import_args, "ROOTFS.tar NAME")->required()->expected(2);
  import_cmd->callback([&action, g, import_args] {
    action = [g, import_args] {
      ImageStore store(g->store_root());
      std::cout << rootfs_builder::import_rootfs(store, (*import_args)[0], (*import_args)[1]) << "\n";
      return 0;
    };
  });
}

}  // namespace

void add_image_commands(CLI::App& app, Action& action, const Globals& globals) {
  add_simple(app, action, globals);
  add_archives(app, action, globals);
}

}  // namespace sandcell::cli
