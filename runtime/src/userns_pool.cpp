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

#include "sandcell/runtime/error.hpp"
#include "sandcell/runtime/number.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {
namespace {

constexpr uint64_t kHighStart = 1ull << 31;
constexpr uint32_t kHighSlots = static_cast<uint32_t>(((1ull << 32) - kHighStart) / kUsernsSize) - 1;

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
    auto count = colon == std::string_view::npos ? std::nullopt : parse_number<uint64_t>(rest.substr(colon + 1));
    if (!start || !count || *start + *count > UINT32_MAX)
      throw Error::invalid(file + ": the entry for sandcell is not START:COUNT within 32 bits: '" + line + "'");
    return SubidEntry{*start, *count};
  }
  return std::nullopt;
}

UniqueFd lock_pool_dir(const std::string& state_root) {
  std::error_code ec;
  std::filesystem::create_directories(state_root, ec);
  if (ec) throw Error(ec.value(), "create state root " + state_root);
  std::string dir = state_root + "/" + kUsernsPoolDir;
  if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST) throw Error(errno, "create " + dir);
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + dir);
  check(flock(fd.get(), LOCK_EX), "lock " + dir);
  return fd;
}

uint32_t random_slot(uint32_t slots) {
  uint32_t random = 0;
  if (getrandom(&random, sizeof random, 0) != sizeof random) throw Error(errno, "getrandom");
  return random % slots;
}

}  // namespace

UsernsPool userns_pool(const std::string& subuid, const std::string& subgid) {
  std::optional<SubidEntry> uids = sandcell_subid_entry(subuid), gids = sandcell_subid_entry(subgid);
  if (!uids && !gids) return {.uid_start = static_cast<uint32_t>(kHighStart),
                              .gid_start = static_cast<uint32_t>(kHighStart), .slots = kHighSlots, .source = "2^31"};
  if (!uids || !gids) throw Error::invalid("user sandcell has an entry in only one of " + subuid + " and " + subgid);
  uint64_t slots = std::min(uids->count, gids->count) / kUsernsSize;
  if (slots == 0) throw Error::invalid("the subordinate id ranges of user sandcell hold fewer than 65536 ids");
  return {.uid_start = uids->start, .gid_start = gids->start, .slots = static_cast<uint32_t>(slots), .source = subuid};
}

UsernsClaim::UsernsClaim(const UsernsPool& pool, const std::string& state_root, const std::string& run_id) {
  // A random first slot: a range a recent run used (and left files owned by, in a bind mount)
  // is unlikely to be handed out again soon.
  uint32_t first = random_slot(pool.slots);
  for (int attempt = 0; attempt < 3; ++attempt) {
    UniqueFd dir = lock_pool_dir(state_root);
    for (uint32_t i = 0; i < pool.slots; ++i) {
      uint32_t slot = (first + i) % pool.slots;
      std::string name = std::to_string(slot);
      if (symlinkat(run_id.c_str(), dir.get(), name.c_str()) < 0) {
        if (errno == EEXIST) continue;
        if (errno == ENOENT) break;  // the empty directory was removed (check-host-clean.sh): again
        throw Error(errno, "claim user namespace range " + state_root + "/" + kUsernsPoolDir + "/" + name);
      }
      path_ = state_root + "/" + kUsernsPoolDir + "/" + name;
      mapping_ = {.uid_base = pool.uid_start + slot * kUsernsSize, .gid_base = pool.gid_start + slot * kUsernsSize,
                  .size = kUsernsSize};
      return;
    }
    if (errno != ENOENT) break;
  }
  throw Error(EAGAIN, "every user namespace range of the pool (" + pool.source + ") is in use");
}

UsernsClaim::~UsernsClaim() { unlink(path_.c_str()); }

std::vector<std::string> collect_userns_claims(const std::string& state_root,
                                               bool (*is_live)(const std::string& run_id)) {
  std::vector<std::string> removed;
  struct stat st {};
  if (stat((state_root + "/" + kUsernsPoolDir).c_str(), &st) < 0) return removed;
  UniqueFd dir = lock_pool_dir(state_root);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(state_root + "/" + kUsernsPoolDir, ec)) {
    std::string run_id = std::filesystem::read_symlink(entry.path(), ec);
    if (ec || is_live(run_id)) continue;
    if (unlinkat(dir.get(), entry.path().filename().c_str(), 0) == 0)
      removed.push_back("userns range " + entry.path().filename().string() + " of run " + run_id);
  }
  return removed;
}

}  // namespace sandcell::runtime
