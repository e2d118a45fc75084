// The pool of host id ranges for `--userns=auto` and the claims on it (see userns_pool.hpp).
#include "userns_pool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <optional>

#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {
namespace {

constexpr uint64_t kHighStart = 1ull << 31;
constexpr uint32_t kHighSlots =
    static_cast<uint32_t>(((1ull << 32) - kHighStart) / kUsernsSize) - 1;

struct SubidEntry {
  uint32_t start = 0;
  uint64_t count = 0;
};

// The first "sandcell:START:COUNT" line of a subid file, if any.
std::optional<SubidEntry> sandcell_subid_entry(const std::string& file) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("sandcell:")) continue;
    std::string_view rest = std::string_view(line).substr(9);
    size_t colon = rest.find(':');
    auto start = parse_number<uint32_t>(rest.substr(0, colon));
    auto count = colon == std::string_view::npos ? std::nullopt
                                                 : parse_number<uint64_t>(rest.substr(colon + 1));
    if (!start || !count || *start + *count > UINT32_MAX)
      throw Error::invalid(file + ": the entry for sandcell is not START:COUNT within 32 bits: '" +
                           line + "'");
    return SubidEntry{*start, *count};
  }
  return std::nullopt;
}

// The pool directory, open and flock'ed; an empty fd when it vanished between mkdir and open
// (the last run's release removed it): the caller tries again.
UniqueFd lock_pool_dir(const std::string& state_root) {
  std::error_code ec;
  std::filesystem::create_directories(state_root, ec);
  if (ec) throw Error(ec.value(), "create state root " + state_root);
  std::string dir = state_root + "/" + kUsernsPoolDir;
  if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) throw Error(errno, "create " + dir);
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd && errno == ENOENT) return fd;
  if (!fd) throw Error(errno, "open " + dir);
  check(flock(fd.get(), LOCK_EX), "lock " + dir);
  return fd;
}

// The last claim out removes the directory, so a host without runs has none. A claimant that
// opened it just before finds it gone at symlinkat (ENOENT) and starts over.
void remove_pool_dir_if_empty(const std::string& state_root) {
  rmdir((state_root + "/" + kUsernsPoolDir).c_str());
}

uint32_t random_slot(uint32_t slots) {
  uint32_t random = 0;
  if (getrandom(&random, sizeof random, 0) != sizeof random) throw Error(errno, "getrandom");
  return random % slots;
}

// The first free slot from `first` on, claimed for run_id; nullopt if the directory is gone.
std::optional<uint32_t> claim_free_slot(int dir, uint32_t slots, uint32_t first,
                                        const std::string& run_id) {
  for (uint32_t i = 0; i < slots; ++i) {
    uint32_t slot = (first + i) % slots;
    if (symlinkat(run_id.c_str(), dir, std::to_string(slot).c_str()) == 0) return slot;
    if (errno == ENOENT) return std::nullopt;
    if (errno != EEXIST) throw Error(errno, "claim user namespace range " + std::to_string(slot));
  }
  throw Error(EAGAIN, "every user namespace range of the pool is in use");
}

}  // namespace

UsernsPool userns_pool(const std::string& subuid, const std::string& subgid) {
  std::optional<SubidEntry> uids = sandcell_subid_entry(subuid),
                            gids = sandcell_subid_entry(subgid);
  if (!uids && !gids)
    return {.uid_start = static_cast<uint32_t>(kHighStart),
            .gid_start = static_cast<uint32_t>(kHighStart),
            .slots = kHighSlots};
  if (!uids || !gids)
    throw Error::invalid("user sandcell has an entry in only one of " + subuid + " and " + subgid);
  uint64_t slots = std::min(uids->count, gids->count) / kUsernsSize;
  if (slots == 0)
    throw Error::invalid("the subordinate id ranges of user sandcell hold fewer than 65536 ids");
  return {
      .uid_start = uids->start, .gid_start = gids->start, .slots = static_cast<uint32_t>(slots)};
}

UsernsClaim::UsernsClaim(const UsernsPool& pool, const std::string& state_root,
                         const std::string& run_id)
    : state_root_(state_root) {
  // A random first slot: a range a recent run used (and left files owned by, in a bind mount)
  // is unlikely to be handed out again soon.
  uint32_t first = random_slot(pool.slots);
  for (int attempt = 0; attempt < 100; ++attempt) {
    UniqueFd dir = lock_pool_dir(state_root);
    if (!dir) continue;
    std::optional<uint32_t> slot = claim_free_slot(dir.get(), pool.slots, first, run_id);
    if (!slot) continue;  // the directory was removed under us
    path_ = state_root + "/" + kUsernsPoolDir + "/" + std::to_string(*slot);
    mapping_ = {.uid_base = pool.uid_start + *slot * kUsernsSize,
                .gid_base = pool.gid_start + *slot * kUsernsSize,
                .size = kUsernsSize};
    return;
  }
  throw Error(EAGAIN, "claim a user namespace range under " + state_root + "/" + kUsernsPoolDir);
}

UsernsClaim::~UsernsClaim() {
  UniqueFd dir(
      open((state_root_ + "/" + kUsernsPoolDir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir) flock(dir.get(), LOCK_EX);
  unlink(path_.c_str());
  if (dir) remove_pool_dir_if_empty(state_root_);
}

std::vector<std::string> collect_userns_claims(const std::string& state_root,
                                               bool (*is_live)(const std::string& run_id)) {
  std::vector<std::string> removed;
  struct stat st {};
  if (stat((state_root + "/" + kUsernsPoolDir).c_str(), &st) < 0) return removed;
  UniqueFd dir = lock_pool_dir(state_root);
  if (!dir) return removed;
  std::error_code ec;
  for (const auto& entry :
       std::filesystem::directory_iterator(state_root + "/" + kUsernsPoolDir, ec)) {
    std::string run_id = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || is_live(run_id)) continue;
    if (unlinkat(dir.get(), entry.path().filename().c_str(), 0) == 0)
      removed.push_back("userns range " + entry.path().filename().string() + " of run " + run_id);
  }
  remove_pool_dir_if_empty(state_root);
  return removed;
}

}  // namespace sandcell::runtime
