#include "netns_pool.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "child_steps.hpp"

namespace sandcell::runtime {
namespace {

constexpr std::string_view kReady = "ready-", kTaken = "taken-", kNew = "new-";

bool starts_with(const char* name, std::string_view prefix) {
  return std::string_view(name).starts_with(prefix);
}

bool is_network_namespace(int fd) {
  return ioctl(fd, NS_GET_NSTYPE) == CLONE_NEWNET;
}

// Unmounts <dir>/ns and removes both. A lazy unmount: a run that opened the file before keeps
// its namespace, and what it checks with is_network_namespace() is its own fd. False when the
// entry was gone already (a run claimed it meanwhile).
bool remove_entry(const std::string& dir) {
  std::string ns = dir + "/ns";
  umount2(ns.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
  unlink(ns.c_str());
  return rmdir(dir.c_str()) == 0 || errno != ENOENT;
}

struct HelperArgs {
  const char* target;
  int error;
};

// Runs in a process that shares the supervisor's memory and is born in the new namespace
// (CLONE_VM | CLONE_VFORK | CLONE_NEWNET: the supervisor waits, its own namespace never changes).
// Brings its `lo` up, as the child would (one step less at the next start), then mounts it.
int make_ready_namespace(void* raw) {
  auto* args = static_cast<HelperArgs*>(raw);
  if (set_loopback_up() && mount("/proc/self/ns/net", args->target, nullptr, MS_BIND, nullptr) == 0)
    return 0;
  args->error = errno != 0 ? errno : EIO;
  return 1;
}

// Mounts a new network namespace on `file`. False when that failed (no CAP_SYS_ADMIN over the
// mount, a file system that refuses it...).
bool mount_new_namespace(const std::string& file) {
  alignas(16) std::array<char, 16384> stack;
  HelperArgs args{file.c_str(), 0};
  // As posix_spawn does: no handler of the supervisor's may run on the helper's side. No exit
  // signal either: a caller's SIGCHLD handler must not reap it (only a __WALL wait does).
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(make_ready_namespace, stack.data() + stack.size(),
                    CLONE_VM | CLONE_VFORK | CLONE_NEWNET, &args);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return false;
  int status = 0;
  while (waitpid(pid, &status, __WALL) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && args.error == 0;
}

}  // namespace

bool netns_pool_enabled() {
  const char* setting = getenv("SANDCELL_NETNS_POOL");
  return setting == nullptr || std::string_view(setting) != "0";
}

NetnsClaim::NetnsClaim(const std::string& state_root, const std::string& run_id)
    : pool_(state_root + "/" + kNetnsPoolDir), run_id_(run_id) {
  DIR* dir = opendir(pool_.c_str());
  if (dir == nullptr) return;
  while (dirent* entry = readdir(dir)) {
    if (!starts_with(entry->d_name, kReady)) continue;
    if (fd_ >= 0) {
      others_ = true;
      break;
    }
    std::string taken = pool_ + "/" + std::string(kTaken) + run_id;
    if (rename((pool_ + "/" + entry->d_name).c_str(), taken.c_str()) < 0) continue;  // lost it
    taken_ = taken;
    fd_ = open((taken + "/ns").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ >= 0 && !is_network_namespace(fd_)) {
      close(fd_);
      fd_ = -1;
    }
    if (fd_ < 0) {  // emptied by gc meanwhile, or not ours: not a namespace to enter
      remove_entry(taken_);
      taken_.clear();
    }
  }
  closedir(dir);
}

NetnsClaim::~NetnsClaim() {
  if (fd_ >= 0) close(fd_);
  if (!taken_.empty()) remove_entry(taken_);
}

void NetnsClaim::release() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!taken_.empty()) umount2((taken_ + "/ns").c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
}

void NetnsClaim::replace() {
  release();
  if (others_) {
    if (!taken_.empty()) remove_entry(std::exchange(taken_, std::string()));
    return;
  }
  // The taken entry's directory and file become the new entry; a first run makes them.
  std::string entry = pool_ + "/" + std::string(kNew) + run_id_;
  if (!taken_.empty()) {
    if (rename(taken_.c_str(), entry.c_str()) < 0) return;  // the destructor removes it
    taken_.clear();
  } else {
    mkdir(pool_.c_str(), 0700);
    if (mkdir(entry.c_str(), 0700) < 0) return;
    int file = open((entry + "/ns").c_str(), O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC, 0600);
    if (file < 0) {
      rmdir(entry.c_str());
      return;
    }
    close(file);
  }
  if (!mount_new_namespace(entry + "/ns") ||
      rename(entry.c_str(), (pool_ + "/" + std::string(kReady) + run_id_).c_str()) < 0)
    remove_entry(entry);
}

std::vector<std::string> collect_netns_pool(const std::string& state_root,
                                            bool (*is_live)(const std::string& run_id)) {
  std::vector<std::string> removed;
  std::string pool = state_root + "/" + kNetnsPoolDir;
  DIR* dir = opendir(pool.c_str());
  if (dir == nullptr) return removed;
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    const char* name = entry->d_name;
    if (starts_with(name, kReady)) {
      names.emplace_back(name);
    } else {
      std::string_view prefix = starts_with(name, kTaken) ? kTaken
                                : starts_with(name, kNew) ? kNew
                                                          : std::string_view();
      if (!prefix.empty() && !is_live(std::string(name + prefix.size()))) names.emplace_back(name);
    }
  }
  closedir(dir);
  for (const std::string& name : names)
    if (remove_entry(pool + "/" + name))
      removed.push_back("network namespace " + pool + "/" + name);
  rmdir(pool.c_str());  // only once empty
  return removed;
}

}  // namespace sandcell::runtime
