#pragma once
// Host id ranges for `--userns=auto`: each sandbox's ids 0..65535 map to 65536 host uids and
// gids that no other live sandbox of the same state root holds.
//
// The pool: the first /etc/subuid and /etc/subgid entries of a user named `sandcell` when both
// exist (cut into 65536-id slots), otherwise the 32767 slots from 2^31 up to 2^32-2. No
// distribution hands out ids up there (useradd stops at 60000, systemd's dynamic and container
// ranges end below 2^31), and (uid_t)-1 is never part of a slot.
//
// A slot is claimed by a symlink <state root>/userns/<slot> → run id. symlinkat fails with
// EEXIST when the slot is taken, so two runs can never claim the same one; claims and `sandcell
// gc`'s removal of stale ones happen under an flock on that directory, so gc cannot remove a
// claim made after it judged the old one dead. The run removes its claim when it ends; a
// supervisor killed with SIGKILL leaves it to `sandcell gc`. The last claim out removes the
// directory.
#include <cstdint>
#include <string>
#include <vector>

#include "sandcell/runtime/result.hpp"

namespace sandcell::runtime {

constexpr uint32_t kUsernsSize = 65536;
constexpr const char* kUsernsPoolDir = "userns";  // under the state root

struct UsernsPool {
  uint32_t uid_start = 0, gid_start = 0, slots = 0;
};

// Reads /etc/subuid and /etc/subgid (`sandcell` entries), else the range above 2^31. Throws
// Error::invalid when a `sandcell` entry exists but is unusable.
UsernsPool userns_pool(const std::string& subuid = "/etc/subuid",
                       const std::string& subgid = "/etc/subgid");

class UsernsClaim {
 public:
  // Claims a free slot for `run_id`; throws Error when every slot is taken.
  UsernsClaim(const UsernsPool& pool, const std::string& state_root, const std::string& run_id);
  ~UsernsClaim();
  UsernsClaim(const UsernsClaim&) = delete;
  UsernsClaim& operator=(const UsernsClaim&) = delete;

  const UsernsMapping& mapping() const { return mapping_; }

 private:
  std::string state_root_, path_;
  UsernsMapping mapping_;
};

// `sandcell gc`: removes the claims whose run is not live (is_live(run id) false). Returns one
// line per claim removed.
std::vector<std::string> collect_userns_claims(const std::string& state_root,
                                               bool (*is_live)(const std::string& run_id));

}  // namespace sandcell::runtime
