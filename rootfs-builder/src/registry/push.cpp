// `sandcell push`: every blob first (skipped when the registry has it, mounted from the
// image's own repository when that is on the same registry, else uploaded), the manifest last
// with its own media type and bytes, so the registry never holds a manifest whose blobs are
// missing and the pushed digest is the local one.
#include <atomic>

#include "blob_upload.hpp"
#include "parallel_jobs.hpp"
#include "sandcell/rootfs_builder/registry.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"

namespace sandcell::rootfs_builder {
namespace {

// The repository to mount blobs from: where the image came from, when on the same registry.
std::string mount_source(const ImageRecord& image, const std::string& name, const RegistryReference& target) {
  for (const std::string& candidate : {image.name, name}) {
    try {
      RegistryReference source = parse_registry_reference(candidate);
      if (source.registry == target.registry && source.repository != target.repository) return source.repository;
    } catch (const Error&) {
      // a digest or image ID names no repository
    }
  }
  return "";
}

void put_manifest(RegistrySession& session, HttpClient& client, const RegistryReference& target,
                  const ImageRecord& image) {
  HttpResponse response = session.send(
      client, {.method = "PUT",
               .url = session.url("/v2/" + target.repository + "/manifests/" + target.tag),
               .headers = {"Content-Type: " + image.manifest.media_type},
               .body = image.manifest_json});
  if (response.status != 201) throw_registry_error("push manifest " + target.familiar(), response);
  std::string digest = response.header("docker-content-digest");
  if (!digest.empty() && digest != image.manifest_digest)
    throw Error::invalid("push " + target.familiar() + ": the registry stored the manifest as " + digest +
                         ", not as " + image.manifest_digest);
}

}  // namespace

PushResult push_image(ImageStore& store, const std::string& name, const std::string& reference,
                      const PushOptions& options) {
  ImageStore::Lease hold = store.lease();
  ImageRecord image = store.resolve(name);
  RegistryReference target = parse_registry_reference(reference);
  if (!target.digest.empty()) throw Error::invalid("push to a tag, not a digest: " + reference);
  std::string source = mount_source(image, name, target);
  std::vector<std::string> scopes{"repository:" + target.repository + ":pull,push"};
  if (!source.empty()) scopes.push_back("repository:" + source + ":pull");
  RegistrySession session(target.registry, target.api_host(), options, scopes);

  std::vector<Descriptor> blobs{image.manifest.config};
  std::int64_t total = image.manifest.config.size;
  for (const Descriptor& layer : image.manifest.layers) {
    bool duplicate = false;
    for (const Descriptor& b : blobs) duplicate = duplicate || b.digest == layer.digest;
    if (!duplicate) blobs.push_back(layer), total += layer.size;
  }
  std::vector<BlobPushOutcome> outcomes(blobs.size());
  // blobs[0] is the config; the layers' diff_ids by their blob's index.
  std::vector<std::string> diff_ids(blobs.size());
  for (std::size_t b = 1; b < blobs.size(); ++b)
    for (std::size_t l = 0; l < image.manifest.layers.size() && diff_ids[b].empty(); ++l)
      if (image.manifest.layers[l].digest == blobs[b].digest && l < image.config.diff_ids.size())
        diff_ids[b] = image.config.diff_ids[l];
  auto tell = [&](PushLayerProgress::Phase phase, std::size_t i, std::int64_t done) {
    options.on_layer({.phase = phase, .digest = blobs[i].digest, .diff_id = diff_ids[i], .done = done,
                      .total = blobs[i].size, .mounted_from = phase == PushLayerProgress::Phase::Mounted ? source : ""});
  };
  if (options.on_layer)
    for (std::size_t i = blobs.size(); i-- > 1;) tell(PushLayerProgress::Phase::Preparing, i, 0);
  {
    TransferProgress progress(options.progress, "pushing " + target.familiar(), total, options.on_progress);
    run_parallel(blobs.size(), options.parallel, [&](std::size_t i, HttpClient& client) {
      if (!options.on_layer || i == 0) {
        BlobUpload upload{.session = session, .store = store, .repository = target.repository, .mount_from = source,
                          .chunk_size = options.chunk_size, .progress = progress, .on_upload = {}};
        outcomes[i] = upload.push(client, blobs[i]);
        return;
      }
      std::atomic<bool> uploading = false;  // the layer's lines are Pushing only once bytes go
      {
        TransferProgress mine(progress, blobs[i].size, [&](std::int64_t done, std::int64_t) {
          if (uploading) tell(PushLayerProgress::Phase::Pushing, i, done);
        });
        BlobUpload upload{.session = session, .store = store, .repository = target.repository, .mount_from = source,
                          .chunk_size = options.chunk_size, .progress = mine, .on_upload = [&] {
                            uploading = true;
                            tell(PushLayerProgress::Phase::Pushing, i, 0);
                          }};
        outcomes[i] = upload.push(client, blobs[i]);
      }
      tell(outcomes[i] == BlobPushOutcome::Present   ? PushLayerProgress::Phase::Present
           : outcomes[i] == BlobPushOutcome::Mounted ? PushLayerProgress::Phase::Mounted
                                                     : PushLayerProgress::Phase::Pushed,
           i, blobs[i].size);
    });
  }
  HttpClient client;
  put_manifest(session, client, target, image);
  PushResult result{.manifest_digest = image.manifest_digest};
  for (BlobPushOutcome outcome : outcomes) {
    if (outcome == BlobPushOutcome::Uploaded) ++result.blobs_uploaded;
    if (outcome == BlobPushOutcome::Mounted) ++result.blobs_mounted;
    if (outcome == BlobPushOutcome::Present) ++result.blobs_present;
  }
  return result;
}

void check_login(const std::string& registry, const RegistryOptions& options) {
  RegistryReference ref{.registry = normalize_registry(registry), .repository = {}, .tag = {}, .digest = {}};
  RegistrySession session(ref.registry, ref.api_host(), options, {});
  HttpClient client;
  session.authenticate(client);
}

}  // namespace sandcell::rootfs_builder
