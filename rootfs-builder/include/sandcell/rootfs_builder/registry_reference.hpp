#pragma once
// Image references as a registry client reads them, normalised the way docker does
// (distribution/reference ParseNormalizedNamed): "alpine" is docker.io/library/alpine:latest,
// "user/app:1" is docker.io/user/app:1, "localhost:5000/x" stays on localhost:5000.
#include <string>
#include <string_view>

namespace sandcell::rootfs_builder {

struct RegistryReference {
  std::string registry;    // "docker.io", "localhost:5000", "ghcr.io": the key credentials use
  std::string repository;  // "library/alpine"
  std::string tag;         // empty when digest is set
  std::string digest;      // "sha256:<hex>"

  // Where the API is served: registry-1.docker.io for docker.io, the registry itself otherwise.
  std::string api_host() const;
  // The tag or digest, as the /v2/<name>/manifests/<reference> path wants it.
  std::string tag_or_digest() const { return digest.empty() ? tag : digest; }
  // The short name docker shows and the store tags: "alpine:3", "user/app:1",
  // "localhost:5000/x:1", "alpine@sha256:...".
  std::string familiar() const;
};

// Throws Error::invalid naming the text when it is not a valid reference.
RegistryReference parse_registry_reference(std::string_view text);

// "docker.io" for every spelling docker accepts of Docker Hub (index.docker.io,
// registry-1.docker.io, https://index.docker.io/v1/); other registries as given, without a
// scheme or path.
std::string normalize_registry(std::string_view registry);

}  // namespace sandcell::rootfs_builder
