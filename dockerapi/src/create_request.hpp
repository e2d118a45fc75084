#pragma once
// POST /containers/create: Docker's body checked field by field. What sandcell maps is kept;
// what would weaken isolation, or is not implemented yet, is refused naming the field
// (docs/docker-api.md, "Mapping"): a caller relying on a field is never silently ignored.
#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "container_log.hpp"
#include "sandcell/runtime/spec.hpp"
#include "volume_store.hpp"

namespace sandcell::rootfs_builder {
class ImageStore;
}

namespace sandcell::dockerapi {

// A terminal's size in characters, as TIOCSWINSZ takes it.
struct TerminalSize {
  uint16_t rows = 0, columns = 0;
};
// false unless both are 0..65535 (struct winsize's fields).
bool terminal_size_in_range(int64_t rows, int64_t columns, TerminalSize& size);
// `ConsoleSize` ([height, width], API 1.42) of a create or exec body; ApiError 400 naming
// `field` when malformed; nullopt when absent or [0, 0].
std::optional<TerminalSize> console_size(const nlohmann::json& object, const std::string& field);

// ApiError 400 unless `name` is a container name Docker accepts (create's `name`, rename).
void check_container_name(const std::string& name);

// The bound on a container's writable layer (`HostConfig.StorageOpt size`; docs/docker-api.md,
// "Disk"): the server's --disk for a request without one, and its --max-disk (none: no ceiling).
struct DiskBounds {
  uint64_t default_bytes = 1ull << 30;
  std::optional<uint64_t> max_bytes;
};

// A disk size a client asked for (StorageOpt size, a volume's DriverOpts size): a string of k/m/g,
// at least 8m, at most --max-disk, on a host that can mount an image. ApiError 400 naming `field`.
uint64_t checked_disk_size(const std::string& field, const nlohmann::json& value, const DiskBounds& disk);

// The label that selects sandcell's allowlist policy for a bridge container
// (`sandcell.net=allow:pypi.org,files.pythonhosted.org`), and where the stored request keeps its
// checked entries (HostConfig.SandcellNetworkAllow).
constexpr const char* kNetworkLabel = "sandcell.net";
constexpr const char* kNetworkAllowKey = "SandcellNetworkAllow";

// What the server allows of the network (`serve --docker-allow-host-network`).
struct NetworkOptions {
  bool allow_host = false;
};

// Returns the request to store (create.json): Name, Image, ImageID, Config, HostConfig (the
// mapped subset; StorageOpt.size always, in bytes: the bound the container's disk is made with;
// LogConfig always, with the server's defaults: container_log.hpp).
// Throws ApiError: 400 for a bad or refused field, 404 for a missing image.
// The volumes it names are made once everything else checked.
nlohmann::json check_create_request(const std::string& body, const std::string& name,
                                    const rootfs_builder::ImageStore& images, const VolumeStore& volumes,
                                    const DiskBounds& disk, const LogBounds& log, const NetworkOptions& network);

// A stored HostConfig's network: none, host, bridge (Full) or bridge with the allowlist label (Allow).
runtime::NetworkMode network_of(const nlohmann::json& host);
// Before a start or restart: ApiError 400 for a host-network container (made while a server
// allowed it) when this server does not allow host networking.
void check_network_allowed(const nlohmann::json& request, const NetworkOptions& network);

// The bound a stored request's writable layer is made with (StorageOpt.size); none for a
// container created before disk bounds (its layer is a plain directory, unbounded).
std::optional<uint64_t> disk_bytes_of(const nlohmann::json& request);

// The sandbox a stored request runs in: the image applied, limits, network, mounts (volumes under
// <images.root()>/docker/volumes), the container's writable layer under `container_dir`: in
// disk/upper and disk/work, on the container's own filesystem (supervisor.cpp mounts it there),
// or upper/ and work/ for a container made before disk bounds.
runtime::Spec spec_for_container(const nlohmann::json& request, rootfs_builder::ImageStore& images,
                                 const std::string& container_dir);

// sandcell's default seccomp profile, the one a container's program and its exec'd processes
// get. report_denials: the supervisor logs denials (a notify listener); exec has no listener, so
// its filter answers the same calls with the errno directly.
runtime::SeccompSource container_seccomp(bool report_denials);

}  // namespace sandcell::dockerapi
