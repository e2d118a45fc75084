#pragma once
// HostConfig.Binds, Mounts and Tmpfs (docs/docker-api.md, "Mounts"): checked at create into one
// stored list (create.json HostConfig.Mounts), applied to the Spec at start and exec.
//   volume  a named volume under the store (volume_store.hpp), made on demand; Binds `name:/path`
//   tmpfs   nosuid,nodev always, size and mode; its pages count against the memory limit
//   bind    a host path: refused (a sandboxed program would read and write the host's files)
#include <nlohmann/json.hpp>
#include <string>

#include "container_store.hpp"
#include "sandcell/runtime/spec.hpp"
#include "volume_store.hpp"

namespace sandcell::dockerapi {

// The stored list: [{"Type":"volume","Source":NAME,"Target":PATH,"ReadOnly":B},
// {"Type":"tmpfs","Target":PATH,"SizeBytes":N,"Mode":M,"ReadOnly":B,"NoExec":B}]. Throws ApiError
// 400 naming the field for anything refused or malformed. Volumes are not made here.
// Config.Volumes (`-v /path`: {"/path": {}}) asks for an anonymous volume at each path no other
// mount covers.
nlohmann::json checked_mounts(const nlohmann::json& host, const nlohmann::json& config_volumes, uint64_t memory_limit);
// Makes the volumes a checked list names that do not exist yet (anonymous ones get their name),
// each bounded to default_bytes (the server's --disk; docs/docker-api.md, "Volumes").
void create_volumes(nlohmann::json& mounts, const VolumeStore& volumes, uint64_t default_bytes);

// The list as binds and tmpfs mounts; a volume removed since create is an error naming it.
void apply_mounts(const nlohmann::json& mounts, const VolumeStore& volumes, runtime::Spec& spec);
// `docker inspect`'s top-level Mounts.
nlohmann::json inspect_mounts(const nlohmann::json& mounts, const VolumeStore& volumes);
// The ids of the containers whose stored lists name the volume.
std::vector<std::string> volume_users(const ContainerStore& containers, const std::string& name);
// `rm -v`, `run --rm`: the anonymous volumes of a removed container's list that no other names
// (one still mounted by a running container, which cannot be, is left for `volume prune`).
void remove_anonymous_volumes(const nlohmann::json& mounts, const VolumeStore& volumes,
                              const ContainerStore& containers);

}  // namespace sandcell::dockerapi
