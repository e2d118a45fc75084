#include "sandcell/base/stale_disk_mounts.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

#include "sandcell/base/unique_fd.hpp"

namespace sandcell {

using runtime::UniqueFd;

int unmount_stale_disks(const std::string& root) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::vector<std::string> stale;
  const std::string prefix = root + "/";
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, source_root, point;
    fields >> id >> parent >> devno >> source_root >> point;
    // Mount points with spaces are octal-escaped in mountinfo; sandcell's never have any.
    if (point.rfind(prefix, 0) != 0 || point.size() < 5 ||
        point.compare(point.size() - 5, 5, "/disk") != 0)
      continue;
    std::string lock = point.substr(0, point.size() - 5) + "/lock";
    UniqueFd fd(open(lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (fd && flock(fd.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its call is running
    stale.push_back(point);
  }
  int n = 0;
  for (auto it = stale.rbegin(); it != stale.rend(); ++it)
    n += umount2(it->c_str(), MNT_DETACH) == 0;
  return n;
}

int detach_disk_copies() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::vector<std::string> copies;
  for (std::string line; std::getline(mountinfo, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, source_root, point;
    fields >> id >> parent >> devno >> source_root >> point;
    // After the optional fields, " - FSTYPE SOURCE SUPEROPTIONS". The source is the name the
    // mount was given ("/proc/self/fd/N" for sandcell's): the device is MAJOR:MINOR, loop's 7.
    size_t separator = line.find(" - ");
    if (separator == std::string::npos) continue;
    std::istringstream tail(line.substr(separator + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "ext4" || devno.rfind("7:", 0) != 0 || point.size() < 6 ||
        point.compare(point.size() - 5, 5, "/disk") != 0)
      continue;
    copies.push_back(point);
  }
  int n = 0;
  for (auto it = copies.rbegin(); it != copies.rend(); ++it)
    n += umount2(it->c_str(), MNT_DETACH) == 0;
  return n;
}

}  // namespace sandcell
