#pragma once
// What a disk test checks on the host (issue 32): loop devices backed by files under a directory
// and mounts under it (host-global, so a test that attached one must see it gone), and the free
// space of the filesystem holding a directory.
#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace sandcell::test {

inline std::vector<std::string> loops_backed_under(const std::string& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator("/sys/block", ec)) {
    std::ifstream backing(dev.path() / "loop/backing_file");
    std::string file;
    if (std::getline(backing, file) && file.rfind(dir, 0) == 0)
      found.push_back(dev.path().filename().string() + " " + file);
  }
  return found;
}

// The loop devices still backed by files under `dir` once they had time to go: an autoclear
// loop device detaches after the last user of its filesystem lets go (LO_FLAGS_AUTOCLEAR) — an
// unmount, the end of a sandbox whose mount namespace held it — which the kernel finishes a little
// later, and later still on a loaded machine (ctest -j2); and only once every other mount namespace
// that copied the mount (anyone's CLONE_NEWNS while it was mounted) has dropped it: a concurrent
// test's sandbox before its pivot_root. Waits at most 30 s (loop_holders says who held it then).
inline std::vector<std::string> loops_left_under(const std::string& dir) {
  for (int i = 0; i < 1500 && !loops_backed_under(dir).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return loops_backed_under(dir);
}

// Who still holds the filesystems of `loops` (as loops_backed_under names them): the processes
// whose mount namespace has a mount of the device, one per namespace ("pid comm"). A copy made by
// someone else's CLONE_NEWNS while the disk was mounted keeps the loop device attached.
inline std::string loop_holders(const std::vector<std::string>& loops) {
  std::string out;
  for (const std::string& loop : loops) {
    std::string dev;
    std::ifstream(std::filesystem::path("/sys/block") / loop.substr(0, loop.find(' ')) / "dev") >>
        dev;
    out += loop + " (" + dev + ") held by:";
    std::vector<std::string> seen;
    std::error_code ec;
    for (const auto& proc : std::filesystem::directory_iterator("/proc", ec)) {
      std::ifstream mountinfo(proc.path() / "mountinfo");
      bool holds = false;
      for (std::string line; !holds && std::getline(mountinfo, line);)
        holds = line.find(" " + dev + " ") != std::string::npos;
      std::error_code link_ec;
      std::string ns = std::filesystem::read_symlink(proc.path() / "ns/mnt", link_ec).string();
      if (!holds || std::find(seen.begin(), seen.end(), ns) != seen.end()) continue;
      seen.push_back(ns);
      std::string comm;
      std::getline(std::ifstream(proc.path() / "comm"), comm);
      out += " " + proc.path().filename().string() + " " + comm + " (" + ns + ");";
    }
    out += "\n";
  }
  return out;
}

inline std::vector<std::string> mounts_under(const std::string& dir) {
  std::vector<std::string> found;
  std::ifstream mountinfo("/proc/self/mountinfo");
  for (std::string line; std::getline(mountinfo, line);)
    if (line.find(" " + dir + "/") != std::string::npos) found.push_back(line);
  return found;
}

inline uint64_t free_bytes(const std::string& dir) {
  struct statvfs st {};
  return statvfs(dir.c_str(), &st) == 0 ? static_cast<uint64_t>(st.f_bavail) * st.f_frsize : 0;
}

}  // namespace sandcell::test
