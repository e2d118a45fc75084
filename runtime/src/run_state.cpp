#include "run_state.hpp"

#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"

namespace sandcell::runtime {

namespace fs = std::filesystem;

namespace {

// Rootless: $XDG_RUNTIME_DIR/sandcell, else /tmp/sandcell-UID. /tmp is shared: the directory must
// be ours, a real directory and 0700, or another user could plant a symlink or read run state.
std::string rootless_state_root() {
  if (const char* runtime_dir = getenv("XDG_RUNTIME_DIR");
      runtime_dir != nullptr && *runtime_dir == '/')
    return std::string(runtime_dir) + "/sandcell";
  std::string dir = "/tmp/sandcell-" + std::to_string(rootless_host_uid());
  if (mkdir(dir.c_str(), 0700) < 0 && errno != EEXIST)
    throw Error(errno, "create state directory " + dir);
  struct stat st {};
  if (lstat(dir.c_str(), &st) < 0) throw Error(errno, "stat " + dir);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0)
    throw Error::invalid(
        dir +
        " is not a private directory of this user (0700, owned by it): remove it or set "
        "SANDCELL_STATE");
  return dir;
}

}  // namespace

std::string default_state_root() {
  if (const char* env = getenv("SANDCELL_STATE"); env != nullptr && *env != '\0') return env;
  return rootless() ? rootless_state_root() : "/run/sandcell";
}

std::string new_run_id() {
  uint32_t random = 0;
  if (getrandom(&random, sizeof random, 0) != sizeof random) throw Error(errno, "getrandom");
  char id[32];
  snprintf(id, sizeof id, "%d-%08x", getpid(), random);
  return id;
}

pid_t supervisor_of_run_id(const std::string& run_id) {
  unsigned random = 0;
  int pid = -1;
  char tail = 0;
  if (sscanf(run_id.c_str(), "%d-%8x%c", &pid, &random, &tail) != 2 || pid <= 0) return -1;
  return pid;
}

bool supervisor_alive(pid_t pid) {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", ec);
  return !ec && exe.filename().string().rfind("sandcell", 0) == 0;
}

std::string scratch_mount_point(const std::string& state_root) {
  return state_root + "/" + kScratchDir;
}

RunState::RunState(const std::string& state_root, const std::string& run_id)
    : dir_(state_root + "/" + run_id) {
  std::error_code ec;
  fs::create_directories(state_root, ec);
  if (ec) throw Error(ec.value(), "create state root " + state_root);
  const std::string scratch = scratch_mount_point(state_root);
  if (mkdir(scratch.c_str(), 0700) < 0 && errno != EEXIST) throw Error(errno, "create " + scratch);
}

RunState::~RunState() {
  if (made_) remove_state_dir(dir_);
}

const std::string& RunState::dir() {
  if (!made_) {
    check(mkdir(dir_.c_str(), 0700), "create run state " + dir_);
    made_ = true;
  }
  return dir_;
}

void RunState::record(pid_t child, const std::vector<std::string>& cgroup_paths) {
  if (!rootless() || cgroup_paths.empty()) return;
  nlohmann::json state = {
      {"supervisor_pid", getpid()}, {"child_pid", child}, {"cgroups", cgroup_paths}};
  std::string tmp = dir() + "/state.json.tmp";
  {
    std::ofstream out(tmp);
    out << state.dump() << '\n';
    if (!out.flush()) throw Error(EIO, "write " + tmp);
  }
  check(rename(tmp.c_str(), (dir_ + "/state.json").c_str()), "rename " + tmp);
}

void remove_state_dir(const std::string& dir) {
  // Only files the supervisor wrote; remove_all never crosses into a mount anyway.
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace sandcell::runtime
