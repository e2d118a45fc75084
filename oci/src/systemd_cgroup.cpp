// The pure half of the systemd cgroup driver: cgroupsPath → unit, unit → properties, plan →
// resource properties. Checked against runc's conversions in tests/unit/oci_systemd_cgroup_test.cpp.
#include "systemd_cgroup.hpp"

#include <cctype>
#include <charconv>
#include <limits>
#include <map>

#include "sandcell/base/error.hpp"

namespace sandcell::oci::systemd {
namespace {

const std::string kField = "linux.cgroupsPath";
constexpr uint64_t kInfinity = std::numeric_limits<uint64_t>::max();
constexpr size_t kUnitNameMax = 255;  // systemd's UNIT_NAME_MAX less the NUL
constexpr uint64_t kMaxCpuNumber = 65535;

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

// What a unit name may hold here: systemd also allows '\\' escapes, ':' and '@' (templates),
// none of which a container's unit needs.
void check_name_chars(const std::string& part, const std::string& what,
                      const std::string& cgroups_path) {
  for (char c : part)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      throw Error::invalid(kField + ": " + what + " '" + part +
                           "' may hold only letters, digits, '_', '.' and '-' (systemd unit "
                           "names), in '" + cgroups_path + "'");
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return n;
}

// "max" or a number, as the memory.* and pids.max files take them.
std::optional<uint64_t> max_or_number(const std::string& value) {
  return value == "max" ? std::optional(kInfinity) : parse_u64(value);
}

// cpu.max "QUOTA PERIOD" (QUOTA "max"): runc's addCpuQuota.
void add_cpu_max(const std::string& value, int version, std::vector<Property>& out) {
  std::vector<std::string> fields = split(value, ' ');
  if (fields.size() != 2) return;
  std::optional<uint64_t> period = parse_u64(fields[1]);
  std::optional<uint64_t> quota = fields[0] == "max" ? std::optional<uint64_t>(0) : parse_u64(fields[0]);
  if (!period || !quota || *quota > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    return;
  if (version >= 242) out.push_back({"CPUQuotaPeriodUSec", *period});
  out.push_back({"CPUQuotaPerSecUSec", cpu_quota_per_sec_usec(static_cast<int64_t>(*quota), *period)});
}

}  // namespace

std::string expand_slice(const std::string& slice) {
  const std::string suffix = ".slice";
  if (slice.size() <= suffix.size() || !slice.ends_with(suffix) ||
      slice.find('/') != std::string::npos)
    throw Error::invalid(kField + ": invalid slice name '" + slice + "'");
  std::string name = slice.substr(0, slice.size() - suffix.size());
  if (name == "-") return "/";
  std::string path, prefix;
  for (const std::string& component : split(name, '-')) {
    if (component.empty()) throw Error::invalid(kField + ": invalid slice name '" + slice + "'");
    path += "/" + prefix + component + suffix;
    prefix += component + "-";
  }
  return path;
}

UnitPlace parse_cgroups_path(const std::string& cgroups_path, const std::string& id,
                             bool user_manager) {
  std::vector<std::string> parts =
      cgroups_path.empty() ? std::vector<std::string>{"", "sandcell-oci", id} : split(cgroups_path, ':');
  if (parts.size() != 3)
    throw Error::invalid(kField + ": with --systemd-cgroup it must be \"slice:prefix:name\" "
                         "(e.g. system.slice:sandcell:ID), got '" + cgroups_path + "'");
  const std::string &slice = parts[0], &prefix = parts[1], &name = parts[2];
  if (name.empty()) throw Error::invalid(kField + ": names no unit (empty name): '" + cgroups_path + "'");
  check_name_chars(slice, "slice", cgroups_path);
  check_name_chars(prefix, "prefix", cgroups_path);
  check_name_chars(name, "name", cgroups_path);
  UnitPlace place{.slice = slice.empty() ? (user_manager ? "user.slice" : "system.slice") : slice,
                  .unit = ""};
  expand_slice(place.slice);  // throws on an invalid slice name
  if (name.ends_with(".slice")) {
    place.unit = name;
    expand_slice(name);
  } else {
    place.unit = (prefix.empty() ? "" : prefix + "-") + name + ".scope";
  }
  if (place.unit.size() > kUnitNameMax)
    throw Error::invalid(kField + ": the unit name '" + place.unit + "' is longer than systemd's " +
                         std::to_string(kUnitNameMax) + " characters");
  return place;
}

std::string unit_cgroup(const UnitPlace& place) {
  if (place.is_slice()) return expand_slice(place.unit);
  std::string slice = expand_slice(place.slice);
  return (slice == "/" ? "" : slice) + "/" + place.unit;
}

std::vector<Property> unit_properties(const UnitPlace& place, const std::string& id,
                                      std::optional<pid_t> pid) {
  std::vector<Property> out = {{"Description", "sandcell-oci container " + id}};
  if (place.is_slice()) {
    out.push_back({"Wants", std::vector<std::string>{place.slice}});
  } else {
    out.push_back({"Slice", place.slice});
    out.push_back({"Delegate", true});
    if (pid) out.push_back({"PIDs", std::vector<uint32_t>{static_cast<uint32_t>(*pid)}});
  }
  for (const char* accounting : {"MemoryAccounting", "CPUAccounting", "IOAccounting", "TasksAccounting"})
    out.push_back({accounting, true});
  out.push_back({"DefaultDependencies", false});
  return out;
}

uint64_t cpu_quota_per_sec_usec(int64_t quota, uint64_t period) {
  if (quota <= 0) return kInfinity;
  if (period == 0) period = 100000;  // the kernel's default period
  uint64_t per_sec = static_cast<uint64_t>(quota) * 1000000 / period;
  if (per_sec % 10000 != 0) per_sec = (per_sec / 10000 + 1) * 10000;
  return per_sec;
}

std::vector<uint8_t> range_to_bits(const std::string& list, const std::string& field) {
  auto refuse = [&](const std::string& why) {
    return Error::invalid(field + ": " + why + " in the cpu/node list '" + list + "'");
  };
  auto number = [&](const std::string& text) {
    // As the kernel: no blanks inside a range ("1 - 2"), digits only.
    if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
      throw refuse("'" + text + "' is not a number");
    std::optional<uint64_t> n = parse_u64(text);
    if (!n || *n > kMaxCpuNumber) throw refuse(text + " is above " + std::to_string(kMaxCpuNumber));
    return *n;
  };
  std::vector<uint8_t> bits;
  for (std::string range : split(list, ',')) {
    size_t first_char = range.find_first_not_of(" \t\n");
    if (first_char == std::string::npos) continue;  // runc allows empty elements: ",1,,2,"
    range = range.substr(first_char, range.find_last_not_of(" \t\n") - first_char + 1);
    std::vector<std::string> ends = split(range, '-');
    if (ends.size() > 2) throw refuse("'" + range + "' is not a range");
    uint64_t first = number(ends[0]), last = ends.size() == 2 ? number(ends[1]) : first;
    if (first > last) throw refuse("'" + range + "' ends before it starts");
    if (bits.size() < last / 8 + 1) bits.resize(last / 8 + 1, 0);
    for (uint64_t i = first; i <= last; ++i) bits[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
  }
  if (bits.empty()) throw refuse("nothing");
  return bits;
}

std::vector<Property> resource_properties(const ResourcePlan& plan, int version) {
  static const std::map<std::string, std::string> kMemory = {
      {"memory.max", "MemoryMax"}, {"memory.low", "MemoryLow"}, {"memory.high", "MemoryHigh"},
      {"memory.min", "MemoryMin"}, {"memory.swap.max", "MemorySwapMax"}, {"pids.max", "TasksMax"}};
  std::vector<Property> out;
  for (const ControlWrite& write : plan.writes) {
    if (write.version != CgroupVersion::V2) continue;
    for (const auto& [file, value] : write.choices) {
      if (auto it = kMemory.find(file); it != kMemory.end()) {
        if (auto n = max_or_number(value)) out.push_back({it->second, *n});
      } else if (file == "cpu.weight") {
        if (auto n = parse_u64(value)) out.push_back({"CPUWeight", *n});
      } else if (file == "io.weight") {
        if (auto n = parse_u64(value)) out.push_back({"IOWeight", *n});
      } else if (file == "cpu.max") {
        add_cpu_max(value, version, out);
      } else if ((file == "cpuset.cpus" || file == "cpuset.mems") && version >= 244) {
        out.push_back({file == "cpuset.cpus" ? "AllowedCPUs" : "AllowedMemoryNodes",
                       range_to_bits(value, write.field)});
      }
    }
  }
  return out;
}

}  // namespace sandcell::oci::systemd
