// The event log: JSON lines appended with O_APPEND (whole lines, one write each), read by offset.
#include "events.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;
constexpr off_t kRotateBytes = 1 << 20;

std::string log_path(const std::string& store_root) { return store_root + "/docker/events.jsonl"; }

void read_lines(const std::string& path, uint64_t& offset, std::vector<nlohmann::json>& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;
  in.seekg(static_cast<std::streamoff>(offset));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written: read it next time
    offset += line.size() + 1;
    nlohmann::json event = parse_bounded_json_or_discarded(line);
    if (event.is_object()) out.push_back(std::move(event));
  }
}

}  // namespace

nlohmann::json container_event(const std::string& action, const std::string& id, const nlohmann::json& request,
                               const std::map<std::string, std::string>& extra) {
  nlohmann::json attributes = nlohmann::json::object();
  const nlohmann::json& labels = request.contains("Config") ? request["Config"].value("Labels", nlohmann::json::object())
                                                            : nlohmann::json::object();
  if (labels.is_object())
    for (const auto& [key, value] : labels.items())
      if (value.is_string()) attributes[key] = value;
  std::string image = request.value("Image", "");
  attributes["image"] = image;
  attributes["name"] = request.value("Name", "");
  for (const auto& [key, value] : extra) attributes[key] = value;
  return {{"status", action}, {"id", id}, {"from", image}, {"Type", "container"}, {"Action", action},
          {"Actor", {{"ID", id}, {"Attributes", attributes}}}, {"scope", "local"}};
}

nlohmann::json image_event(const std::string& action, const std::string& id, const std::string& name) {
  return {{"status", action}, {"id", id}, {"Type", "image"}, {"Action", action},
          {"Actor", {{"ID", id}, {"Attributes", {{"name", name}}}}}, {"scope", "local"}};
}

void record_event(const std::string& store_root, nlohmann::json event) {
  auto now = std::chrono::system_clock::now().time_since_epoch();
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now).count();
  event["time"] = ns / 1000000000;
  event["timeNano"] = ns;
  std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  const std::string path = log_path(store_root);
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  if (!fd) return;
  // Appends share a lock with the rotation, so no line is split across the two files.
  if (flock(fd.get(), LOCK_EX) < 0) return;
  struct stat st {};
  if (fstat(fd.get(), &st) == 0 && st.st_nlink == 0) {  // rotated away between open and lock
    fd = UniqueFd(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!fd || flock(fd.get(), LOCK_EX) < 0) return;
  }
  if (write(fd.get(), line.data(), line.size()) < 0) return;
  if (fstat(fd.get(), &st) == 0 && st.st_size > kRotateBytes) ::rename(path.c_str(), (path + ".1").c_str());
}

void record_container_event(const std::string& store_root, const ContainerDir& container, const std::string& action,
                            const std::map<std::string, std::string>& extra) {
  try {
    record_event(store_root, container_event(action, container.id(), container.create_request(), extra));
  } catch (const std::exception&) {
    // removed meanwhile, or unreadable: no event
  }
}

std::vector<nlohmann::json> read_events(const std::string& store_root, EventCursor& cursor) {
  std::vector<nlohmann::json> out;
  const std::string path = log_path(store_root);
  struct stat st {};
  if (stat(path.c_str(), &st) < 0) return out;
  if (cursor.inode == 0) {
    uint64_t rotated_offset = 0;
    read_lines(path + ".1", rotated_offset, out);
  } else if (cursor.inode != st.st_ino) {
    // Rotated: finish the old file (now events.jsonl.1), then the new one from its start.
    struct stat old {};
    if (stat((path + ".1").c_str(), &old) == 0 && old.st_ino == cursor.inode) read_lines(path + ".1", cursor.offset, out);
    cursor.offset = 0;
  }
  cursor.inode = st.st_ino;
  read_lines(path, cursor.offset, out);
  return out;
}

void note_lost_supervisor(const std::string& store_root, const ContainerDir& c) {
  nlohmann::json recorded = read_json(c.file("state.json"));
  if (recorded.value("Status", "") != "running") return;
  ContainerState state = c.state();  // reads exited when the supervisor is gone
  if (state.status != "exited") return;
  std::string marker = c.file(("lost-" + std::to_string(state.pid) + "-" + std::to_string(state.pid_start)).c_str());
  UniqueFd once(open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!once) return;  // someone else noted it
  state.finished_at = now_rfc3339();
  c.save_state(state);
  c.write_exit(state.exit_code);  // waiters would wait for the dead supervisor forever
  record_container_event(store_root, c, "die", {{"exitCode", std::to_string(state.exit_code)}});
}

void note_lost_supervisors(const std::string& store_root, const ContainerStore& containers) {
  for (const ContainerDir& c : containers.list()) {
    try {
      note_lost_supervisor(store_root, c);
    } catch (const std::exception&) {
      // removed while we looked
    }
  }
}

}  // namespace sandcell::dockerapi
