// `sandcell pull`: manifest (through an index when there is one), config, then the layers in
// parallel. Nothing is tagged until every blob is verified and in the store; blobs are only
// ever renamed into place complete, so a failure leaves at most whole, unreferenced blobs
// (reused by the next pull, removed by prune).
#include <algorithm>
#include <map>
#include <set>

#include "blob_download.hpp"
#include "manifest_fetch.hpp"
#include "parallel_jobs.hpp"
#include "sandcell/rootfs_builder/registry.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"

namespace sandcell::rootfs_builder {
namespace {

bool is_known_layer(const std::string& media_type) {
  return media_type == media_type::kOciLayerGzip || media_type == media_type::kOciLayerZstd ||
         media_type == media_type::kOciLayer || media_type == media_type::kDockerLayerGzip;
}

FetchedManifest fetch_image_manifest(RegistrySession& session, HttpClient& client, const RegistryReference& ref,
                                     const std::string& platform) {
  FetchedManifest fetched = fetch_manifest(session, client, ref.repository, ref.tag_or_digest());
  if (!fetched.is_index()) return fetched;
  Descriptor chosen = select_platform(fetched, parse_platform(platform));
  fetched = fetch_manifest(session, client, ref.repository, chosen.digest);
  if (fetched.is_index()) throw Error::invalid(ref.familiar() + ": nested image indexes are not supported");
  return fetched;
}

ImageConfig fetch_config(RegistrySession& session, HttpClient& client, ImageStore& store, const std::string& repository,
                         const Manifest& manifest, PullResult& result) {
  if (store.has_blob(manifest.config.digest)) {
    ++result.blobs_present;
  } else {
    TransferProgress quiet(false, "", 0);
    download_blob(session, client, store, repository, manifest.config, "", quiet);
    ++result.blobs_fetched;
  }
  ImageConfig config = config_from_json(store.read_blob(manifest.config.digest));
  if (config.diff_ids.size() != manifest.layers.size())
    throw Error::invalid("config " + manifest.config.digest + " lists " + std::to_string(config.diff_ids.size()) +
                         " DiffIDs for " + std::to_string(manifest.layers.size()) + " layers");
  return config;
}

// Every layer's DiffID as the config lists it, also for a digest the manifest repeats and for
// blobs the store had before: the unpacked layer is named by the DiffID and shared by every image
// that lists it. (download_blob checked the ones it fetched, at their first index.)
void verify_diff_ids(ImageStore& store, const Manifest& manifest, const ImageConfig& config,
                     const std::vector<std::size_t>& downloaded) {
  std::map<std::string, std::string> diff_id_of;  // blob digest -> its DiffID
  for (std::size_t i : downloaded) diff_id_of[manifest.layers[i].digest] = config.diff_ids[i];
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const std::string& digest = manifest.layers[i].digest;
    auto known = diff_id_of.find(digest);
    if (known == diff_id_of.end())
      known = diff_id_of.emplace(digest, layer_diff_id(store.blob_path(digest))).first;
    if (known->second != config.diff_ids[i])
      throw Error::invalid("layer " + std::to_string(i) + " (" + digest + ") has DiffID " + known->second +
                           ", but the config lists " + config.diff_ids[i]);
  }
}

// The blobs the store lacks must all fit before the first is fetched: each download checks its
// own size too, but the layers arrive in parallel, and layers that each fit can together fill
// the disk half-way.
void require_room(const ImageStore& store, const Manifest& manifest, const FetchedManifest& fetched,
                  const std::string& name) {
  std::set<std::string> counted;
  uint64_t bytes = fetched.bytes.size();
  auto count = [&](const Descriptor& blob) {
    if (counted.insert(blob.digest).second && !store.has_blob(blob.digest))
      bytes += static_cast<uint64_t>(std::max<std::int64_t>(blob.size, 0));
  };
  count(manifest.config);
  for (const Descriptor& layer : manifest.layers) count(layer);
  store.require_free(bytes, "pulling " + name);
}

// Every distinct layer once, in the manifest's order: there already, or to be fetched.
void announce_layers(const Manifest& manifest, const std::vector<std::size_t>& missing, const PullOptions& options) {
  if (!options.on_layer) return;
  std::set<std::string> told;
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const Descriptor& layer = manifest.layers[i];
    if (!told.insert(layer.digest).second) continue;
    bool fetched = std::find(missing.begin(), missing.end(), i) != missing.end();
    options.on_layer({.phase = fetched ? LayerProgress::Phase::Waiting : LayerProgress::Phase::Present,
                      .digest = layer.digest, .done = 0, .total = layer.size});
  }
}

// One layer, its bytes counted in the pull's whole and, for on_layer, on their own.
void download_layer(RegistrySession& session, HttpClient& client, ImageStore& store, const std::string& repository,
                    const Descriptor& layer, const std::string& diff_id, TransferProgress& whole,
                    const PullOptions& options) {
  if (!options.on_layer) {
    download_blob(session, client, store, repository, layer, diff_id, whole);
    return;
  }
  {
    TransferProgress mine(whole, layer.size, [&options, &layer](std::int64_t done, std::int64_t total) {
      options.on_layer({.phase = LayerProgress::Phase::Downloading, .digest = layer.digest, .done = done, .total = total});
    });
    download_blob(session, client, store, repository, layer, diff_id, mine);
  }
  options.on_layer({.phase = LayerProgress::Phase::Downloaded, .digest = layer.digest, .done = layer.size,
                    .total = layer.size});
}

}  // namespace

PullResult pull_image(ImageStore& store, const std::string& reference, const PullOptions& options) {
  RegistryReference ref = parse_registry_reference(reference);
  RegistrySession session(ref.registry, ref.api_host(), options, {"repository:" + ref.repository + ":pull"});
  HttpClient client;
  FetchedManifest fetched = fetch_image_manifest(session, client, ref, options.platform);
  Manifest manifest = manifest_from_json(fetched.bytes);
  for (const Descriptor& layer : manifest.layers)
    if (!is_known_layer(layer.media_type))
      throw Error::invalid(ref.familiar() + ": layer " + layer.digest + " has unsupported media type " +
                           layer.media_type);
  ImageStore::Lease hold = store.lease();  // prune must not take blobs before the tag exists
  require_room(store, manifest, fetched, ref.familiar());
  PullResult result{.local_name = ref.familiar(), .manifest_digest = fetched.digest,
                    .image_id = manifest.config.digest};
  ImageConfig config = fetch_config(session, client, store, ref.repository, manifest, result);
  // An index was picked from by platform; a lone manifest must match a platform asked for.
  if (Platform wanted = parse_platform(options.platform); !options.platform.empty() &&
      (config.os != wanted.os || config.architecture != wanted.architecture))
    throw Error::invalid(ref.familiar() + " is for " + config.os + "/" + config.architecture + ", not " + wanted.str());

  std::vector<std::size_t> missing;
  std::set<std::string> seen;
  std::int64_t total = 0;
  for (std::size_t i = 0; i < manifest.layers.size(); ++i) {
    const Descriptor& layer = manifest.layers[i];
    // A repeated digest must name the same DiffID every time; a blob seen before is checked
    // against this image's DiffID below, as a downloaded one is while it arrives.
    if (!seen.insert(layer.digest).second) continue;
    if (store.has_blob(layer.digest)) {
      ++result.blobs_present;
      continue;
    }
    missing.push_back(i);
    total += layer.size;
  }
  announce_layers(manifest, missing, options);
  {
    TransferProgress progress(options.progress, "pulling " + ref.familiar(), total, options.on_progress);
    run_parallel(missing.size(), options.parallel, [&](std::size_t job, HttpClient& worker) {
      std::size_t i = missing[job];
      download_layer(session, worker, store, ref.repository, manifest.layers[i], config.diff_ids[i], progress, options);
    });
  }
  result.blobs_fetched += static_cast<int>(missing.size());
  verify_diff_ids(store, manifest, config, missing);
  store.put_blob(fetched.bytes, fetched.digest);
  if (ref.digest.empty()) {
    store.set_tag(result.local_name, fetched.digest);
  } else {
    // Untagged, found as name@digest; by the image manifest's digest when ref named an index.
    ref.digest = fetched.digest;
    result.local_name = ref.familiar();
  }
  return result;
}

}  // namespace sandcell::rootfs_builder
