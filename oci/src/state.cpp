#include "sandcell/oci/state.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sandcell/runtime/container.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::oci {
namespace {

namespace fs = std::filesystem;

void check_id(const std::string& id) {
  // runc's rule: the id becomes a directory and a cgroup name.
  bool ok = !id.empty() && id.size() <= 200 && id != "." && id != "..";
  for (char c : id) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '+';
  if (!ok) throw Error::invalid("invalid container id '" + id + "' (letters, digits, _ - . + only)");
}

}  // namespace

std::string status_name(Status status) {
  switch (status) {
    case Status::Creating: return "creating";
    case Status::Created: return "created";
    case Status::Running: return "running";
    case Status::Paused: return "paused";
    case Status::Stopped: return "stopped";
  }
  return "stopped";
}

StateStore::StateStore(std::string root) : root_(std::move(root)) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw Error(ec.value(), "create the state root " + root_);
  chmod(root_.c_str(), 0700);
}

std::string StateStore::dir(const std::string& id) const {
  check_id(id);
  return root_ + "/" + id;
}

void StateStore::reserve(const std::string& id) const {
  if (mkdir(dir(id).c_str(), 0700) < 0) {
    if (errno == EEXIST) throw Error::invalid("container " + id + " already exists");
    throw Error(errno, "create " + dir(id));
  }
}

void StateStore::save(const ContainerState& s) const {
  nlohmann::json j = {{"id", s.id},
                      {"bundle", s.bundle},
                      {"created", s.created},
                      {"pid", s.pid},
                      {"pid_start", s.pid_start},
                      {"started", s.started},
                      {"cgroup_paths", s.cgroup_paths},
                      {"cgroup_created", s.cgroup_created},
                      {"annotations", s.annotations}};
  if (!s.systemd_unit.empty()) {
    j["systemd_unit"] = s.systemd_unit;
    j["systemd_user"] = s.systemd_user;
  }
  std::string path = dir(s.id) + "/state.json";
  {
    std::ofstream out(path + ".tmp", std::ios::trunc);
    out << j.dump();
    if (!out.flush()) throw Error(errno, "write " + path + ".tmp");
  }
  if (rename((path + ".tmp").c_str(), path.c_str()) < 0) throw Error(errno, "rename to " + path);
}

ContainerState StateStore::load(const std::string& id) const {
  std::ifstream in(dir(id) + "/state.json");
  if (!in) throw Error::invalid("container " + id + " does not exist");
  nlohmann::json j;
  try {
    j = parse_bounded_json(in);
    return {.id = j.at("id"),
            .bundle = j.at("bundle"),
            .created = j.at("created"),
            .pid = j.at("pid"),
            .pid_start = j.at("pid_start"),
            .started = j.at("started"),
            .cgroup_paths = j.at("cgroup_paths"),
            // A state written before cgroupsPath was followed: create made all of its directories.
            .cgroup_created =
                j.value("cgroup_created", j.at("cgroup_paths").get<std::vector<std::string>>()),
            .annotations = j.at("annotations"),
            .systemd_unit = j.value("systemd_unit", ""),
            .systemd_user = j.value("systemd_user", false)};
  } catch (const nlohmann::json::exception& e) {
    throw Error::invalid("state of container " + id + " is damaged: " + e.what());
  }
}

std::vector<std::string> StateStore::ids() const {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(root_))
    if (entry.is_directory() && fs::exists(entry.path() / "state.json")) out.push_back(entry.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

void StateStore::remove(const std::string& id) const {
  std::error_code ec;
  fs::remove_all(dir(id), ec);
  if (ec) throw Error(ec.value(), "remove " + dir(id));
}

unsigned long long process_start_time(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return 0;
  std::istringstream fields(text.substr(paren + 2));
  std::string state, field;
  fields >> state;
  if (state == "Z" || state == "X") return 0;
  for (int i = 4; i < 22 && fields >> field; ++i) {
  }
  unsigned long long start = 0;
  fields >> start;
  return start;
}

Status current_status(const ContainerState& s) {
  if (s.pid <= 0 || process_start_time(s.pid) != s.pid_start) return Status::Stopped;
  if (!s.started) return Status::Created;
  return runtime::container_frozen(s.cgroup_paths) ? Status::Paused : Status::Running;
}

nlohmann::json state_json(const ContainerState& s, Status status) {
  nlohmann::json j = {{"ociVersion", "1.0.2"}, {"id", s.id}, {"status", status_name(status)},
                      {"bundle", s.bundle}, {"created", s.created}, {"annotations", s.annotations}};
  j["pid"] = status == Status::Stopped ? 0 : s.pid;
  j["rootfs"] = "";
  j["owner"] = "";
  return j;
}

std::string rfc3339_now() {
  auto now = std::chrono::system_clock::now();
  std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(text + n, sizeof text - n, ".%09lldZ", static_cast<long long>(nanos));
  return text;
}

}  // namespace sandcell::oci
