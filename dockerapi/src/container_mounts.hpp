#pragma once
// HostConfig.Binds, Mounts and Tmpfs (docs/docker-api.md, "Mounts"): checked at create into one
// stored list (create.json HostConfig.Mounts), applied to the Spec at start and exec.
//   volume  a named volume under the store (volume_store.hpp), made on demand; Binds `name:/path`
//   tmpfs   nosuid,nodev always, size and mode; its pages count against the memory limit
//   bind    a host path: refused (a sandboxed program would read and write the host's files)
#include <nlohmann/json.hpp>
#include <string>

#include "sandcell/runtime/spec.hpp"
#include "volume_store.hpp"

namespace sandcell::dockerapi {

// The stored list: [{"Type":"volume","Source":NAME,"Target":PATH,"ReadOnly":B},
// {"Type":"tmpfs","Target":PATH,"SizeBytes":N,"Mode":M,"ReadOnly":B,"NoExec":B}]. Throws ApiError
// 400 naming the field for anything refused or malformed. Volumes are not made here.
nlohmann::json checked_mounts(const nlohmann::json& host, uint64_t memory_limit);
// Makes the volumes a checked list names that do not exist yet (anonymous ones get their name).
void create_volumes(nlohmann::json& mounts, const VolumeStore& volumes);

// The list as binds and tmpfs mounts; a volume removed since create is an error naming it.
void apply_mounts(const nlohmann::json& mounts, const VolumeStore& volumes, runtime::Spec& spec);
// `docker inspect`'s top-level Mounts.
nlohmann::json inspect_mounts(const nlohmann::json& mounts, const VolumeStore& volumes);
// Whether a container's stored list names the volume.
bool mounts_volume(const nlohmann::json& mounts, const std::string& name);

}  // namespace sandcell::dockerapi
