#pragma once
// Docker's named volumes (`docker volume`, Binds `name:/path`, Mounts type=volume) under the
// store, bound into the containers that name them (docs/docker-api.md, "Volumes"):
//   <store>/docker/volumes/            0700: what sandboxes wrote is no host user's business
//   <store>/docker/volumes/<name>/volume.json   Name, CreatedAt, Labels, Anonymous, and Size (the
//                                               bound in bytes) or Unbounded (why there is none)
// A bounded volume is a disk of its own, shared by the containers that run with it
// (sandcell/base/shared_disk.hpp: disk.img, disk/, users, mount.lock): its files are
// disk/workspace, there only while a container using it runs. An unbounded one (made where no
// image can be mounted: rootless, no loop devices; or before volume bounds) is the directory
// _data/.
// The name is checked before it becomes a path: Docker's [a-zA-Z0-9][a-zA-Z0-9_.-]+, so never
// "..", never a "/".
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandcell::dockerapi {

struct Volume {
  std::string name;
  std::string dir;       // <store>/docker/volumes/<name>
  std::string data_dir;  // the bind source (a bounded volume's only while mounted)
  std::optional<uint64_t> size_bytes;  // the bound; none: unbounded, because of `unbounded`
  std::string unbounded;
  std::string created_at;
  nlohmann::json labels = nlohmann::json::object();
  bool anonymous = false;  // made without a name (Mounts type=volume without Source)
};

class VolumeStore {
 public:
  explicit VolumeStore(std::string root);  // made 0700 when missing
  // ApiError 400 unless Docker's volume name rule holds.
  static void check_name(const std::string& name);

  // The volume, made when missing (an empty name: a new anonymous one): bounded to size_bytes
  // where WorkspaceDisk can mount an image, else unbounded (the caller refuses a size that was
  // asked for there). Existing: as it is.
  Volume create(const std::string& name, uint64_t size_bytes,
                const nlohmann::json& labels = nlohmann::json::object()) const;
  std::optional<Volume> find(const std::string& name) const;
  Volume get(const std::string& name) const;  // ApiError 404
  std::vector<Volume> list() const;
  // Removes the volume and its files (never following a link a sandbox left there), a killed
  // supervisor's mount unmounted first; returns the bytes they held on the host. ApiError 409
  // while a container runs with it.
  uint64_t remove(const std::string& name) const;
  // The bytes the volume holds on the host: its image's allocated blocks, or its files.
  static uint64_t host_bytes(const Volume& volume);
  // Docker's shape; with ref_count (inspect), UsageData too.
  static nlohmann::json to_json(const Volume& volume, std::optional<int64_t> ref_count = std::nullopt);

 private:
  std::string root_;
};

}  // namespace sandcell::dockerapi
