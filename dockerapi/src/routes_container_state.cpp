// /containers/...: list (filters, limit, size), pause, unpause, restart, rename, prune, top,
// stats. The container's figures come from its cgroups (State.CgroupPaths) and /proc.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api_error.hpp"
#include "api_filters.hpp"
#include "container_io.hpp"
#include "container_processes.hpp"
#include "create_request.hpp"
#include "events.hpp"
#include "routes.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/runtime/container.hpp"

namespace sandcell::dockerapi {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

HttpReply state_no_content() {
  HttpReply reply;
  reply.status = 204;
  reply.content_type.clear();
  return reply;
}

std::map<std::string, std::string> labels_in_request(const json& request) {
  std::map<std::string, std::string> out;
  json labels = request["Config"].value("Labels", json::object());
  if (labels.is_object())
    for (const auto& [key, value] : labels.items())
      if (value.is_string()) out[key] = value.get<std::string>();
  return out;
}

// Docker's status word: created | running | paused | exited.
std::string status_word(const ContainerState& state) { return is_paused(state) ? "paused" : state.status; }

// Bytes of the files in the writable layer (`size`): lstat each entry, no link followed.
int64_t files_bytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && !it->is_symlink(size_ec)) {
      uintmax_t size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<int64_t>(size);
    }
  }
  return total;
}

// The writable layer's size: its files' bytes while its disk is mounted (running); a stopped
// container's disk image is not mounted, so then the bytes its image holds on the host's disk
// (the files and the filesystem's own few blocks), which is also what rm frees.
int64_t layer_bytes(const ContainerDir& c) {
  std::error_code ec;
  if (!fs::exists(c.file("disk.img"), ec)) return files_bytes(c.file("upper"));  // unbounded
  if (fs::exists(c.file("disk/upper"), ec)) return files_bytes(c.file("disk/upper"));
  return static_cast<int64_t>(allocated_bytes(c.file("disk.img")));
}

json list_row(const ContainerDir& c, const json& request, const ContainerState& state, bool with_size) {
  std::vector<std::string> args = request["Config"].value("Entrypoint", std::vector<std::string>{});
  for (const std::string& a : request["Config"].value("Cmd", std::vector<std::string>{})) args.push_back(a);
  std::string command;
  for (const std::string& a : args) command += (command.empty() ? "" : " ") + a;
  std::string word = status_word(state);
  std::string status = word == "running"   ? "Up"
                       : word == "paused"  ? "Up (Paused)"
                       : word == "created" ? "Created"
                                           : "Exited (" + std::to_string(state.exit_code) + ")";
  json entry = {{"Id", c.id()}, {"Names", {"/" + request.value("Name", "")}}, {"Image", request["Image"]},
                {"ImageID", request["ImageID"]}, {"Command", command},
                {"Created", unix_time(request.value("Created", ""))}, {"State", word}, {"Status", status},
                {"Ports", json::array()}, {"Labels", request["Config"].value("Labels", json::object())},
                {"HostConfig", {{"NetworkMode", request["HostConfig"].value("NetworkMode", "none")}}},
                {"NetworkSettings", {{"Networks", json::object()}}}, {"Mounts", json::array()}};
  if (with_size) {
    int64_t rw = layer_bytes(c);
    entry["SizeRw"] = rw;
    entry["SizeRootFs"] = rw;  // the image's layers are shared, read-only: counted by `docker images`
  }
  return entry;
}

bool any_of_values(const std::vector<std::string>& values, const std::function<bool(const std::string&)>& match) {
  return values.empty() || std::any_of(values.begin(), values.end(), match);
}

bool image_matches(const std::string& wanted, const json& request) {
  std::string image = request.value("Image", ""), id = request.value("ImageID", "");
  std::string bare_id = id.starts_with("sha256:") ? id.substr(7) : id;
  std::string want_id = wanted.starts_with("sha256:") ? wanted.substr(7) : wanted;
  return image == wanted || image == wanted + ":latest" || id == wanted ||
         (want_id.size() >= 12 && bare_id.starts_with(want_id));
}

bool list_filters_match(const Filters& f, const ContainerDir& c, const json& request, const ContainerState& state) {
  auto values = [&f](const char* key) { return f.contains(key) ? f.at(key) : std::vector<std::string>{}; };
  std::string word = status_word(state), name = request.value("Name", "");
  if (!labels_match(values("label"), labels_in_request(request))) return false;
  if (!any_of_values(values("status"), [&](const std::string& s) { return s == word; })) return false;
  if (!any_of_values(values("id"), [&](const std::string& s) { return c.id().starts_with(s); })) return false;
  // Docker matches names by regular expression; sandcell by substring (no client regex runs here).
  if (!any_of_values(values("name"), [&](const std::string& s) {
        std::string bare = s.starts_with('/') ? s.substr(1) : s;
        return name.find(bare) != std::string::npos;
      }))
    return false;
  if (!any_of_values(values("ancestor"), [&](const std::string& s) { return image_matches(s, request); })) return false;
  if (!any_of_values(values("exited"), [&](const std::string& s) {
        return state.status == "exited" && parse_number<int>(s) == state.exit_code;
      }))
    return false;
  return true;
}

HttpReply list_containers(const ApiContext& api, const HttpRequest& request) {
  Filters filters = parse_filters(request, {"label", "status", "name", "id", "ancestor", "exited"});
  for (const std::string& s : filters["status"])
    if (s != "created" && s != "restarting" && s != "running" && s != "removing" && s != "paused" && s != "exited" &&
        s != "dead")
      throw bad_request("invalid filter 'status=" + s + "'");
  for (const std::string& s : filters["exited"])
    if (!parse_number<int>(s)) throw bad_request("invalid filter 'exited=" + s + "'");
  std::erase_if(filters, [](const auto& item) { return item.second.empty(); });
  int64_t limit = -1;
  if (auto text = request.param("limit"); text && !text->empty()) {
    auto parsed = parse_number<int64_t>(*text);
    if (!parsed) throw bad_request("invalid value for limit: " + *text);
    limit = *parsed;
  }
  // Docker: a limit, or an exited/status filter, lists stopped containers too.
  bool all = request.flag("all") || limit > 0 || filters.contains("exited") || filters.contains("status");
  struct Row {
    std::string created;
    json entry;
  };
  std::vector<Row> rows;
  for (const ContainerDir& c : api.containers.list()) {
    try {
      json created = c.create_request();
      ContainerState state = c.state();
      if (!all && state.status != "running") continue;
      if (!list_filters_match(filters, c, created, state)) continue;
      rows.push_back({created.value("Created", ""), list_row(c, created, state, request.flag("size"))});
    } catch (const std::exception&) {
      // removed while we listed
    }
  }
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.created > b.created; });
  json out = json::array();
  for (Row& row : rows) {
    if (limit > 0 && static_cast<int64_t>(out.size()) >= limit) break;
    out.push_back(std::move(row.entry));
  }
  return json_reply(200, out);
}

ContainerState running_state(const ContainerDir& c) {
  ContainerState state = c.state();
  if (state.status != "running") throw conflict("Container " + c.id() + " is not running");
  return state;
}

HttpReply pause_container(const ApiContext& api, const ContainerDir& c, bool frozen) {
  ContainerState state = running_state(c);
  if (is_paused(state) == frozen)
    throw conflict("Container " + c.id() + (frozen ? " is already paused" : " is not paused"));
  try {
    runtime::freeze_container(state.cgroup_paths, frozen);
  } catch (const std::exception& e) {
    throw ApiError{500, std::string(frozen ? "pause " : "unpause ") + c.id() + ": " + e.what()};
  }
  record_container_event(api.store_root, c, frozen ? "pause" : "unpause");
  return state_no_content();
}

HttpReply restart_container(const ApiContext& api, const ContainerDir& c, const HttpRequest& request) {
  std::optional<int> timeout;
  if (auto t = request.param("t"); t && !t->empty()) {
    timeout = parse_number<int>(*t);
    if (!timeout) throw bad_request("invalid value for t: " + *t);
  }
  check_network_allowed(c.create_request(), api.network);
  runtime::UniqueFd lock = lock_for_start(c);
  stop_container(c, timeout, request.param("signal").value_or(""));
  if (!api.containers.find_if_exists(c.id())) throw not_found("No such container: " + c.id());  // AutoRemove
  if (c.state().status == "exited") reset_for_start(c);
  start_supervisor(api.supervisor_exe, api.store_root, c);
  record_container_event(api.store_root, c, "restart");
  return state_no_content();
}

HttpReply rename_container(const ApiContext& api, const ContainerDir& c, const HttpRequest& request) {
  std::string name = request.param("name").value_or("");
  if (name.starts_with('/')) name.erase(0, 1);
  if (name.empty()) throw bad_request("Neither old nor new names may be empty");
  check_container_name(name);
  std::string old_name = c.create_request().value("Name", "");
  if (old_name == name) throw conflict("Renaming a container with the same name as its current name");
  api.containers.rename(c, name);
  record_container_event(api.store_root, c, "rename", {{"oldName", "/" + old_name}});
  return state_no_content();
}

HttpReply prune_containers(const ApiContext& api, const HttpRequest& request) {
  Filters filters = parse_filters(request, {"until", "label", "label!"});
  std::optional<int64_t> until_ns;
  for (const std::string& u : filters["until"]) until_ns = parse_timestamp_ns(u, "until");
  json deleted = json::array();
  int64_t reclaimed = 0;
  for (const ContainerDir& c : api.containers.list()) {
    try {
      json created = c.create_request();
      if (c.state().status == "running") continue;
      std::map<std::string, std::string> labels = labels_in_request(created);
      if (!labels_match(filters["label"], labels)) continue;
      if (!filters["label!"].empty() && labels_match(filters["label!"], labels)) continue;
      if (until_ns && parse_timestamp_ns(created.value("Created", "0"), "Created") >= *until_ns) continue;
      int64_t size = layer_bytes(c);
      if (c.state().status == "running") continue;  // started meanwhile
      api.containers.remove(c);
      record_event(api.store_root, container_event("destroy", c.id(), created));
      deleted.push_back(c.id());
      reclaimed += size;
    } catch (const ApiError&) {
      throw;
    } catch (const std::exception&) {
      // removed meanwhile
    }
  }
  record_event(api.store_root, {{"Type", "container"}, {"Action", "prune"}, {"status", "prune"},
                                {"Actor", {{"ID", ""}, {"Attributes", {{"reclaimed", std::to_string(reclaimed)}}}}},
                                {"scope", "local"}});
  return json_reply(200, {{"ContainersDeleted", deleted.empty() ? json(nullptr) : deleted}, {"SpaceReclaimed", reclaimed}});
}

// One process as `ps -ef` shows it, from /proc (host pids and uids, as Docker shows them).
std::optional<std::vector<std::string>> ps_row(pid_t pid) {
  std::string base = "/proc/" + std::to_string(pid);
  std::ifstream stat_file(base + "/stat");
  std::string stat;
  if (!std::getline(stat_file, stat)) return std::nullopt;
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::string comm = stat.substr(stat.find('(') + 1, paren - stat.find('(') - 1);
  std::istringstream fields(stat.substr(paren + 2));
  std::vector<std::string> f{std::istream_iterator<std::string>(fields), std::istream_iterator<std::string>()};
  if (f.size() < 20) return std::nullopt;
  // f[0] is field 3 (state): ppid f[1], utime f[11], stime f[12], starttime f[19].
  long ticks = std::max(sysconf(_SC_CLK_TCK), 1L);
  uint64_t cpu_s = (parse_number<uint64_t>(f[11]).value_or(0) + parse_number<uint64_t>(f[12]).value_or(0)) /
                   static_cast<uint64_t>(ticks);
  struct sysinfo si {};
  sysinfo(&si);
  time_t started = time(nullptr) - si.uptime + static_cast<time_t>(parse_number<uint64_t>(f[19]).value_or(0) / ticks);
  std::tm tm{};
  localtime_r(&started, &tm);
  char stime[16], cputime[32];
  strftime(stime, sizeof stime, "%H:%M", &tm);
  snprintf(cputime, sizeof cputime, "%02llu:%02llu:%02llu", static_cast<unsigned long long>(cpu_s / 3600),
           static_cast<unsigned long long>(cpu_s / 60 % 60), static_cast<unsigned long long>(cpu_s % 60));
  std::string uid = "?";
  std::ifstream status(base + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("Uid:")) {
      std::istringstream words(line.substr(4));
      words >> uid;
    }
  std::ifstream cmdline_file(base + "/cmdline", std::ios::binary);
  std::string cmdline((std::istreambuf_iterator<char>(cmdline_file)), std::istreambuf_iterator<char>());
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  if (cmdline.empty()) cmdline = "[" + comm + "]";
  return std::vector<std::string>{uid, std::to_string(pid), f[1], "0", stime, "?", cputime, cmdline};
}

HttpReply top_processes(const ContainerDir& c, const HttpRequest& request) {
  std::string ps_args = request.param("ps_args").value_or("");
  if (!ps_args.empty() && ps_args != "-ef")
    throw bad_request("top: ps_args is not supported by sandcell's Docker API (the columns are ps -ef's)");
  ContainerState state = running_state(c);
  json processes = json::array();
  for (pid_t pid : runtime::container_pids(state.cgroup_paths))
    if (auto row = ps_row(pid)) processes.push_back(*row);
  return json_reply(200, {{"Titles", {"UID", "PID", "PPID", "C", "STIME", "TTY", "TIME", "CMD"}},
                          {"Processes", processes}});
}

// The host's CPU time in nanoseconds (/proc/stat's first line), what Docker's
// system_cpu_usage is; the CLI's CPU % is the container's delta over this delta times CPUs.
uint64_t system_cpu_ns() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  in >> cpu;
  uint64_t ticks = 0;
  for (int i = 0; i < 8; ++i) {
    uint64_t value = 0;
    if (!(in >> value)) break;
    ticks += value;
  }
  return ticks * (1000000000ull / static_cast<uint64_t>(std::max(sysconf(_SC_CLK_TCK), 1L)));
}

json cpu_json(const runtime::ContainerCgroupStats& s, bool running) {
  uint64_t online = static_cast<uint64_t>(std::max(sysconf(_SC_NPROCESSORS_ONLN), 1L));
  if (!running) return {{"cpu_usage", {{"total_usage", 0}, {"usage_in_kernelmode", 0}, {"usage_in_usermode", 0}}},
                        {"throttling_data", {{"periods", 0}, {"throttled_periods", 0}, {"throttled_time", 0}}}};
  json usage = {{"total_usage", s.cpu_total_ns.value_or(0)}, {"usage_in_kernelmode", s.cpu_system_ns},
                {"usage_in_usermode", s.cpu_user_ns}};
  if (!s.cpu_percpu_ns.empty()) usage["percpu_usage"] = s.cpu_percpu_ns;
  return {{"cpu_usage", usage}, {"system_cpu_usage", system_cpu_ns()}, {"online_cpus", online},
          {"throttling_data", {{"periods", 0}, {"throttled_periods", 0}, {"throttled_time", 0}}}};
}

struct StatsSample {
  std::string read;
  json cpu, memory, pids;
};

StatsSample stats_sample(const ContainerState& state) {
  bool running = state.status == "running";
  runtime::ContainerCgroupStats s = running ? runtime::container_cgroup_stats(state.cgroup_paths)
                                            : runtime::ContainerCgroupStats{};
  struct sysinfo si {};
  sysinfo(&si);
  uint64_t host_memory = static_cast<uint64_t>(si.totalram) * si.mem_unit;
  StatsSample out{.read = running ? now_rfc3339() : "0001-01-01T00:00:00Z", .cpu = cpu_json(s, running), .memory = {}, .pids = {}};
  out.memory = running ? json{{"usage", s.memory_usage.value_or(0)},
                              {"limit", std::min(s.memory_limit.value_or(host_memory), host_memory)},
                              {"stats", s.memory_stat}}
                       : json::object();
  out.pids = running ? json{{"current", s.pids_current.value_or(0)}} : json::object();
  if (running && s.pids_limit) out.pids["limit"] = *s.pids_limit;
  return out;
}

json stats_json(const ContainerDir& c, const std::string& name, const StatsSample& now, const StatsSample& before) {
  return {{"read", now.read}, {"preread", before.read}, {"id", c.id()}, {"name", "/" + name},
          {"pids_stats", now.pids}, {"num_procs", 0}, {"cpu_stats", now.cpu}, {"precpu_stats", before.cpu},
          {"memory_stats", now.memory}, {"storage_stats", json::object()},
          {"blkio_stats", {{"io_service_bytes_recursive", nullptr}, {"io_serviced_recursive", nullptr}}}};
}

// A JSON document per second until the client goes (the write fails), the container stops or
// the server stops.
class StatsStream {
 public:
  StatsStream(ContainerDir c, std::string name) : c_(std::move(c)), name_(std::move(name)) {}
  size_t next(char* buffer, size_t size) {
    try {
      return next_or_throw(buffer, size);
    } catch (const std::exception&) {
      return 0;  // a stream callback must not throw into libmicrohttpd
    }
  }

 private:
  size_t next_or_throw(char* buffer, size_t size) {
    if (pending_.empty()) {
      if (ended_ || streams_ending()) return 0;
      if (!first_) std::this_thread::sleep_for(std::chrono::seconds(1));
      first_ = false;
      ContainerState state;
      try {
        state = c_.state();
      } catch (const std::exception&) {
        return 0;  // removed
      }
      StatsSample now = stats_sample(state);
      pending_ = stats_json(c_, name_, now, before_).dump() + "\n";
      before_ = now;
      ended_ = state.status != "running";
    }
    size_t n = std::min(size, pending_.size());
    std::copy_n(pending_.data(), n, buffer);
    pending_.erase(0, n);
    return n;
  }

  ContainerDir c_;
  std::string name_, pending_;
  StatsSample before_{.read = "0001-01-01T00:00:00Z", .cpu = cpu_json({}, false), .memory = {}, .pids = {}};
  bool first_ = true, ended_ = false;
};

HttpReply container_stats(const ContainerDir& c, const HttpRequest& request) {
  std::string name = c.create_request().value("Name", "");
  auto stream = request.param("stream");
  bool streaming = !stream || stream->empty() || request.flag("stream");
  if (streaming) {
    auto s = std::make_shared<StatsStream>(c, name);
    HttpReply reply;
    reply.stream = [s](char* buffer, size_t size) { return s->next(buffer, size); };
    return reply;
  }
  StatsSample before{.read = "0001-01-01T00:00:00Z", .cpu = cpu_json({}, false), .memory = {}, .pids = {}};
  ContainerState state = c.state();
  // Without one-shot Docker takes two samples a second apart, so precpu_stats is filled and the
  // CLI can compute a CPU percentage.
  if (!request.flag("one-shot") && state.status == "running") {
    before = stats_sample(state);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    state = c.state();
  }
  return json_reply(200, stats_json(c, name, stats_sample(state), before));
}

}  // namespace

std::optional<HttpReply> container_state_route(const ApiContext& api, const HttpRequest& request,
                                               const Segments& path) {
  if (path.empty() || path[0] != "containers") return std::nullopt;
  const std::string& method = request.method;
  if (path.size() == 2 && path[1] == "json" && method == "GET") return list_containers(api, request);
  if (path.size() == 2 && path[1] == "prune" && method == "POST") return prune_containers(api, request);
  if (path.size() != 3) return std::nullopt;
  const std::string& verb = path[2];
  if (method == "GET" && verb == "top") return top_processes(api.containers.find(path[1]), request);
  if (method == "GET" && verb == "stats") return container_stats(api.containers.find(path[1]), request);
  if (method != "POST") return std::nullopt;
  if (verb == "pause") return pause_container(api, api.containers.find(path[1]), true);
  if (verb == "unpause") return pause_container(api, api.containers.find(path[1]), false);
  if (verb == "restart") return restart_container(api, api.containers.find(path[1]), request);
  if (verb == "rename") return rename_container(api, api.containers.find(path[1]), request);
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
