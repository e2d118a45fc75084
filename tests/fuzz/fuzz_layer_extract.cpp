// A layer tar (any compression libarchive reads) → extract_layer into a temp root. Besides "no
// crash", the property that matters: nothing is ever written outside the root.
//
// The target jails itself first (root only): a private mount namespace, a fresh tmpfs over /tmp
// and a chroot into it, with the working directory (corpus, crash artifacts) bind-mounted at
// /work. Even a real escape then lands in the tmpfs, where the check below sees it, and never on
// the host.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/runtime/error.hpp"

namespace fs = std::filesystem;

namespace {

void die(const char* step) {
  perror(step);
  std::exit(1);
}

// Everything in the jail that is not the corpus directory or the scratch area.
std::set<std::string> jail_entries() {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator("/")) names.insert(entry.path());
  for (const auto& entry : fs::directory_iterator("/scratch")) names.insert(entry.path());
  for (const auto& entry : fs::directory_iterator("/work")) names.insert(entry.path());
  return names;
}

std::set<std::string> baseline;

bool libfuzzer_artifact(const std::string& name) {
  for (const char* prefix : {"/work/crash-", "/work/leak-", "/work/timeout-", "/work/oom-", "/work/slow-unit-"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cwd < 0) die("open .");
  if (unshare(CLONE_NEWNS) != 0) die("unshare(CLONE_NEWNS) (fuzz_layer_extract needs root)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make / private");
  if (mount("fuzz-jail", "/tmp", "tmpfs", 0, "size=256m,mode=0755") != 0) die("tmpfs on /tmp");
  for (const char* dir : {"/tmp/work", "/tmp/scratch"})
    if (mkdir(dir, 0755) != 0) die(dir);
  const std::string cwd_path = "/proc/self/fd/" + std::to_string(cwd);
  if (mount(cwd_path.c_str(), "/tmp/work", nullptr, MS_BIND | MS_REC, nullptr) != 0) die("bind cwd");
  close(cwd);
  if (chdir("/tmp") != 0 || chroot(".") != 0 || chdir("/work") != 0) die("chroot");
  baseline = jail_entries();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream("/scratch/layer.tar", std::ios::binary).write(reinterpret_cast<const char*>(data), size);
  }
  fs::create_directory("/scratch/root");
  try {
    (void)sandcell::rootfs_builder::extract_layer("/scratch/layer.tar", "/scratch/root");
  } catch (const sandcell::Error&) {
  }
  std::set<std::string> now = jail_entries();
  now.erase("/scratch/root");
  now.erase("/scratch/layer.tar");
  for (const auto& name : now) {
    if (baseline.contains(name) || libfuzzer_artifact(name)) continue;
    fprintf(stderr, "extract_layer wrote outside its root: %s\n", name.c_str());
    __builtin_trap();
  }
  fs::remove_all("/scratch/root");
  return 0;
}
