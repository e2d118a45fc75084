// The disk bound in a run's record (result.hpp, record_disk).
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/runtime/result.hpp"

namespace sandcell::runtime {

void record_disk(Result& r, const WorkspaceDisk* disk, uint64_t bound, const std::string& where,
                 const std::string& unbounded) {
  if (!disk) {
    r.limits.disk_bytes = bound;
    r.enforced["disk_bytes"] = Enforcement::None;
    r.warnings.push_back("disk_bytes not enforced on " + where + ": " + unbounded);
    return;
  }
  r.limits.disk_bytes = disk->size_bytes();
  r.enforced["disk_bytes"] = Enforcement::Ext4Loop;
  r.disk_usage_bytes = disk->used_bytes();
  if ((r.status == Status::ExitNonzero || r.status == Status::Signaled) && disk->full())
    r.status = Status::DiskLimit;
}

void record_volume(Result& r, const std::string& name, const WorkspaceDisk* disk, bool writable,
                   const std::string& unbounded) {
  if (!disk) {
    r.enforced["volume_bytes"] = Enforcement::None;
    r.warnings.push_back("volume_bytes not enforced on the volume " + name + ": " + unbounded);
    return;
  }
  if (!r.enforced.contains("volume_bytes")) r.enforced["volume_bytes"] = Enforcement::Ext4Loop;
  r.volume_bytes[name] = disk->size_bytes();
  r.volume_usage_bytes[name] = disk->used_bytes();
  if (writable && (r.status == Status::ExitNonzero || r.status == Status::Signaled) && disk->full())
    r.status = Status::DiskLimit;
}

}  // namespace sandcell::runtime
