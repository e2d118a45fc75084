#pragma once
// The OCI image model: config, manifest, descriptors, and local image names.
// JSON is canonical (sorted keys, no whitespace) so the same image gives the same digest.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::rootfs_builder {

namespace media_type {
inline constexpr std::string_view kOciIndex = "application/vnd.oci.image.index.v1+json";
inline constexpr std::string_view kOciManifest = "application/vnd.oci.image.manifest.v1+json";
inline constexpr std::string_view kOciConfig = "application/vnd.oci.image.config.v1+json";
inline constexpr std::string_view kOciLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip";
inline constexpr std::string_view kOciLayerZstd = "application/vnd.oci.image.layer.v1.tar+zstd";
inline constexpr std::string_view kOciLayer = "application/vnd.oci.image.layer.v1.tar";
inline constexpr std::string_view kDockerManifest =
    "application/vnd.docker.distribution.manifest.v2+json";
inline constexpr std::string_view kDockerManifestList =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr std::string_view kDockerConfig = "application/vnd.docker.container.image.v1+json";
inline constexpr std::string_view kDockerLayerGzip =
    "application/vnd.docker.image.rootfs.diff.tar.gzip";
}  // namespace media_type

inline constexpr std::string_view kRefNameAnnotation = "org.opencontainers.image.ref.name";

struct Descriptor {
  std::string media_type;
  std::string digest;
  std::int64_t size = 0;
  std::map<std::string, std::string> annotations;
};

struct Manifest {
  std::string media_type = std::string(media_type::kOciManifest);
  Descriptor config;
  std::vector<Descriptor> layers;
  std::map<std::string, std::string> annotations;
};

struct Healthcheck {
  std::vector<std::string> test;
  std::int64_t interval_ns = 0;
  std::int64_t timeout_ns = 0;
  std::int64_t start_period_ns = 0;
  int retries = 0;
};

// The "config" object of an image config: the defaults a container starts with.
struct ContainerConfig {
  std::string user;
  std::vector<std::string> env;
  // null and [] differ for Docker (CMD [] clears the base image's command), hence optional.
  std::optional<std::vector<std::string>> entrypoint;
  std::optional<std::vector<std::string>> cmd;
  std::string working_dir;
  std::map<std::string, std::string> labels;
  std::set<std::string> exposed_ports;  // "80/tcp"
  std::set<std::string> volumes;
  std::string stop_signal;
  std::optional<Healthcheck> healthcheck;
  std::vector<std::string> on_build;
  std::vector<std::string> shell;
};

struct HistoryEntry {
  std::string created;
  std::string created_by;
  std::string author;
  std::string comment;
  bool empty_layer = false;
};

struct ImageConfig {
  std::string created;  // RFC 3339, UTC
  std::string author;
  std::string architecture = "amd64";
  std::string os = "linux";
  std::string variant;
  ContainerConfig config;
  std::vector<std::string> diff_ids;  // rootfs.diff_ids, rootfs.type is always "layers"
  std::vector<HistoryEntry> history;
};

// Canonical JSON: keys sorted, no whitespace, empty optional fields left out.
std::string config_to_json(const ImageConfig& config);
ImageConfig config_from_json(std::string_view json);  // throws Error::invalid
std::string manifest_to_json(const Manifest& manifest);
// Accepts OCI image manifests and Docker v2 schema 2 manifests.
Manifest manifest_from_json(std::string_view json);

// SOURCE_DATE_EPOCH when set (reproducible builds), else nullopt.
std::optional<std::int64_t> source_date_epoch();
// RFC 3339 "YYYY-MM-DDTHH:MM:SSZ" of SOURCE_DATE_EPOCH, or of now when it is unset.
std::string image_timestamp();
// The GOARCH name of this machine (amd64, arm64, ...), as image configs spell it.
std::string host_architecture();

// A local image name: "name[:tag]" (tag defaults to "latest") or "name@sha256:<hex>".
// Names keep their registry host when given (localhost:5000/foo:1); no docker.io expansion.
struct ImageReference {
  std::string name;
  std::string tag;     // empty when digest is set
  std::string digest;  // "sha256:<hex>" for name@digest references

  std::string str() const { return digest.empty() ? name + ":" + tag : name + "@" + digest; }
};
ImageReference parse_reference(std::string_view text);  // throws Error::invalid

}  // namespace sandcell::rootfs_builder
