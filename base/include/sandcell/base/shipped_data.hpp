#pragma once
// Where the files sandcell ships beside its executables are found: the skills, the seccomp
// profiles and the AppArmor profile templates (`kind`: "skills", "seccomp", "apparmor").
//
// In this order, the first that is a directory:
//   1. PREFIX/share/sandcell/KIND, PREFIX being the parent of the running executable's directory:
//      an installed tree (`cmake --install build/default --prefix PREFIX`, a release tarball
//      unpacked anywhere), so /usr/local and /opt installs find their own copies;
//   2. the source tree's directory, compiled in: a build tree running from its checkout (where
//      build/default/share/sandcell does not exist);
//   3. /usr/share/sandcell/KIND, a distribution package's place, returned even when missing so
//      that an error names where the files were expected.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::runtime {

// The running executable's installation prefix (the parent of its directory); empty if
// /proc/self/exe cannot be read.
inline const std::string& executable_prefix() {
  static const std::string prefix = [] {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return std::string();
    std::string path(self, static_cast<size_t>(n));
    for (int up = 0; up < 2; ++up) {
      auto slash = path.rfind('/');
      if (slash == std::string::npos) return std::string();
      path.resize(slash);
    }
    return path.empty() ? std::string("/") : path;
  }();
  return prefix;
}

// The three places above, in order (the first one left out when the prefix is unknown).
inline std::vector<std::string> shipped_data_candidates(std::string_view kind,
                                                        std::string_view source_dir) {
  std::vector<std::string> dirs;
  const std::string& prefix = executable_prefix();
  if (!prefix.empty())
    dirs.push_back((prefix == "/" ? std::string() : prefix) + "/share/sandcell/" +
                   std::string(kind));
  if (!source_dir.empty()) dirs.emplace_back(source_dir);
  dirs.push_back("/usr/share/sandcell/" + std::string(kind));
  return dirs;
}

inline std::string shipped_data_dir(std::string_view kind, std::string_view source_dir) {
  const std::vector<std::string> dirs = shipped_data_candidates(kind, source_dir);
  for (const std::string& dir : dirs) {
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return dir;
  }
  return dirs.back();
}

}  // namespace sandcell::runtime
