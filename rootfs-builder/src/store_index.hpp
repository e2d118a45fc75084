#pragma once
// index.json of the store's OCI layout, and the locks around it.
#include <optional>
#include <string>
#include <vector>

#include "sandcell/rootfs_builder/image.hpp"

namespace sandcell::rootfs_builder {

// flock(2) on a lock file, released on scope exit.
class FileLock {
 public:
  enum class Wait { Yes, No };
  // Wait::No: held() tells whether the lock was free.
  FileLock(const std::string& path, bool exclusive, Wait wait = Wait::Yes);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  bool held() const { return fd_ >= 0; }
  int release();  // hands the locked fd to the caller

 private:
  int fd_ = -1;
};

// The manifests of index.json. Entries without a ref name (written by other tools) are kept.
struct OciIndex {
  std::vector<Descriptor> manifests;

  static OciIndex load(const std::string& path);  // a missing file is an empty index
  std::string to_json() const;                    // sorted by ref name: deterministic
  const Descriptor* find(const std::string& ref) const;
  void set(const std::string& ref, Descriptor descriptor);
  bool erase(const std::string& ref);
};

std::string ref_name(const Descriptor& d);  // the org.opencontainers.image.ref.name annotation

}  // namespace sandcell::rootfs_builder
