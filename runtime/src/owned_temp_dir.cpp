#include "sandcell/runtime/owned_temp_dir.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <ctime>
#include <filesystem>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

namespace fs = std::filesystem;

UniqueFd open_dir(const std::string& path) {
  return UniqueFd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

}  // namespace

OwnedTempDir::OwnedTempDir(const std::string& parent, const std::string& prefix) {
  fs::create_directories(parent);
  std::string pattern = parent + "/" + prefix + "XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw Error(errno, "create a temporary directory in " + parent);
  path_ = pattern;
  lock_ = open_dir(path_);
  // flock, not fcntl locks: it stays with the open file, so a forked helper that shares it
  // keeps the directory owned, and it is gone the moment the last holder dies.
  if (!lock_ || ::flock(lock_.get(), LOCK_EX) != 0) {
    int error = errno;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
    throw Error(error, "lock the temporary directory " + path_);
  }
}

OwnedTempDir::~OwnedTempDir() {
  if (path_.empty()) return;
  std::error_code ignored;  // what stays is unowned once the lock goes: gc removes it
  fs::remove_all(path_, ignored);
}

std::vector<std::string> remove_abandoned_temp_dirs(const std::string& parent, std::chrono::seconds min_age) {
  std::vector<std::string> removed;
  std::error_code ec;
  fs::directory_iterator entries(parent, ec);
  if (ec) return removed;  // no such directory: nothing was left there
  std::time_t cutoff = std::time(nullptr) - min_age.count();
  for (const fs::directory_entry& entry : entries) {
    std::string path = entry.path().string();
    UniqueFd dir = open_dir(path);
    struct stat st {};
    if (!dir || ::fstat(dir.get(), &st) != 0 || st.st_mtime > cutoff) continue;
    if (::flock(dir.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its owner is alive
    fs::remove_all(path, ec);
    if (!ec) removed.push_back(path);
  }
  return removed;
}

}  // namespace sandcell::runtime
