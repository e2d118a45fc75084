// Volumes under the store (volume_store.hpp): made whole under a temporary name and renamed into
// place, removed by renaming away first (a bounded one under its mount.lock, with no user), so a
// half volume is never seen.
#include "volume_store.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "api_error.hpp"
#include "container_store.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/shared_disk.hpp"
#include "sandcell/base/workspace_disk.hpp"

namespace sandcell::dockerapi {
namespace fs = std::filesystem;

namespace {

bool is_volume_name(const std::string& name) {
  static const std::regex kName("[a-zA-Z0-9][a-zA-Z0-9_.-]{1,254}");
  return std::regex_match(name, kName);
}

}  // namespace

VolumeStore::VolumeStore(std::string root) : root_(std::move(root)) {
  fs::create_directories(root_);
  check(chmod(root_.c_str(), 0700), "chmod " + root_);
}

void VolumeStore::check_name(const std::string& name) {
  if (!is_volume_name(name))
    throw bad_request("create " + name + ": \"" + name +
                      "\" includes invalid characters for a local volume name, only "
                      "\"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path");
}

Volume VolumeStore::create(const std::string& given_name, uint64_t size_bytes, const nlohmann::json& labels) const {
  std::string name = given_name.empty() ? random_id() : given_name;
  check_name(name);
  if (std::optional<Volume> existing = find(name)) return *existing;
  std::string tmp = root_ + "/.new-" + random_id().substr(0, 16);
  check(mkdir(tmp.c_str(), 0700), "mkdir " + tmp);
  try {
    nlohmann::json meta = {{"Name", name},
                           {"CreatedAt", now_rfc3339()},
                           {"Labels", labels.is_object() ? labels : nlohmann::json::object()},
                           {"Anonymous", given_name.empty()}};
    // A bounded volume's image is made at its first mount (SharedDisk::join).
    if (std::optional<std::string> why = WorkspaceDisk::unavailable()) {
      check(mkdir((tmp + "/_data").c_str(), 0755), "mkdir " + tmp + "/_data");
      meta["Unbounded"] = *why;
    } else {
      meta["Size"] = size_bytes;
    }
    write_json_atomically(tmp + "/volume.json", meta);
    // A volume made meanwhile under the same name wins (rename refuses a non-empty target).
    if (rename(tmp.c_str(), (root_ + "/" + name).c_str()) != 0 && errno != ENOTEMPTY && errno != EEXIST)
      throw Error(errno, "rename " + tmp + " to " + name);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);  // when another won
  return get(name);
}

std::optional<Volume> VolumeStore::find(const std::string& name) const {
  if (!is_volume_name(name)) return std::nullopt;
  std::string dir = root_ + "/" + name;
  nlohmann::json meta;
  try {
    meta = read_json(dir + "/volume.json");
  } catch (const Error&) {
    return std::nullopt;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  Volume volume{.name = name,
                .dir = dir,
                .data_dir = dir + "/_data",
                .size_bytes = std::nullopt,
                .unbounded = meta.value("Unbounded", "a volume created before volume bounds"),
                .created_at = meta.value("CreatedAt", ""),
                .labels = meta.value("Labels", nlohmann::json::object()),
                .anonymous = meta.value("Anonymous", false)};
  if (meta.contains("Size") && meta["Size"].is_number_unsigned()) {
    volume.size_bytes = meta["Size"].get<uint64_t>();
    volume.data_dir = SharedDisk::workspace(dir);
    volume.unbounded.clear();
  }
  return volume;
}

Volume VolumeStore::get(const std::string& name) const {
  std::optional<Volume> volume = find(name);
  if (!volume) throw not_found("get " + name + ": no such volume");
  return *volume;
}

std::vector<Volume> VolumeStore::list() const {
  std::vector<Volume> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec))
    if (std::optional<Volume> volume = find(entry.path().filename().string())) out.push_back(*volume);
  return out;
}

uint64_t VolumeStore::host_bytes(const Volume& volume) {
  if (volume.size_bytes) return allocated_bytes(SharedDisk::image(volume.dir));
  uint64_t bytes = 0;
  std::error_code ec;
  // Neither walk follows a symbolic link: both see the link itself.
  for (auto it = fs::recursive_directory_iterator(volume.data_dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) bytes += it->file_size(ec);
  return bytes;
}

uint64_t VolumeStore::remove(const std::string& name) const {
  Volume volume = get(name);
  // Held until the directory is renamed away: no container joins the disk meanwhile (a join
  // waiting for mount.lock then finds the volume gone).
  std::optional<SharedDisk::Unused> unused;
  if (volume.size_bytes) {
    unused = SharedDisk::lock_unused(volume.dir);
    if (!unused) throw conflict("remove " + name + ": volume is in use (a container runs with it)");
  }
  uint64_t bytes = host_bytes(volume);
  std::string doomed = root_ + "/.removed-" + random_id().substr(0, 16);
  check(rename(volume.dir.c_str(), doomed.c_str()), "rename volume " + name);
  unused.reset();
  fs::remove_all(doomed);  // never follows a link
  return bytes;
}

nlohmann::json VolumeStore::to_json(const Volume& volume, std::optional<int64_t> ref_count) {
  nlohmann::json out = {{"Name", volume.name},         {"Driver", "local"},       {"Mountpoint", volume.data_dir},
                        {"CreatedAt", volume.created_at}, {"Labels", volume.labels}, {"Scope", "local"},
                        {"Options", nlohmann::json::object()}};
  if (volume.size_bytes) out["Options"]["size"] = std::to_string(*volume.size_bytes);
  else out["Status"] = {{"unbounded", volume.unbounded}};
  // Docker's -1, "not computed", for an unbounded volume: inspect does not walk what a sandbox
  // wrote there (millions of files, for all it knows).
  if (ref_count)
    out["UsageData"] = {{"Size", volume.size_bytes ? static_cast<int64_t>(host_bytes(volume)) : int64_t{-1}},
                        {"RefCount", *ref_count}};
  return out;
}

}  // namespace sandcell::dockerapi
