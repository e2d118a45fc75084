// cgroup files → runc's stats JSON (libcontainer/cgroups/fs and fs2, converted as runc's
// events.go does). v1 and v2 files are told apart by name; a hybrid host mixes them.
#include "cgroup_stats.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "sandcell/base/number.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
using Counters = std::map<std::string, uint64_t>;

// The first of the container's directories holding `file`.
std::optional<std::string> find_file(const std::vector<std::string>& dirs,
                                     const std::string& file) {
  for (const std::string& dir : dirs)
    if (std::filesystem::exists(dir + "/" + file)) return dir + "/" + file;
  return std::nullopt;
}

std::optional<std::string> read_control(const std::vector<std::string>& dirs,
                                        const std::string& file) {
  std::optional<std::string> path = find_file(dirs, file);
  if (!path) return std::nullopt;
  std::ifstream in(*path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.eof() && in.fail()) return std::nullopt;
  return text;
}

// A number, or "max" (no limit) as the largest uint64 (runc: math.MaxUint64).
std::optional<uint64_t> read_number(const std::vector<std::string>& dirs, const std::string& file) {
  std::optional<std::string> text = read_control(dirs, file);
  if (!text) return std::nullopt;
  std::string value = text->substr(0, text->find_first_of(" \n"));
  if (value == "max") return std::numeric_limits<uint64_t>::max();
  return parse_number<uint64_t>(value);
}

// "key value" lines (memory.stat, cpu.stat, memory.events).
Counters read_keyed(const std::vector<std::string>& dirs, const std::string& file) {
  Counters out;
  std::istringstream in(read_control(dirs, file).value_or(""));
  std::string key;
  uint64_t value = 0;
  while (in >> key >> value) out[key] = value;
  return out;
}

std::vector<uint64_t> read_list(const std::vector<std::string>& dirs, const std::string& file) {
  std::vector<uint64_t> out;
  std::istringstream in(read_control(dirs, file).value_or(""));
  for (uint64_t n = 0; in >> n;) out.push_back(n);
  return out;
}

// Go's omitempty: a zero counter is not printed.
void put(json& j, const char* key, uint64_t value) {
  if (value != 0) j[key] = value;
}

json cpu_stats(const std::vector<std::string>& dirs) {
  json usage = json::object(), throttling = json::object();
  if (std::optional<uint64_t> total = read_number(dirs, "cpuacct.usage")) {
    put(usage, "total", *total);
    if (auto percpu = read_list(dirs, "cpuacct.usage_percpu"); !percpu.empty())
      usage["percpu"] = percpu;
    if (auto user = read_list(dirs, "cpuacct.usage_percpu_user"); !user.empty())
      usage["percpu_user"] = user;
    if (auto sys = read_list(dirs, "cpuacct.usage_percpu_sys"); !sys.empty())
      usage["percpu_kernel"] = sys;
    // cpuacct.stat counts clock ticks; runc reports nanoseconds.
    const uint64_t ns_per_tick = 1000000000ULL / static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
    Counters ticks = read_keyed(dirs, "cpuacct.stat");
    usage["kernel"] = ticks["system"] * ns_per_tick;
    usage["user"] = ticks["user"] * ns_per_tick;
  } else {
    Counters v2 = read_keyed(dirs, "cpu.stat");
    put(usage, "total", v2["usage_usec"] * 1000);
    usage["kernel"] = v2["system_usec"] * 1000;
    usage["user"] = v2["user_usec"] * 1000;
  }
  // The v1 cpu hierarchy's cpu.stat comes before the unified one's in `dirs`.
  Counters stat = read_keyed(dirs, "cpu.stat");
  put(throttling, "periods", stat["nr_periods"]);
  put(throttling, "throttled_periods", stat["nr_throttled"]);
  put(throttling, "throttled_time",
      stat.contains("throttled_usec") ? stat["throttled_usec"] * 1000 : stat["throttled_time"]);
  return {{"usage", usage}, {"throttling", throttling}};
}

// One of usage, swap, kernel, kernelTCP: "limit" and "failcnt" are always printed.
json memory_entry(const std::vector<std::string>& dirs, const std::string& prefix) {
  json entry = {{"limit", read_number(dirs, prefix + "limit_in_bytes").value_or(0)},
                {"failcnt", read_number(dirs, prefix + "failcnt").value_or(0)}};
  put(entry, "usage", read_number(dirs, prefix + "usage_in_bytes").value_or(0));
  put(entry, "max", read_number(dirs, prefix + "max_usage_in_bytes").value_or(0));
  return entry;
}

json memory_stats(const std::vector<std::string>& dirs) {
  json memory = json::object();
  Counters raw = read_keyed(dirs, "memory.stat");
  if (find_file(dirs, "memory.limit_in_bytes")) {
    put(memory, "cache", raw["cache"]);
    memory["usage"] = memory_entry(dirs, "memory.");
    memory["swap"] = memory_entry(dirs, "memory.memsw.");
    memory["kernel"] = memory_entry(dirs, "memory.kmem.");
    memory["kernelTCP"] = memory_entry(dirs, "memory.kmem.tcp.");
  } else if (std::optional<uint64_t> current = read_number(dirs, "memory.current")) {
    // v2 (runc's fs2): swap as v1 reports it, memory plus swap.
    put(memory, "cache", raw["file"]);
    uint64_t limit = read_number(dirs, "memory.max").value_or(0);
    json usage = {{"limit", limit}, {"failcnt", read_keyed(dirs, "memory.events")["max"]}};
    put(usage, "usage", *current);
    put(usage, "max", read_number(dirs, "memory.peak").value_or(0));
    memory["usage"] = usage;
    uint64_t swap_limit = read_number(dirs, "memory.swap.max").value_or(0);
    const uint64_t kMax = std::numeric_limits<uint64_t>::max();
    json swap = {{"limit", swap_limit == kMax || limit == kMax ? kMax : swap_limit + limit},
                 {"failcnt", 0}};
    put(swap, "usage", read_number(dirs, "memory.swap.current").value_or(0) + *current);
    memory["swap"] = swap;
  }
  if (!raw.empty()) memory["raw"] = raw;
  return memory;
}

json pids_stats(const std::vector<std::string>& dirs) {
  json pids = json::object();
  put(pids, "current", read_number(dirs, "pids.current").value_or(0));
  uint64_t limit = read_number(dirs, "pids.max").value_or(0);
  put(pids, "limit",
      limit == std::numeric_limits<uint64_t>::max() ? 0 : limit);  // runc: 0 is "no limit"
  return pids;
}

// v1 "8:0 Read 4096" lines; v2 io.stat "8:0 rbytes=4096 wbytes=0 rios=1 ...".
json blkio_stats(const std::vector<std::string>& dirs) {
  json blkio = json::object();
  auto entry = [](const std::string& device, const std::string& op, uint64_t value) {
    json e = {{"op", op}};
    size_t colon = device.find(':');
    put(e, "major", parse_number<uint64_t>(device.substr(0, colon)).value_or(0));
    put(e, "minor", parse_number<uint64_t>(device.substr(colon + 1)).value_or(0));
    put(e, "value", value);
    return e;
  };
  for (auto [file, key] :
       {std::pair{"blkio.throttle.io_service_bytes_recursive", "ioServiceBytesRecursive"},
        {"blkio.throttle.io_serviced_recursive", "ioServicedRecursive"}}) {
    std::istringstream in(read_control(dirs, file).value_or(""));
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string device, op;
      uint64_t value = 0;
      if (fields >> device >> op >> value && device.find(':') != std::string::npos)
        blkio[key].push_back(entry(device, op, value));
    }
  }
  std::istringstream io(read_control(dirs, "io.stat").value_or(""));
  for (std::string line; std::getline(io, line);) {
    std::istringstream fields(line);
    std::string device, pair;
    fields >> device;
    while (fields >> pair) {
      size_t eq = pair.find('=');
      std::string name = pair.substr(0, eq);
      uint64_t value = parse_number<uint64_t>(pair.substr(eq + 1)).value_or(0);
      if (name == "rbytes" || name == "wbytes")
        blkio["ioServiceBytesRecursive"].push_back(
            entry(device, name == "rbytes" ? "Read" : "Write", value));
      else if (name == "rios" || name == "wios")
        blkio["ioServicedRecursive"].push_back(
            entry(device, name == "rios" ? "Read" : "Write", value));
    }
  }
  return blkio;
}

// Keyed by page size ("2MB"): v1 hugetlb.2MB.usage_in_bytes, v2 hugetlb.2MB.current.
json hugetlb_stats(const std::vector<std::string>& dirs) {
  json hugetlb = json::object();
  for (const std::string& dir : dirs) {
    std::error_code ec;
    for (const auto& file : std::filesystem::directory_iterator(dir, ec)) {
      std::string name = file.path().filename().string();
      if (!name.starts_with("hugetlb.")) continue;
      std::string size = name.substr(8, name.find('.', 8) - 8);
      std::string rest = name.substr(8 + size.size());
      std::string base = "hugetlb." + size;
      if (rest == ".usage_in_bytes") {
        json h = {{"failcnt", read_number(dirs, base + ".failcnt").value_or(0)}};
        put(h, "usage", read_number(dirs, name).value_or(0));
        put(h, "max", read_number(dirs, base + ".max_usage_in_bytes").value_or(0));
        hugetlb[size] = h;
      } else if (rest == ".current") {
        json h = {{"failcnt", read_keyed(dirs, base + ".events")["max"]}};
        put(h, "usage", read_number(dirs, name).value_or(0));
        hugetlb[size] = h;
      }
    }
  }
  return hugetlb;
}

// "0-2,5" → [0, 1, 2, 5], as runc lists cpus and mems (bounded: no list beyond 4096 entries).
json cpu_list(const std::string& text) {
  json out = json::array();
  std::istringstream in(text);
  for (std::string range; std::getline(in, range, ',') && out.size() < 4096;) {
    size_t dash = range.find('-');
    auto first = parse_number<uint64_t>(range.substr(0, dash));
    auto last = dash == std::string::npos ? first : parse_number<uint64_t>(range.substr(dash + 1));
    if (!first || !last) continue;
    for (uint64_t n = *first; n <= *last && out.size() < 4096; ++n) out.push_back(n);
  }
  return out;
}

}  // namespace

json cgroup_stats(const std::vector<std::string>& dirs) {
  json cpuset = json::object();
  for (auto [file, key] : {std::pair{"cpuset.effective_cpus", "cpus"},
                           {"cpuset.cpus.effective", "cpus"},
                           {"cpuset.effective_mems", "mems"},
                           {"cpuset.mems.effective", "mems"}})
    if (auto text = read_control(dirs, file); text && !text->empty() && !cpuset.contains(key))
      cpuset[key] = cpu_list(text->substr(0, text->find('\n')));
  return {{"cpu", cpu_stats(dirs)},       {"cpuset", cpuset},
          {"memory", memory_stats(dirs)}, {"pids", pids_stats(dirs)},
          {"blkio", blkio_stats(dirs)},   {"hugetlb", hugetlb_stats(dirs)},
          {"intel_rdt", json::object()},  {"network_interfaces", nullptr}};
}

uint64_t oom_kills(const std::vector<std::string>& dirs) {
  if (find_file(dirs, "memory.oom_control"))
    return read_keyed(dirs, "memory.oom_control")["oom_kill"];
  return read_keyed(dirs, "memory.events")["oom_kill"];
}

}  // namespace sandcell::oci
