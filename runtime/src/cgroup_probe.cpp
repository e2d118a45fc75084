#include <dirent.h>
#include <linux/magic.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

#include "cgroup_files.hpp"
#include "cgroup_versions.hpp"
#include "sandcell/runtime/cgroup.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::runtime {
namespace {

// v1 super options that name a controller. Everything else there ("rw", "name=systemd",
// "clone_children", "release_agent=...") is an option of the hierarchy, not a controller.
const std::set<std::string_view> kV1Controllers = {
    "blkio",  "cpu",  "cpuacct", "cpuset",   "devices",    "freezer", "hugetlb",
    "memory", "misc", "net_cls", "net_prio", "perf_event", "pids",    "rdma"};

struct CgroupMount {
  std::string_view mount_point;  // still escaped (\ooo)
  std::string_view fstype;
  std::string_view super_options;
};

// mountinfo escapes space, tab, newline and backslash in paths as \ooo (proc(5)).
std::string unescape_octal(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto is_octal = [&](size_t j) {
      return j < text.size() && text[j] >= '0' && text[j] <= '7';
    };
    if (text[i] == '\\' && is_octal(i + 1) && is_octal(i + 2) && is_octal(i + 3)) {
      out += static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 +
                               (text[i + 3] - '0'));
      i += 3;
    } else {
      out += text[i];
    }
  }
  return out;
}

// "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue": the mount
// point is field 5; a variable number of optional fields ends at the lone "-", after which come
// the fstype, the source and the super options. Views into `line` (every start of a run
// reads the whole table, so no stream or copy per line).
std::optional<CgroupMount> parse_mountinfo_line(std::string_view line) {
  std::vector<std::string_view> fields;
  for (size_t pos = 0; pos < line.size();) {
    size_t start = line.find_first_not_of(" \t", pos);
    if (start == std::string_view::npos) break;
    size_t end = line.find_first_of(" \t", start);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(start, end - start));
    pos = end;
  }
  size_t sep = 6;
  while (sep < fields.size() && fields[sep] != "-") ++sep;
  if (sep + 3 >= fields.size()) return std::nullopt;  // also covers lines shorter than 7 fields
  return CgroupMount{
      .mount_point = fields[4], .fstype = fields[sep + 1], .super_options = fields[sep + 3]};
}

void add_v1_controllers(const CgroupMount& mount, CgroupHost& host) {
  std::string_view options = mount.super_options;
  while (!options.empty()) {
    size_t comma = options.find(',');
    std::string_view option = options.substr(0, comma);
    // The first mount of a hierarchy wins; later ones are bind mounts of the same tree.
    if (kV1Controllers.contains(option) && !host.v1_roots.contains(std::string(option)))
      host.v1_roots.emplace(option, unescape_octal(mount.mount_point));
    options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
  }
}

bool unified_has_needed_controllers(const std::string& root) {
  const auto text = cgroupfs::read_if_exists(root + "/cgroup.controllers");
  if (!text) return false;
  std::set<std::string> offered;
  std::istringstream words(*text);
  for (std::string word; words >> word;) offered.insert(word);
  return offered.contains("memory") && offered.contains("pids") && offered.contains("cpu");
}

// The mode from what was found, the same rule for both probes.
void decide_mode(CgroupHost& host) {
  if (!host.v2_root.empty() && unified_has_needed_controllers(host.v2_root)) {
    host.mode = CgroupHost::Mode::V2;
  } else if (host.v1_roots.contains("memory") && host.v1_roots.contains("pids")) {
    host.mode = CgroupHost::Mode::V1;
  }
}

// "cpu,cpuacct" -> its controllers; empty if a part is not a v1 controller.
std::vector<std::string_view> named_controllers(std::string_view name) {
  std::vector<std::string_view> controllers;
  while (!name.empty()) {
    size_t comma = name.find(',');
    std::string_view part = name.substr(0, comma);
    if (!kV1Controllers.contains(part)) return {};
    controllers.push_back(part);
    name = comma == std::string_view::npos ? std::string_view() : name.substr(comma + 1);
  }
  return controllers;
}

bool is_filesystem(const std::string& path, decltype(statfs::f_type) magic) {
  struct statfs fs {};
  return statfs(path.c_str(), &fs) == 0 && fs.f_type == magic;
}

}  // namespace

std::optional<CgroupHost> probe_standard_cgroups(const std::string& base) {
  struct statfs fs {};
  if (statfs(base.c_str(), &fs) < 0) return std::nullopt;
  CgroupHost host;
  if (fs.f_type == CGROUP2_SUPER_MAGIC) {
    host.v2_root = base;
    decide_mode(host);
    // Without the controllers there, v1 hierarchies may be mounted elsewhere: the table knows.
    if (host.mode != CgroupHost::Mode::V2) return std::nullopt;
    return host;
  }
  if (fs.f_type != TMPFS_MAGIC) return std::nullopt;
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(base.c_str()), closedir);
  if (!dir) return std::nullopt;
  while (const dirent* entry = readdir(dir.get())) {
    const std::string_view name = entry->d_name;
    if (name == "." || name == ".." || name == "systemd") continue;
    if (entry->d_type == DT_LNK) continue;  // "cpu" -> "cpu,cpuacct": the target is listed too
    if (entry->d_type != DT_DIR) return std::nullopt;
    const std::string path = base + "/" + entry->d_name;
    if (name == "unified") {
      if (!is_filesystem(path, CGROUP2_SUPER_MAGIC)) return std::nullopt;
      host.v2_root = path;
      continue;
    }
    const std::vector<std::string_view> controllers = named_controllers(name);
    if (controllers.empty()) return std::nullopt;  // not named by its controllers: ask the table
    // The hierarchies a run's v1 cgroup uses are checked with statfs; the others are taken by
    // name, as systemd names them (gc reads the mount table itself).
    const bool used = std::any_of(controllers.begin(), controllers.end(), [](std::string_view c) {
      return std::find(kV1ControllersOfARun.begin(), kV1ControllersOfARun.end(), c) !=
             kV1ControllersOfARun.end();
    });
    if (used && !is_filesystem(path, CGROUP_SUPER_MAGIC)) return std::nullopt;
    for (std::string_view controller : controllers)
      host.v1_roots.try_emplace(std::string(controller), path);
  }
  // A controller is attached to one hierarchy at a time: with memory in a v1 one, the unified
  // tree cannot offer it (decide_mode() would read its cgroup.controllers to find that out).
  if (host.v1_roots.contains("memory")) {
    if (host.v1_roots.contains("pids")) host.mode = CgroupHost::Mode::V1;
    return host;
  }
  decide_mode(host);
  return host;
}

CgroupHost probe_cgroups(const std::string& mountinfo_path) {
  const std::optional<std::string> table = cgroupfs::read_if_exists(mountinfo_path);
  if (!table) throw Error(ENOENT, "open " + mountinfo_path);
  CgroupHost host;
  std::string_view rest = *table;
  while (!rest.empty()) {
    size_t newline = rest.find('\n');
    const auto mount = parse_mountinfo_line(rest.substr(0, newline));
    rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
    if (!mount) continue;
    if (mount->fstype == "cgroup2" && host.v2_root.empty())
      host.v2_root = unescape_octal(mount->mount_point);
    if (mount->fstype == "cgroup") add_v1_controllers(*mount, host);
  }
  decide_mode(host);
  return host;
}

}  // namespace sandcell::runtime
