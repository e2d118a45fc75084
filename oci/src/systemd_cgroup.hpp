#pragma once
// The systemd cgroup driver (`sandcell-oci --systemd-cgroup`), as runc's: each container is a
// transient scope systemd makes over D-Bus (StartTransientUnit, Delegate=yes), its resources
// both as systemd properties (so systemd's view and `systemctl` agree) and written to the
// scope's cgroup files (what systemd cannot express; the files are the authority, as with
// runc's fs2.Set). The pure parts (cgroupsPath, unit names, resource → property translation)
// are here and in systemd_cgroup.cpp; the only sd-bus code is systemd_bus.cpp.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cgroup_resources.hpp"

struct sd_bus;

namespace sandcell::oci::systemd {

// linux.cgroupsPath in systemd form, "slice:prefix:name" (runc's specconv): the parent slice
// ("" → system.slice, or user.slice for a user manager; "-.slice" is the root slice), the unit
// "prefix-name.scope" (just "name.scope" without a prefix), or "name" itself when it ends in
// ".slice" (a slice is made; the prefix is ignored). Empty cgroupsPath: ":sandcell-oci:<id>".
// Each part is checked as systemd names units: a slice name's dash-separated components are
// not empty, nothing holds '/', and names use [A-Za-z0-9_.-] only.
struct UnitPlace {
  std::string slice;  // the parent slice unit
  std::string unit;   // the container's unit
  bool is_slice() const { return unit.ends_with(".slice"); }
};
UnitPlace parse_cgroups_path(const std::string& cgroups_path, const std::string& id,
                             bool user_manager);

// systemd's slice nesting by dashes (runc's ExpandSlice): "kubepods-burstable-pod1.slice" →
// "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1.slice"; "-.slice" → "/".
std::string expand_slice(const std::string& slice);
// The unit's cgroup relative to its manager's: the slice's path then the scope, or the slice's
// own path for a slice unit.
std::string unit_cgroup(const UnitPlace& place);

// One D-Bus property of a unit: (name, variant) as StartTransientUnit and SetUnitProperties
// take them. The alternatives are the D-Bus types b, t, s, as, au, ay.
struct Property {
  using Value = std::variant<bool, uint64_t, std::string, std::vector<std::string>,
                             std::vector<uint32_t>, std::vector<uint8_t>>;
  std::string name;
  Value value;
  bool operator==(const Property&) const = default;
};

// What runc sets on every unit it starts: Description, Slice= (a scope) or Wants= (a slice),
// Delegate=yes (a scope), PIDs=[pid] (a scope), accounting on for memory, cpu, io and tasks,
// DefaultDependencies=no.
std::vector<Property> unit_properties(const UnitPlace& place, const std::string& id,
                                      std::optional<pid_t> pid);

// The v2 control-file writes of a plan that systemd has a property for, as runc translates
// them: memory.max/low/high/min/swap.max → Memory*, cpu.weight → CPUWeight, cpu.max →
// CPUQuotaPerSecUSec (+ CPUQuotaPeriodUSec from systemd 242), cpuset.cpus/mems →
// AllowedCPUs/AllowedMemoryNodes (from systemd 244), pids.max → TasksMax, io.weight → IOWeight.
// "max" is systemd's infinity (UINT64_MAX). Every other write has no property: it goes only to
// the files.
std::vector<Property> resource_properties(const ResourcePlan& plan, int systemd_version);

// "0-3,8" → the byte array systemd takes for AllowedCPUs (bit N of byte N/8, little-endian,
// no trailing zero bytes), runc's RangeToBits. Numbers above 65535 are refused (a hostile
// "0-4294967295" would otherwise ask for 512 MiB).
std::vector<uint8_t> range_to_bits(const std::string& list, const std::string& field);
// runc's addCpuQuota: microseconds of CPU per second, rounded up to a whole percent (systemd
// stores CPUQuota= as a percentage); UINT64_MAX (no quota) when quota <= 0.
uint64_t cpu_quota_per_sec_usec(int64_t quota, uint64_t period);

// A connection to a systemd manager over D-Bus (libsystemd's sd-bus).
class SystemdConnection {
 public:
  // The system manager (root: the system bus) or the caller's user manager (rootless: the
  // user bus, as runc picks). Throws naming the bus address and why it is unreachable.
  static SystemdConnection open(bool user_manager);
  SystemdConnection(SystemdConnection&& other) noexcept;
  SystemdConnection& operator=(SystemdConnection&&) = delete;
  ~SystemdConnection();

  int version();  // the manager's Version ("252.19-1~deb12u1" → 252); -1 if unreadable
  // StartTransientUnit(unit, "replace", properties) and the wait for its job (JobRemoved,
  // result "done") up to `timeout`. A leftover unit of that name (UnitExists) is reset and the
  // start retried once, as runc does. Returns the unit's cgroup (ControlGroup, absolute in the
  // cgroup2 tree).
  std::string start_unit(const std::string& unit, const std::vector<Property>& properties,
                         std::chrono::seconds timeout);
  void set_properties(const std::string& unit, const std::vector<Property>& properties);
  // StopUnit(unit, "replace") and the wait for its job; a unit that is gone already is stopped.
  // Then ResetFailedUnit, so a failed unit does not linger.
  void stop_unit(const std::string& unit, std::chrono::seconds timeout);

 private:
  explicit SystemdConnection(sd_bus* bus) : bus_(bus) {}
  sd_bus* bus_;
};

inline constexpr std::chrono::seconds kJobTimeout{30};  // runc's

}  // namespace sandcell::oci::systemd
