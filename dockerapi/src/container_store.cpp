// Containers as directories: create.json once, state.json replaced atomically, the exit file.
#include "container_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "api_error.hpp"
#include "sandcell/oci/state.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/stale_disk_mounts.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "sandcell/runtime/container.hpp"

namespace sandcell::dockerapi {
namespace fs = std::filesystem;
using runtime::UniqueFd;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(errno, "read " + path);
  return nlohmann::json::parse(in);
}

void write_json_atomically(const std::string& path, const nlohmann::json& value) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << value.dump() << "\n";
    if (!out.flush()) throw Error(errno ? errno : EIO, "write " + tmp);
  }
  check(rename(tmp.c_str(), path.c_str()), "rename " + tmp);
}

std::string random_id() {
  std::random_device device;
  std::string id;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 64; ++i) id += kHex[device() % 16];
  return id;
}

namespace {

bool is_id(const std::string& name) {
  return name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// Serialises name checks: two creates with one name must not both succeed.
class StoreLock {
 public:
  explicit StoreLock(const std::string& root) : fd_(open((root + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600)) {
    if (!fd_) throw Error(errno, "open " + root + "/.lock");
    check(flock(fd_.get(), LOCK_EX), "flock " + root + "/.lock");
  }

 private:
  UniqueFd fd_;
};

}  // namespace

std::string ContainerDir::id() const { return fs::path(dir_).filename().string(); }

std::string ContainerDir::store_root() const { return fs::path(dir_).parent_path().parent_path().parent_path().string(); }

nlohmann::json ContainerDir::create_request() const { return read_json(file("create.json")); }

ContainerState ContainerDir::state() const {
  nlohmann::json j = read_json(file("state.json"));
  ContainerState s{.status = j.value("Status", "created"),
                   .pid = j.value("Pid", 0),
                   .pid_start = j.value("PidStart", 0ull),
                   .started_at = j.value("StartedAt", ""),
                   .finished_at = j.value("FinishedAt", ""),
                   .exit_code = j.value("ExitCode", 0),
                   .oom_killed = j.value("OOMKilled", false),
                   .error = j.value("Error", ""),
                   .init_pid = j.value("InitPid", 0),
                   .cgroup_paths = j.value("CgroupPaths", std::vector<std::string>{})};
  // A supervisor killed before it could record the end: the container is over all the same.
  if (s.status == "running" && (s.pid <= 0 || start_time_of(s.pid) != s.pid_start)) {
    s.status = "exited";
    s.exit_code = s.exit_code == 0 ? 137 : s.exit_code;
    s.error = "supervisor gone";
  }
  return s;
}

void ContainerDir::save_state(const ContainerState& s) const {
  write_json_atomically(file("state.json"), {{"Status", s.status},
                                             {"Pid", s.pid},
                                             {"PidStart", s.pid_start},
                                             {"StartedAt", s.started_at},
                                             {"FinishedAt", s.finished_at},
                                             {"ExitCode", s.exit_code},
                                             {"OOMKilled", s.oom_killed},
                                             {"Error", s.error},
                                             {"InitPid", s.init_pid},
                                             {"CgroupPaths", s.cgroup_paths}});
}

void ContainerDir::write_exit(int status_code) const {
  UniqueFd fd(open(file("exit").c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw Error(errno, "open " + file("exit"));
  std::string text = nlohmann::json{{"StatusCode", status_code}}.dump() + "\n";
  check(pwrite(fd.get(), text.data(), text.size(), 0), "write " + file("exit"));
}

bool ContainerDir::exit_written() const {
  struct stat st {};
  return stat(file("exit").c_str(), &st) < 0 || st.st_size > 0;
}

ContainerStore::ContainerStore(std::string root) : root_(std::move(root)) {
  fs::create_directories(root_);
  check(chmod(root_.c_str(), 0700), "chmod " + root_);
}

ContainerDir ContainerStore::create(nlohmann::json request) const {
  StoreLock lock(root_);
  std::string name = request.value("Name", "");
  if (!name.empty() && named(name))
    throw conflict("Conflict. The container name \"/" + name + "\" is already in use.");
  ContainerDir container(root_ + "/" + random_id());
  check(mkdir(container.path().c_str(), 0700), "mkdir " + container.path());
  if (name.empty()) request["Name"] = container.id().substr(0, 12);
  request["Id"] = container.id();
  request["Created"] = now_rfc3339();
  write_json_atomically(container.file("create.json"), request);
  { std::ofstream(container.file("exit")); }
  { std::ofstream(container.file("log")); }
  if (request["Config"].value("OpenStdin", false))
    check(mkfifo(container.file("stdin").c_str(), 0600), "mkfifo " + container.file("stdin"));
  container.save_state({});
  return container;
}

std::optional<ContainerDir> ContainerStore::find_if_exists(const std::string& id_or_name) const {
  std::string key = id_or_name.starts_with('/') ? id_or_name.substr(1) : id_or_name;
  if (key.empty()) return std::nullopt;
  if (is_id(key) && fs::exists(root_ + "/" + key + "/create.json")) return ContainerDir(root_ + "/" + key);
  std::optional<ContainerDir> by_prefix;
  int prefixed = 0;
  for (const ContainerDir& c : list()) {
    try {
      if (c.create_request().value("Name", "") == key) return c;
    } catch (const std::exception&) {
      continue;  // removed while we looked
    }
    if (c.id().starts_with(key)) {
      by_prefix = c;
      ++prefixed;
    }
  }
  if (prefixed == 1) return by_prefix;
  return std::nullopt;
}

std::optional<ContainerDir> ContainerStore::named(const std::string& name) const {
  for (const ContainerDir& c : list()) {
    try {
      if (c.create_request().value("Name", "") == name) return c;
    } catch (const std::exception&) {
      continue;  // removed while we looked
    }
  }
  return std::nullopt;
}

ContainerDir ContainerStore::find(const std::string& id_or_name) const {
  auto found = find_if_exists(id_or_name);
  if (!found) throw not_found("No such container: " + id_or_name);
  return *found;
}

std::vector<ContainerDir> ContainerStore::list() const {
  std::vector<ContainerDir> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    std::string name = entry.path().filename().string();
    if (is_id(name) && fs::exists(entry.path() / "create.json")) out.emplace_back(entry.path().string());
  }
  return out;
}

void ContainerStore::rename(const ContainerDir& container, const std::string& new_name) const {
  StoreLock lock(root_);
  std::optional<ContainerDir> holder = named(new_name);
  if (holder && holder->id() != container.id())
    throw conflict("Conflict. The container name \"/" + new_name + "\" is already in use by container \"" +
                   holder->id() + "\". You have to remove (or rename) that container to be able to reuse that name.");
  nlohmann::json request = container.create_request();
  request["Name"] = new_name;
  write_json_atomically(container.file("create.json"), request);
}

void ContainerStore::remove(const ContainerDir& container) const {
  // A killed supervisor left the container's disk mounted (its lock free): remove_all would stop
  // at the mount point, and the loop device would stay.
  unmount_stale_disks(container.path());
  std::error_code ec;
  fs::remove_all(container.path(), ec);
  if (ec) throw Error(ec.value(), "remove " + container.path());
}

bool is_paused(const ContainerState& s) {
  if (s.status != "running") return false;
  try {
    return runtime::container_frozen(s.cgroup_paths);
  } catch (const std::exception&) {
    return false;
  }
}

nlohmann::json state_to_json(const ContainerState& s) {
  bool paused = is_paused(s);
  return {{"Status", paused ? "paused" : s.status},
          {"Running", s.status == "running"},
          {"Paused", paused},
          {"Restarting", false},
          {"OOMKilled", s.oom_killed},
          {"Dead", false},
          {"Pid", s.status == "running" ? s.pid : 0},
          {"ExitCode", s.exit_code},
          {"Error", s.error},
          {"StartedAt", s.started_at.empty() ? "0001-01-01T00:00:00Z" : s.started_at},
          {"FinishedAt", s.finished_at.empty() ? "0001-01-01T00:00:00Z" : s.finished_at}};
}

std::string now_rfc3339() { return oci::rfc3339_now(); }

unsigned long long start_time_of(pid_t pid) { return oci::process_start_time(pid); }

}  // namespace sandcell::dockerapi
