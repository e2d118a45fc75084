#include "store_index.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "fs_tree.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {

FileLock::FileLock(const std::string& path, bool exclusive, Wait wait)
    : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
  if (fd_ < 0) throw Error(errno, "open lock " + path);
  int operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait == Wait::No ? LOCK_NB : 0);
  while (::flock(fd_, operation) != 0) {
    if (errno == EINTR) continue;
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK && wait == Wait::No) return;
    throw Error(err, "flock " + path);
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

int FileLock::release() {
  int fd = fd_;
  fd_ = -1;
  return fd;
}

std::string ref_name(const Descriptor& d) {
  auto it = d.annotations.find(std::string(kRefNameAnnotation));
  return it == d.annotations.end() ? std::string() : it->second;
}

OciIndex OciIndex::load(const std::string& path) {
  OciIndex index;
  if (::access(path.c_str(), F_OK) != 0) return index;
  auto j = parse_bounded_json_or_discarded(read_file(path));
  if (j.is_discarded() || !j.is_object()) throw Error::invalid(path + ": not a JSON object");
  try {
    for (const auto& m : j.value("manifests", nlohmann::json::array())) {
      Descriptor d;
      d.media_type = m.value("mediaType", "");
      d.digest = m.at("digest").get<std::string>();
      d.size = m.at("size").get<std::int64_t>();
      if (auto a = m.find("annotations"); a != m.end() && a->is_object()) a->get_to(d.annotations);
      if (!is_valid_digest(d.digest)) continue;  // other algorithms: not ours to read
      index.manifests.push_back(std::move(d));
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error::invalid(path + ": " + e.what());
  }
  return index;
}

std::string OciIndex::to_json() const {
  std::vector<const Descriptor*> sorted;
  for (const auto& d : manifests) sorted.push_back(&d);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](auto* a, auto* b) { return ref_name(*a) < ref_name(*b); });
  nlohmann::json list = nlohmann::json::array();
  for (const Descriptor* d : sorted) {
    nlohmann::json m = {{"mediaType", d->media_type}, {"digest", d->digest}, {"size", d->size}};
    if (!d->annotations.empty()) m["annotations"] = d->annotations;
    list.push_back(std::move(m));
  }
  nlohmann::json j = {
      {"schemaVersion", 2}, {"mediaType", media_type::kOciIndex}, {"manifests", list}};
  return j.dump();
}

const Descriptor* OciIndex::find(const std::string& ref) const {
  for (const auto& d : manifests)
    if (ref_name(d) == ref) return &d;
  return nullptr;
}

void OciIndex::set(const std::string& ref, Descriptor descriptor) {
  descriptor.annotations[std::string(kRefNameAnnotation)] = ref;
  erase(ref);
  manifests.push_back(std::move(descriptor));
}

bool OciIndex::erase(const std::string& ref) {
  auto before = manifests.size();
  std::erase_if(manifests, [&](const Descriptor& d) { return ref_name(d) == ref; });
  return manifests.size() != before;
}

}  // namespace sandcell::rootfs_builder
