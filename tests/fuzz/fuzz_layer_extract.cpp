// A layer tar (any compression libarchive reads) → extract_layer into a temp root. Besides "no
// crash", the property that matters: nothing is ever written outside the root.
//
// The target jails itself first (root only): a private mount namespace, a fresh tmpfs over /tmp
// and a chroot into it, with the working directory (corpus, crash artifacts) bind-mounted at
// /work, and /proc for the sanitizers. Even a real escape then lands in the tmpfs, where the
// check sees it, and never on the host.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sandcell/base/loaded_libs.hpp"
#include "targets.hpp"

namespace {

void die(const char* step) {
  perror(step);
  std::exit(1);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // libarchive is opened on first use (base/src/loaded_libs.cpp): here, before the
  // chroot hides /usr/lib.
  sandcell::libarchive();
  if (unshare(CLONE_NEWNS) != 0) die("unshare(CLONE_NEWNS) (fuzz_layer_extract needs root)");
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) die("make / private");
  // Opened in the new namespace (a bind takes only mounts of its own namespace), before the
  // tmpfs hides it if it lies under /tmp.
  const int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (cwd < 0) die("open .");
  if (mount("fuzz-jail", "/tmp", "tmpfs", 0, "size=256m,mode=0755") != 0) die("tmpfs on /tmp");
  for (const char* dir : {"/tmp/work", "/tmp/scratch", "/tmp/proc"})
    if (mkdir(dir, 0755) != 0) die(dir);
  // LeakSanitizer reads /proc/self/task at exit.
  if (mount("proc", "/tmp/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) die("mount /proc");
  const std::string cwd_path = "/proc/self/fd/" + std::to_string(cwd);
  if (mount(cwd_path.c_str(), "/tmp/work", nullptr, MS_BIND | MS_REC, nullptr) != 0) die("bind cwd");
  close(cwd);
  if (chdir("/tmp") != 0 || chroot(".") != 0 || chdir("/work") != 0) die("chroot");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sandcell::fuzz::layer_extract(std::string_view(reinterpret_cast<const char*>(data), size), "/scratch",
                                {"/", "/scratch", "/work"});
  return 0;
}
