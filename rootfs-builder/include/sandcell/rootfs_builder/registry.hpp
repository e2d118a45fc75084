#pragma once
// Pull and push images over the Docker Registry HTTP API v2 (the OCI distribution spec), into
// and out of the image store. Manifests are kept byte for byte as received (their digest is
// the sha256 of those bytes); every blob is checked for size and digest, every layer for its
// DiffID, before it is renamed into the store. A failed pull tags nothing.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "sandcell/rootfs_builder/registry_config.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::rootfs_builder {

// What happened to one layer of a pull (the Docker API's per-layer lines, keyed by digest).
struct LayerProgress {
  enum class Phase {
    Present,      // the store has the blob: not downloaded
    Waiting,      // to be downloaded (every missing layer is announced before any byte)
    Downloading,  // `done` of `total` bytes so far
    Downloaded,   // whole, its digest and DiffID verified, in the store
  };
  Phase phase;
  std::string digest;
  std::int64_t done = 0, total = 0;
};

struct RegistryOptions {
  // nullopt: TLS verified against the system CA store, except for loopback registries and
  // those in registries.json's insecure-registries, which may also be plain HTTP (as docker).
  // false: every registry is treated that way (--tls-verify=false); true: none is.
  std::optional<bool> tls_verify;
  // Used instead of the stored credentials when set (`--creds`, login).
  std::optional<RegistryCredentials> credentials;
  // false: without `credentials` the registry is spoken to anonymously, never with the ones
  // stored on this host (the Docker API's clients bring their own in X-Registry-Auth).
  bool stored_credentials = true;
  // Progress bars on stderr (callers pass false when stderr is no terminal, or for -q).
  bool progress = false;
  // Called with the bytes transferred so far and the total, at most ten times a second and
  // once at the end (the Docker API's progress lines); from the transfer threads.
  std::function<void(std::int64_t done, std::int64_t total)> on_progress;
  // The whole pull or push must be over within this (`--timeout`); zero: only the bounds of each
  // request (a stall under 1 KiB/s for 60 s, a deadline per request and per blob) apply.
  std::chrono::seconds timeout{0};
};

struct PullOptions : RegistryOptions {
  std::string platform;  // "os/arch[/variant]"; empty: linux/<this machine>
  int parallel = 3;      // layer downloads at once
  // Each layer's progress: Present or Waiting for every layer in the manifest's order, then, from
  // the transfer threads, Downloading (at most ten times a second per layer, and at its end) and
  // Downloaded. A digest the manifest repeats is told once.
  std::function<void(const LayerProgress&)> on_layer;
};

struct PullResult {
  std::string local_name;       // how the store names it: "alpine:3", "localhost:5000/x:1"
  std::string manifest_digest;  // of the image manifest (not of an index it was picked from)
  std::string image_id;         // the config digest
  int blobs_fetched = 0;
  int blobs_present = 0;  // already in the store, not downloaded
};

PullResult pull_image(ImageStore& store, const std::string& reference, const PullOptions& options);

// One layer of a push (docker push's per-layer lines): Preparing for every layer first, top
// layer first; then, from the transfer threads, Present (the registry has it), Mounted (from
// `mounted_from`, another repository of the registry) or Pushing (bytes `done` of `total`, at most
// ten times a second and at its end) then Pushed. The config blob is not a layer: never told.
struct PushLayerProgress {
  enum class Phase { Preparing, Present, Mounted, Pushing, Pushed };
  Phase phase;
  std::string digest;   // of the compressed blob
  std::string diff_id;  // of its content (the image config's rootfs.diff_ids): what docker names
  std::int64_t done = 0, total = 0;
  std::string mounted_from;
};

struct PushOptions : RegistryOptions {
  // Blobs larger than this go up in PATCH chunks of this size; smaller ones in one PUT.
  std::int64_t chunk_size = 64 << 20;
  int parallel = 3;
  std::function<void(const PushLayerProgress&)> on_layer;
};

struct PushResult {
  std::string manifest_digest;
  int blobs_uploaded = 0;
  int blobs_mounted = 0;  // cross-repository mounts from the image's own repository
  int blobs_present = 0;  // the registry had them (HEAD)
};

// Pushes local image `name` as `reference`. Blobs are mounted from the repository `name` was
// pulled from when that is on the same registry.
PushResult push_image(ImageStore& store, const std::string& name, const std::string& reference,
                      const PushOptions& options);

// Checks the credentials against the registry (GET /v2/, or the token service); throws
// Error::invalid naming the registry when it refuses them.
void check_login(const std::string& registry, const RegistryOptions& options);

}  // namespace sandcell::rootfs_builder
