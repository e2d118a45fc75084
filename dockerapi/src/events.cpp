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

namespace {

// Once per lost supervisor, whoever of the waiters and the server's watcher is first.
bool first_to_note(const ContainerDir& c, const ContainerState& state) {
  std::string marker = c.file(("lost-" + std::to_string(state.pid) + "-" + std::to_string(state.pid_start)).c_str());
  return bool(UniqueFd(open(marker.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)));
}

// The supervisor ends a run by recording it in state.json, then writing the exit file, then the
// `die`. Killed between the first two it leaves "exited" with an empty exit file, which waiters
// would wait on forever: the exit and the die are written for it. Only while no start holds the
// start lock: a start truncates the exit file before it resets state.json, and the old run's
// exit written in that gap would end the new run's waits at once. A start in progress writes
// the new run's state itself; a restart waiting in its stop for this exit gives up after its
// timeouts and starts the container all the same.
void note_lost_end(const std::string& store_root, const ContainerDir& c, const nlohmann::json& recorded) {
  ContainerState state = c.state();
  if (state.status != "exited" || c.exit_written()) return;
  if (state.pid <= 0 || start_time_of(state.pid) == state.pid_start) return;  // still writing it
  UniqueFd lock(open(c.file("start.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock || flock(lock.get(), LOCK_EX | LOCK_NB) < 0) return;
  if (read_json(c.file("state.json")) != recorded || c.exit_written() || !first_to_note(c, state)) return;
  c.write_exit(state.exit_code);
  record_container_event(store_root, c, "die", {{"exitCode", std::to_string(state.exit_code)}});
}

}  // namespace

void note_lost_supervisor(const std::string& store_root, const ContainerDir& c) {
  nlohmann::json recorded = read_json(c.file("state.json"));
  const std::string status = recorded.value("Status", "");
  if (status == "exited") return note_lost_end(store_root, c, recorded);
  if (status != "running") return;
  ContainerState state = c.state();  // reads exited when the supervisor is gone
  if (state.status != "exited" || !first_to_note(c, state)) return;
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
