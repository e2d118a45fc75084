#pragma once
// POST /containers/create: Docker's body checked field by field. What sandcell maps is kept;
// what would weaken isolation, or is not implemented yet, is refused naming the field
// (docs/docker-api.md, "Mapping"): a caller relying on a field is never silently ignored.
#include <nlohmann/json.hpp>
#include <cstdint>
#include <optional>
#include <string>

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

// Returns the request to store (create.json): Name, Image, ImageID, Config, HostConfig (the
// mapped subset). Throws ApiError: 400 for a bad or refused field, 404 for a missing image.
// The volumes it names are made once everything else checked.
nlohmann::json check_create_request(const std::string& body, const std::string& name,
                                    const rootfs_builder::ImageStore& images, const VolumeStore& volumes);

// The sandbox a stored request runs in: the image applied, limits, network, mounts (volumes under
// <images.root()>/docker/volumes), the container's writable layer under `container_dir`.
runtime::Spec spec_for_container(const nlohmann::json& request, rootfs_builder::ImageStore& images,
                                 const std::string& container_dir);

// sandcell's default seccomp profile, the one a container's program and its exec'd processes
// get. report_denials: the supervisor logs denials (a notify listener); exec has no listener, so
// its filter answers the same calls with the errno directly.
std::optional<runtime::SeccompProgram> container_seccomp(bool report_denials);

}  // namespace sandcell::dockerapi
