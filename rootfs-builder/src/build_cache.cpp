#include "build_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/rootfs_builder/digest.hpp"
#include "fs_tree.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

std::string cache_path(ImageStore& store, const std::string& key) {
  return store.root() + "/build-cache/" + digest_hex(key);
}

void hash_entry(Sha256& hash, const fs::path& path, const std::string& relative) {
  struct stat st {};
  if (lstat(path.c_str(), &st) < 0) throw Error(errno, "stat " + path.string());
  hash.update(relative + '\0' + std::to_string(st.st_mode) + ':' + std::to_string(st.st_uid) + ':' +
              std::to_string(st.st_gid) + '\0');
  if (S_ISLNK(st.st_mode)) {
    hash.update(fs::read_symlink(path).string());
  } else if (S_ISREG(st.st_mode)) {
    hash.update(sha256_file_digest(path));
  }
}

}  // namespace

std::string step_key(const std::string& parent_key, const std::vector<std::string>& parts) {
  Sha256 hash;
  hash.update(parent_key);
  for (const std::string& part : parts) {
    hash.update("\n", 1);
    hash.update(std::to_string(part.size()) + ":" + part);  // length-prefixed: no ambiguity
  }
  return hash.finish();
}

std::string content_hash(const std::string& root) {
  Sha256 hash;
  hash_entry(hash, root, ".");
  if (!fs::is_directory(fs::symlink_status(root))) return hash.finish();
  // Listed by fd, not fs::relative (which follows a staged symlink out to the host path it
  // names, and would hash that, or read /dev/zero forever).
  UniqueFd dir(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw Error(errno, "open " + root);
  std::vector<std::string> entries = list_tree_at(dir.get(), root);
  std::sort(entries.begin(), entries.end());
  for (const std::string& entry : entries) hash_entry(hash, fs::path(root) / entry, entry);
  return hash.finish();
}

std::optional<CachedStep> cache_lookup(ImageStore& store, const std::string& key) {
  std::ifstream in(cache_path(store, key));
  if (!in) return std::nullopt;
  auto record = parse_bounded_json_or_discarded(in);
  if (record.is_discarded()) return std::nullopt;
  CachedStep step;
  step.diff_id = record.value("diff_id", "");
  if (record.contains("layer")) {
    Descriptor layer{.media_type = record["layer"]["mediaType"], .digest = record["layer"]["digest"],
                     .size = record["layer"]["size"], .annotations = {}};
    if (!store.has_blob(layer.digest)) return std::nullopt;  // pruned since: not a hit
    step.layer = layer;
  }
  return step;
}

void cache_record(ImageStore& store, const std::string& key, const CachedStep& step) {
  nlohmann::json record = {{"diff_id", step.diff_id}};
  if (step.layer)
    record["layer"] = {{"mediaType", step.layer->media_type}, {"digest", step.layer->digest},
                       {"size", step.layer->size}};
  std::string path = cache_path(store, key);
  fs::create_directories(fs::path(path).parent_path());
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::ofstream(tmp) << record.dump();
  check(rename(tmp.c_str(), path.c_str()), "record build cache entry " + path);
}

}  // namespace sandcell::rootfs_builder
