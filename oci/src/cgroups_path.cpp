// linux.cgroupsPath → one directory per hierarchy; mkdir -p recording what was made; removal.
#include "cgroups_path.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/runtime/container.hpp"

namespace sandcell::oci {
namespace {

namespace fs = std::filesystem;

// "/a//b/" → {"a", "b"}; ".." anywhere is refused, "." is dropped.
std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    std::string part = path.substr(pos, slash - pos);
    if (part == "..")
      throw Error::invalid("linux.cgroupsPath: '..' is not allowed: '" + path + "'");
    if (!part.empty() && part != ".") out.push_back(part);
    pos = slash + 1;
  }
  return out;
}

std::string read_trimmed(const std::string& path) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

void write_control(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) throw Error(errno, "write " + value + " to " + path);
}

bool is_unified(const std::string& dir) {
  return fs::exists(dir + "/cgroup.controllers");
}

// A new v1 cpuset cgroup starts with empty cpus and mems and refuses tasks until they are set.
void inherit_cpuset(const std::string& parent, const std::string& dir) {
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    if (!fs::exists(dir + "/" + file) || !read_trimmed(dir + "/" + file).empty()) continue;
    write_control(dir + "/" + file, read_trimmed(parent + "/" + file));
  }
}

// The directories from the hierarchy's mount down to `dir`; the mount itself is not made.
void make_dir_chain(const std::string& root, const std::string& dir,
                    const std::vector<std::string>& v2_controllers,
                    std::vector<std::string>& created) {
  std::string current = root;
  for (const std::string& part : path_components(dir.substr(root.size()))) {
    std::string parent = current;
    current += "/" + part;
    if (is_unified(parent)) enable_v2_controllers(parent, v2_controllers);
    if (mkdir(current.c_str(), 0755) == 0) {
      created.push_back(current);
      inherit_cpuset(parent, current);
    } else if (errno != EEXIST) {
      throw Error(errno, "linux.cgroupsPath: mkdir " + current);
    }
  }
}

}  // namespace

void enable_v2_controllers(const std::string& parent, const std::vector<std::string>& wanted) {
  std::string available = " " + read_trimmed(parent + "/cgroup.controllers") + " ";
  std::string enabled = " " + read_trimmed(parent + "/cgroup.subtree_control") + " ";
  for (const std::string& controller : wanted)
    if (available.find(" " + controller + " ") != std::string::npos &&
        enabled.find(" " + controller + " ") == std::string::npos)
      write_control(parent + "/cgroup.subtree_control", "+" + controller);
}

std::vector<CgroupDir> resolve_cgroups_path(const runtime::CgroupHost& host,
                                            const std::string& cgroups_path,
                                            const std::string& id) {
  std::vector<std::string> parts = path_components(cgroups_path);
  if (!cgroups_path.empty() && parts.empty())
    throw Error::invalid("linux.cgroupsPath: names no cgroup: '" + cgroups_path + "'");
  if (cgroups_path.empty()) parts = {"oci-" + id};
  if (cgroups_path.empty() || cgroups_path[0] != '/')
    parts.insert(parts.begin(), runtime::kCgroupParent);
  std::string inner;
  for (const std::string& part : parts) inner += "/" + part;
  std::vector<std::string> mounts;
  if (host.v1_roots.contains("freezer")) mounts.push_back(host.v1_roots.at("freezer"));
  for (const auto& [controller, mount] : host.v1_roots)
    if (std::find(mounts.begin(), mounts.end(), mount) == mounts.end()) mounts.push_back(mount);
  if (!host.v2_root.empty()) mounts.push_back(host.v2_root);
  std::vector<CgroupDir> dirs;
  for (const std::string& mount : mounts) dirs.push_back({.mount = mount, .dir = mount + inner});
  return dirs;
}

MadeCgroups make_cgroups(const std::vector<CgroupDir>& dirs,
                         const std::vector<std::string>& v2_controllers) {
  MadeCgroups made;
  try {
    for (const CgroupDir& d : dirs) {
      make_dir_chain(d.mount, d.dir, v2_controllers, made.created);
      made.dirs.push_back(d.dir);
    }
  } catch (...) {
    std::reverse(made.created.begin(), made.created.end());
    for (const std::string& dir : made.created) rmdir(dir.c_str());
    throw;
  }
  std::reverse(made.created.begin(), made.created.end());
  return made;
}

void remove_made_cgroups(const std::vector<std::string>& dirs,
                         const std::vector<std::string>& created) {
  // Repeated: a process may fork between the listing and the kill.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (true) {
    std::vector<pid_t> left = runtime::container_pids(dirs);
    if (left.empty()) break;
    if (std::chrono::steady_clock::now() > deadline)
      throw Error(EBUSY, "delete: " + std::to_string(left.size()) + " processes are left in " +
                             dirs.front());
    for (pid_t pid : left) ::kill(pid, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Deepest first. A parent that holds another container's cgroup stays (ENOTEMPTY/EBUSY);
  // the container's own directories must go.
  for (const std::string& dir : created) {
    if (rmdir(dir.c_str()) == 0 || errno == ENOENT) continue;
    bool own = std::find(dirs.begin(), dirs.end(), dir) != dirs.end();
    if (own || (errno != EBUSY && errno != ENOTEMPTY)) throw Error(errno, "delete: rmdir " + dir);
  }
}

}  // namespace sandcell::oci
