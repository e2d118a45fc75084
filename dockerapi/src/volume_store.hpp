#pragma once
// Docker's named volumes (`docker volume`, Binds `name:/path`, Mounts type=volume) as
// directories under the store, bound into the containers that name them:
//   <store>/docker/volumes/            0700: what sandboxes wrote is no host user's business
//   <store>/docker/volumes/<name>/volume.json   Name, CreatedAt, Labels, Anonymous
//   <store>/docker/volumes/<name>/_data/        the volume's files (the bind's source)
// The name is checked before it becomes a path: Docker's [a-zA-Z0-9][a-zA-Z0-9_.-]+, so never
// "..", never a "/".
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace sandcell::dockerapi {

struct Volume {
  std::string name;
  std::string data_dir;  // the bind source
  std::string created_at;
  nlohmann::json labels = nlohmann::json::object();
  bool anonymous = false;  // made without a name (Mounts type=volume without Source)
};

class VolumeStore {
 public:
  explicit VolumeStore(std::string root);  // made 0700 when missing
  // ApiError 400 unless Docker's volume name rule holds.
  static void check_name(const std::string& name);

  // The volume, made when missing (an empty name: a new anonymous one). Existing: as it is.
  Volume create(const std::string& name, const nlohmann::json& labels = nlohmann::json::object()) const;
  std::optional<Volume> find(const std::string& name) const;
  Volume get(const std::string& name) const;  // ApiError 404
  std::vector<Volume> list() const;
  // Removes the volume and its files (never following a link a sandbox left there); returns
  // the bytes its files held.
  uint64_t remove(const std::string& name) const;
  static nlohmann::json to_json(const Volume& volume);  // Docker's shape

 private:
  std::string root_;
};

}  // namespace sandcell::dockerapi
