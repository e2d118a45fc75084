#pragma once
// GET /v2/<name>/manifests/<reference>: the raw bytes, checked against the digest asked for
// (or the registry's Docker-Content-Digest), and the image manifest for a platform when the
// answer is an index (OCI image index or Docker manifest list).
#include <string>

#include "registry_session.hpp"
#include "sandcell/rootfs_builder/image.hpp"

namespace sandcell::rootfs_builder {

struct FetchedManifest {
  std::string bytes;  // exactly as received: their sha256 is the digest
  std::string media_type;
  std::string digest;
  bool is_index() const;
};

FetchedManifest fetch_manifest(RegistrySession& session, HttpClient& client, const std::string& repository,
                               const std::string& reference);

struct Platform {
  std::string os, architecture, variant;
  std::string str() const { return os + "/" + architecture + (variant.empty() ? "" : "/" + variant); }
};
// "os/arch[/variant]"; empty: linux and this machine's architecture.
Platform parse_platform(const std::string& text);

// The descriptor of the index entry for `platform`; throws naming the platforms there are.
Descriptor select_platform(const FetchedManifest& index, const Platform& platform);

}  // namespace sandcell::rootfs_builder
