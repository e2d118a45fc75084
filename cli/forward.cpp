#include <sys/auxv.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <iostream>
#include <string>

#include "commands.hpp"

namespace sandcell::cli {
namespace {

// The verb: the first word that is not a global option (`--root DIR` takes a value).
int verb_index(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--root") == 0) {
      ++i;
      continue;
    }
    if (argv[i][0] != '-') return i;
    if (strncmp(argv[i], "--root=", 7) != 0) return -1;  // --help, --version...: the full binary
  }
  return -1;
}

// The static sandcell decides the same before glibc starts (early_forward.cpp, which cannot call
// this): a change here is a change there.
bool lean_command(int argc, char** argv) {
  int verb = verb_index(argc, argv);
  if (verb < 0) return false;
  if (strcmp(argv[verb], "gc") == 0) return true;
  if (strcmp(argv[verb], "run") != 0) return false;
  for (int i = verb + 1; i < argc && strcmp(argv[i], "--") != 0; ++i)
    if (strcmp(argv[i], "--rootfs") == 0 || strncmp(argv[i], "--rootfs=", 9) == 0) return true;
  return false;
}

// The command line as main() got it, for a hand-over once the options have been parsed.
char** saved_argv = nullptr;
// /proc/self/exe as main() found it: read again after a rootless sandcell has unshared its mount
// namespace, it can name the file from the root of its mount only (the namespace it was started
// in may be gone, its mounts detached): "/sandcell-…/bin/sandcell" for /tmp/sandcell-…/bin/sandcell
// where /tmp is a tmpfs (found in the VM guest, tests/vm).
std::string own_path;

std::string read_own_path() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<size_t>(n)) : std::string();
}

[[noreturn]] void exec_sibling(const char* sibling, char** argv, const char* why) {
  const std::string self = own_executable();
  if (self.empty()) {
    std::cerr << "sandcell: cannot find its own executable (/proc/self/exe)\n";
    _exit(125);
  }
  std::string full = self.substr(0, self.rfind('/') + 1) + sibling;
  argv[0] = full.data();
  execv(full.c_str(), argv);
  std::cerr << "sandcell: " << full << ": " << strerror(errno) << " (" << why << ")\n";
  _exit(125);
}

}  // namespace

void remember_command_line(char** argv) {
  saved_argv = argv;
  own_path = read_own_path();
}

std::string own_executable() {
  return own_path.empty() ? read_own_path() : own_path;
}

void forward_unless_lean(int argc, char** argv) {
  if (lean_command(argc, argv)) return;
  exec_sibling("sandcell-images", argv,
               "image commands live in sandcell-images, installed next to sandcell");
}

bool can_load_network_libraries() {
  // AT_BASE is where the kernel loaded the program's interpreter: 0 when there is none.
  return getauxval(AT_BASE) != 0;
}

void hand_over_to(const char* sibling, const char* why) {
  if (saved_argv == nullptr) {
    std::cerr << "sandcell: internal error: no command line to hand to " << sibling << "\n";
    _exit(125);
  }
  std::cout.flush();
  std::cerr.flush();
  exec_sibling(sibling, saved_argv, why);
}

void hand_over_to_network_twin() {
  hand_over_to("sandcell-net",
               "runs with a network and gc live in sandcell-net, installed next to sandcell");
}

}  // namespace sandcell::cli
