// linux.resources → control file writes per cgroup version, and writing them.
#include "cgroup_resources.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "device_program.hpp"
#include "json_fields.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
namespace f = fields;
using V = CgroupVersion;

const std::string kRes = "linux.resources";

// The writes of one resources object, with the versions at hand.
class Planner {
 public:
  explicit Planner(const ControllerVersions& versions) : versions_(versions) {}

  // The version carrying `controller`, or a refusal naming the field.
  V version(const std::string& field, const std::string& controller) const {
    auto it = versions_.find(controller);
    if (it == versions_.end())
      throw Error::invalid(field + ": the " + controller +
                           " cgroup controller is not available on this host");
    return it->second;
  }
  // blkio (v1) or io (v2): the controller has another name in each version.
  V version(const std::string& field, const std::string& v1_name,
            const std::string& v2_name) const {
    if (versions_.contains(v1_name) && versions_.at(v1_name) == V::V1) return V::V1;
    if (versions_.contains(v2_name) && versions_.at(v2_name) == V::V2) return V::V2;
    throw Error::invalid(field + ": neither the v1 " + v1_name + " nor the v2 " + v2_name +
                         " cgroup controller is available on this host");
  }
  void add(const std::string& field, V v, std::string file, std::string value) {
    plan.writes.push_back(
        {.field = field, .version = v, .choices = {{std::move(file), std::move(value)}}});
    if (v == V::V2) need_v2(plan.writes.back().choices[0].first);
  }
  void add_choices(const std::string& field, V v,
                   std::vector<std::pair<std::string, std::string>> choices) {
    plan.writes.push_back({.field = field, .version = v, .choices = std::move(choices)});
    if (v == V::V2) need_v2(plan.writes.back().choices[0].first);
  }
  [[noreturn]] static void refuse(const std::string& field, const std::string& why) {
    throw Error::invalid(field + ": " + why);
  }

  ResourcePlan plan;

 private:
  void need_v2(const std::string& file) {
    std::string controller = file.substr(0, file.find('.'));
    if (controller == "cgroup") return;
    for (const std::string& c : plan.v2_controllers)
      if (c == controller) return;
    plan.v2_controllers.push_back(controller);
  }
  const ControllerVersions& versions_;
};

std::string number(int64_t n) {
  return std::to_string(n);
}
std::string max_or(int64_t n) {
  return n < 0 ? "max" : std::to_string(n);
}

void plan_memory(const json& m, Planner& p) {
  const std::string at = kRes + ".memory";
  f::object(m, at);
  auto read = [&](const char* key) -> std::optional<int64_t> {
    const json* v = f::find(m, key);
    return v ? std::optional(f::integer(*v, at + "." + key)) : std::nullopt;
  };
  // runc: a limit of 0 is "not set" (writing it would leave the cgroup no memory at all).
  auto read_limit = [&](const char* key) {
    auto v = read(key);
    return v == 0 ? std::nullopt : v;
  };
  std::optional<int64_t> limit = read_limit("limit"), swap = read("swap"),
                         reservation = read_limit("reservation");
  std::optional<int64_t> kernel = read("kernel"), kernel_tcp = read("kernelTCP"),
                         swappiness = read("swappiness");
  const json* no_oom = f::find(m, "disableOOMKiller");
  const json* hierarchy = f::find(m, "useHierarchy");
  const json* check = f::find(m, "checkBeforeUpdate");
  bool any =
      limit || swap || reservation || kernel || kernel_tcp || swappiness || no_oom || hierarchy;
  if (check && f::boolean(*check, at + ".checkBeforeUpdate"))
    Planner::refuse(at + ".checkBeforeUpdate", "not supported by sandcell-oci");
  if (!any) return;
  V v = p.version(at, "memory");
  for (auto [key, value] :
       {std::pair{"limit", limit}, {"swap", swap}, {"reservation", reservation}})
    if (value && *value < -1) Planner::refuse(at + "." + key, "must be positive or -1 (unlimited)");
  if (v == V::V1) {
    if (swap == 0) swap.reset();
    if (limit) p.add(at + ".limit", v, "memory.limit_in_bytes", number(*limit));
    if (swap) p.add(at + ".swap", v, "memory.memsw.limit_in_bytes", number(*swap));
    if (reservation)
      p.add(at + ".reservation", v, "memory.soft_limit_in_bytes", number(*reservation));
    if (kernel) p.add(at + ".kernel", v, "memory.kmem.limit_in_bytes", number(*kernel));
    if (kernel_tcp)
      p.add(at + ".kernelTCP", v, "memory.kmem.tcp.limit_in_bytes", number(*kernel_tcp));
    if (swappiness) {
      if (*swappiness < 0 || *swappiness > 100)
        Planner::refuse(at + ".swappiness", "must be within 0..100");
      p.add(at + ".swappiness", v, "memory.swappiness", number(*swappiness));
    }
    if (no_oom && f::boolean(*no_oom, at + ".disableOOMKiller"))
      p.add(at + ".disableOOMKiller", v, "memory.oom_control", "1");
    if (hierarchy)
      p.add(at + ".useHierarchy", v, "memory.use_hierarchy",
            f::boolean(*hierarchy, at + ".useHierarchy") ? "1" : "0");
    return;
  }
  if (limit) p.add(at + ".limit", v, "memory.max", max_or(*limit));
  if (swap) {
    // runc's ConvertMemorySwapToCgroupV2Value: v1's swap is memory+swap, v2's is swap alone.
    int64_t mem = limit.value_or(0);
    std::string value;
    if (*swap == -1 || (*swap == 0 && mem == -1))
      value = "max";
    else if (*swap == 0)
      value = "";
    else if (mem <= 0)
      Planner::refuse(at + ".swap", "cgroup v2 cannot limit swap without memory.limit");
    else if (*swap < mem)
      Planner::refuse(at + ".swap", "memory+swap must be >= memory.limit");
    else
      value = number(*swap - mem);
    if (!value.empty()) p.add(at + ".swap", v, "memory.swap.max", value);
  }
  if (reservation) p.add(at + ".reservation", v, "memory.low", max_or(*reservation));
  if (kernel) Planner::refuse(at + ".kernel", "cgroup v2 has no kernel memory limit");
  if (kernel_tcp) Planner::refuse(at + ".kernelTCP", "cgroup v2 has no kernel TCP memory limit");
  if (swappiness) Planner::refuse(at + ".swappiness", "cgroup v2 has no per-cgroup swappiness");
  if (no_oom && f::boolean(*no_oom, at + ".disableOOMKiller"))
    Planner::refuse(at + ".disableOOMKiller", "cgroup v2 cannot disable the OOM killer");
  if (hierarchy && !f::boolean(*hierarchy, at + ".useHierarchy"))
    Planner::refuse(at + ".useHierarchy", "cgroup v2 is always hierarchical");
}

void plan_cpu(const json& c, Planner& p) {
  const std::string at = kRes + ".cpu";
  f::object(c, at);
  for (const char* key : {"realtimeRuntime", "realtimePeriod"})
    if (const json* v = f::find(c, key); v && f::integer(*v, at + "." + key) != 0)
      Planner::refuse(at + "." + key, "realtime scheduling is not supported by sandcell-oci");
  const json* shares = f::find(c, "shares");
  const json* quota = f::find(c, "quota");
  const json* period = f::find(c, "period");
  const json* burst = f::find(c, "burst");
  const json* idle = f::find(c, "idle");
  if (shares || quota || period || burst || idle) {
    V v = p.version(at, "cpu");
    // runc: shares, quota and period of 0 are "not set".
    if (shares) {
      uint64_t s = f::unsigned_integer(*shares, at + ".shares");
      if (s != 0)
        p.add(at + ".shares", v, v == V::V1 ? "cpu.shares" : "cpu.weight",
              std::to_string(v == V::V1 ? s : cpu_shares_to_weight(s)));
    }
    int64_t q = quota ? f::integer(*quota, at + ".quota") : 0;
    uint64_t per = period ? f::unsigned_integer(*period, at + ".period") : 0;
    if (v == V::V1) {
      if (per != 0) p.add(at + ".period", v, "cpu.cfs_period_us", std::to_string(per));
      if (q != 0) p.add(at + ".quota", v, "cpu.cfs_quota_us", number(q));
      if (burst)
        p.add(at + ".burst", v, "cpu.cfs_burst_us",
              std::to_string(f::unsigned_integer(*burst, at + ".burst")));
      if (idle && f::integer(*idle, at + ".idle") != 0)
        Planner::refuse(at + ".idle", "cgroup v1 has no cpu.idle");
    } else {
      if (q != 0 || per != 0)
        p.add(q != 0 ? at + ".quota" : at + ".period", v, "cpu.max",
              (q > 0 ? std::to_string(q) : "max") + " " + std::to_string(per == 0 ? 100000 : per));
      if (burst)
        p.add(at + ".burst", v, "cpu.max.burst",
              std::to_string(f::unsigned_integer(*burst, at + ".burst")));
      if (idle) p.add(at + ".idle", v, "cpu.idle", number(f::integer(*idle, at + ".idle")));
    }
  }
  for (const char* key : {"cpus", "mems"}) {
    const json* value = f::find(c, key);
    if (value == nullptr) continue;
    std::string text = f::text(*value, at + "." + key);
    if (text.empty()) continue;
    if (text.find_first_not_of("0123456789,-") != std::string::npos)
      Planner::refuse(at + "." + key, "not a cpu/node list: '" + text + "'");
    p.add(at + "." + key, p.version(at + "." + key, "cpuset"), std::string("cpuset.") + key, text);
  }
}

std::string device_number(const json& entry, const std::string& at) {
  const json* major = f::find(entry, "major");
  const json* minor = f::find(entry, "minor");
  if (major == nullptr || minor == nullptr)
    throw Error::invalid(at + ": major and minor are required");
  return std::to_string(f::integer(*major, at + ".major")) + ":" +
         std::to_string(f::integer(*minor, at + ".minor"));
}

void plan_block_io(const json& b, Planner& p) {
  const std::string at = kRes + ".blockIO";
  f::object(b, at);
  if (b.empty()) return;
  V v = p.version(at, "blkio", "io");
  if (const json* w = f::find(b, "weight")) {
    uint64_t weight = f::unsigned_integer(*w, at + ".weight");
    if (weight < 10 || weight > 1000) Planner::refuse(at + ".weight", "must be within 10..1000");
    if (v == V::V1)
      p.add_choices(
          at + ".weight", v,
          {{"blkio.weight", std::to_string(weight)}, {"blkio.bfq.weight", std::to_string(weight)}});
    else
      p.add_choices(at + ".weight", v,
                    {{"io.bfq.weight", std::to_string(weight)},
                     {"io.weight", std::to_string(blkio_weight_to_io_weight(weight))}});
  }
  if (const json* w = f::find(b, "leafWeight")) {
    uint64_t weight = f::unsigned_integer(*w, at + ".leafWeight");
    if (v == V::V2) Planner::refuse(at + ".leafWeight", "cgroup v2 has no leaf weight");
    p.add(at + ".leafWeight", v, "blkio.leaf_weight", std::to_string(weight));
  }
  if (const json* list = f::find(b, "weightDevice")) {
    f::array(*list, at + ".weightDevice");
    for (size_t i = 0; i < list->size(); ++i) {
      std::string entry_at = at + ".weightDevice[" + std::to_string(i) + "]";
      const json& entry = f::object((*list)[i], entry_at);
      std::string dev = device_number(entry, entry_at);
      // The runtime-spec: an entry MUST have at least one of the two.
      if (!f::find(entry, "weight") && !f::find(entry, "leafWeight"))
        Planner::refuse(entry_at, "needs weight or leafWeight");
      if (const json* w = f::find(entry, "weight")) {
        std::string value =
            dev + " " + std::to_string(f::unsigned_integer(*w, entry_at + ".weight"));
        if (v == V::V1)
          p.add_choices(entry_at + ".weight", v,
                        {{"blkio.weight_device", value}, {"blkio.bfq.weight_device", value}});
        else
          p.add(entry_at + ".weight", v, "io.bfq.weight", value);
      }
      if (const json* w = f::find(entry, "leafWeight")) {
        if (v == V::V2) Planner::refuse(entry_at + ".leafWeight", "cgroup v2 has no leaf weight");
        p.add(entry_at + ".leafWeight", v, "blkio.leaf_weight_device",
              dev + " " + std::to_string(f::unsigned_integer(*w, entry_at + ".leafWeight")));
      }
    }
  }
  static const std::tuple<const char*, const char*, const char*> kThrottles[] = {
      {"throttleReadBpsDevice", "blkio.throttle.read_bps_device", "rbps"},
      {"throttleWriteBpsDevice", "blkio.throttle.write_bps_device", "wbps"},
      {"throttleReadIOPSDevice", "blkio.throttle.read_iops_device", "riops"},
      {"throttleWriteIOPSDevice", "blkio.throttle.write_iops_device", "wiops"}};
  for (const auto& [key, v1_file, v2_key] : kThrottles) {
    const json* list = f::find(b, key);
    if (list == nullptr) continue;
    f::array(*list, at + "." + key);
    for (size_t i = 0; i < list->size(); ++i) {
      std::string entry_at = at + "." + key + "[" + std::to_string(i) + "]";
      const json& entry = f::object((*list)[i], entry_at);
      std::string dev = device_number(entry, entry_at);
      const json* rate = f::find(entry, "rate");
      if (rate == nullptr) throw Error::invalid(entry_at + ".rate: missing");
      uint64_t r = f::unsigned_integer(*rate, entry_at + ".rate");
      if (v == V::V1)
        p.add(entry_at, v, v1_file, dev + " " + std::to_string(r));
      else
        p.add(entry_at, v, "io.max",
              dev + " " + v2_key + "=" + (r == 0 ? "max" : std::to_string(r)));
    }
  }
}

void plan_hugepages(const json& list, Planner& p) {
  const std::string at = kRes + ".hugepageLimits";
  f::array(list, at);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string entry_at = at + "[" + std::to_string(i) + "]";
    const json& entry = f::object(list[i], entry_at);
    const json* size = f::find(entry, "pageSize");
    const json* limit = f::find(entry, "limit");
    if (size == nullptr || limit == nullptr)
      throw Error::invalid(entry_at + ": pageSize and limit are required");
    std::string page = f::text(*size, entry_at + ".pageSize");
    if (page.empty() || page.find_first_not_of("0123456789KMGB") != std::string::npos)
      Planner::refuse(entry_at + ".pageSize", "not a page size like 2MB: '" + page + "'");
    uint64_t bytes = f::unsigned_integer(*limit, entry_at + ".limit");
    V v = p.version(entry_at, "hugetlb");
    p.add(entry_at, v, "hugetlb." + page + (v == V::V1 ? ".limit_in_bytes" : ".max"),
          std::to_string(bytes));
  }
}

void plan_network(const json& n, Planner& p) {
  const std::string at = kRes + ".network";
  f::object(n, at);
  if (const json* id = f::find(n, "classID"))
    p.add(at + ".classID", p.version(at + ".classID", "net_cls"), "net_cls.classid",
          std::to_string(f::unsigned_integer(*id, at + ".classID")));
  if (const json* list = f::find(n, "priorities")) {
    f::array(*list, at + ".priorities");
    for (size_t i = 0; i < list->size(); ++i) {
      std::string entry_at = at + ".priorities[" + std::to_string(i) + "]";
      const json& entry = f::object((*list)[i], entry_at);
      const json* name = f::find(entry, "name");
      const json* prio = f::find(entry, "priority");
      if (name == nullptr || prio == nullptr)
        throw Error::invalid(entry_at + ": name and priority are required");
      p.add(entry_at, p.version(entry_at, "net_prio"), "net_prio.ifpriomap",
            f::text(*name, entry_at + ".name") + " " +
                std::to_string(f::unsigned_integer(*prio, entry_at + ".priority")));
    }
  }
}

void plan_rdma(const json& r, Planner& p) {
  const std::string at = kRes + ".rdma";
  for (const auto& [device, limits] : f::object(r, at).items()) {
    std::string entry_at = at + "." + device;
    f::object(limits, entry_at);
    if (device.empty() || device.find_first_of(" \n/") != std::string::npos)
      Planner::refuse(entry_at, "not an rdma device name");
    std::string value = device;
    if (const json* h = f::find(limits, "hcaHandles"))
      value += " hca_handle=" + std::to_string(f::unsigned_integer(*h, entry_at + ".hcaHandles"));
    if (const json* o = f::find(limits, "hcaObjects"))
      value += " hca_object=" + std::to_string(f::unsigned_integer(*o, entry_at + ".hcaObjects"));
    // The runtime-spec: an entry MUST have at least one of the two.
    if (value == device) Planner::refuse(entry_at, "needs hcaHandles or hcaObjects");
    p.add(entry_at, p.version(entry_at, "rdma"), "rdma.max", value);
  }
}

void plan_unified(const json& u, Planner& p) {
  const std::string at = kRes + ".unified";
  for (const auto& [key, value] : f::object(u, at).items()) {
    std::string entry_at = at + "." + key;
    // A file of the container's own directory: no path, no hidden file, "controller.name".
    if (key.empty() || key.find('/') != std::string::npos || key[0] == '.' ||
        key.find('.') == std::string::npos)
      Planner::refuse(entry_at, "not a cgroup v2 control file name");
    std::string controller = key.substr(0, key.find('.'));
    if (controller != "cgroup" && p.version(entry_at, controller) != V::V2)
      Planner::refuse(entry_at,
                      "the " + controller + " controller is in a cgroup v1 hierarchy here");
    if (key == "cgroup.procs" || key == "cgroup.threads" || key == "cgroup.subtree_control")
      Planner::refuse(entry_at, "not a resource of the container");
    p.add(entry_at, V::V2, key, f::text(value, entry_at));
  }
}

DeviceRule parse_device_rule(const json& rule, const std::string& at) {
  f::object(rule, at);
  const json* allow = f::find(rule, "allow");
  if (allow == nullptr) throw Error::invalid(at + ".allow: missing");
  DeviceRule out{.allow = f::boolean(*allow, at + ".allow")};
  if (const json* t = f::find(rule, "type")) {
    std::string type = f::text(*t, at + ".type");
    if (type != "a" && type != "c" && type != "b")
      Planner::refuse(at + ".type", "must be a, c or b, got '" + type + "'");
    out.type = type[0];
  }
  if (const json* v = f::find(rule, "major")) out.major = f::integer(*v, at + ".major");
  if (const json* v = f::find(rule, "minor")) out.minor = f::integer(*v, at + ".minor");
  if (const json* a = f::find(rule, "access")) out.access = f::text(*a, at + ".access");
  if (out.access.empty() || out.access.find_first_not_of("rwm") != std::string::npos)
    Planner::refuse(at + ".access", "must be made of r, w and m, got '" + out.access + "'");
  return out;
}

// runc's AllowedDevices (libcontainer/specconv): what every container may use after its rules.
std::vector<DeviceRule> implied_device_rules(const std::vector<runtime::Device>& devices) {
  std::vector<DeviceRule> out = {{true, 'c', -1, -1, "m"},    {true, 'b', -1, -1, "m"},
                                 {true, 'c', 1, 3, "rwm"},    {true, 'c', 1, 8, "rwm"},
                                 {true, 'c', 1, 7, "rwm"},    {true, 'c', 5, 0, "rwm"},
                                 {true, 'c', 1, 5, "rwm"},    {true, 'c', 1, 9, "rwm"},
                                 {true, 'c', 136, -1, "rwm"}, {true, 'c', 5, 2, "rwm"}};
  for (const runtime::Device& d : devices)
    if (d.type == 'c' || d.type == 'b')
      out.push_back(
          {true, d.type, static_cast<int64_t>(d.major), static_cast<int64_t>(d.minor), "rwm"});
  return out;
}

std::string v1_device_line(const DeviceRule& r) {
  auto part = [](int64_t n) { return n < 0 ? std::string("*") : std::to_string(n); };
  return std::string(1, r.type) + " " + part(r.major) + ":" + part(r.minor) + " " + r.access;
}

void plan_devices(const json& list, const std::vector<runtime::Device>& devices, Planner& p) {
  const std::string at = kRes + ".devices";
  f::array(list, at);
  if (list.empty()) return;
  std::vector<DeviceRule> rules;
  for (size_t i = 0; i < list.size(); ++i)
    rules.push_back(parse_device_rule(list[i], at + "[" + std::to_string(i) + "]"));
  for (const DeviceRule& r : implied_device_rules(devices)) rules.push_back(r);
  bool on_v1 = false;
  try {
    on_v1 = p.version(at, "devices") == V::V1;
  } catch (const Error&) {
    on_v1 = false;  // v2 has no devices controller: its rules are a BPF program
  }
  if (!on_v1) {
    p.plan.v2_device_rules = rules;
    return;
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    std::string field =
        i < list.size() ? at + "[" + std::to_string(i) + "]" : at + " (runc's default devices)";
    p.add(field, V::V1, rules[i].allow ? "devices.allow" : "devices.deny",
          v1_device_line(rules[i]));
  }
}

// A control file of the container, opened without following links or creating it.
bool write_file(const std::string& path, const std::string& value, int& err) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    err = errno;
    return false;
  }
  ssize_t n = write(fd, value.data(), value.size());
  err = n < 0 ? errno : 0;
  close(fd);
  return n == static_cast<ssize_t>(value.size());
}

bool is_v2_dir(const std::string& dir) {
  return std::filesystem::exists(dir + "/cgroup.controllers");
}

}  // namespace

uint64_t blkio_weight_to_io_weight(uint64_t weight) {
  if (weight == 0) return 0;
  return 1 + (weight - 10) * 9999 / 990;
}

ControllerVersions controller_versions(const runtime::CgroupHost& host) {
  ControllerVersions out;
  for (const auto& [controller, mount] : host.v1_roots) out[controller] = V::V1;
  if (host.v2_root.empty()) return out;
  std::ifstream in(host.v2_root + "/cgroup.controllers");
  std::string controller;
  while (in >> controller) out.emplace(controller, V::V2);
  return out;
}

ResourcePlan plan_resources(const json& resources, const ControllerVersions& versions,
                            const std::vector<runtime::Device>& devices) {
  f::object(resources, kRes);
  Planner p(versions);
  if (const json* v = f::find(resources, "memory")) plan_memory(*v, p);
  if (const json* v = f::find(resources, "cpu")) plan_cpu(*v, p);
  if (const json* v = f::find(resources, "pids")) {
    f::object(*v, kRes + ".pids");
    if (const json* l = f::find(*v, "limit")) {
      int64_t limit = f::integer(*l, kRes + ".pids.limit");
      p.add(kRes + ".pids.limit", p.version(kRes + ".pids", "pids"), "pids.max",
            limit > 0 ? number(limit) : "max");
    }
  }
  if (const json* v = f::find(resources, "blockIO")) plan_block_io(*v, p);
  if (const json* v = f::find(resources, "hugepageLimits")) plan_hugepages(*v, p);
  if (const json* v = f::find(resources, "network")) plan_network(*v, p);
  if (const json* v = f::find(resources, "rdma")) plan_rdma(*v, p);
  if (const json* v = f::find(resources, "devices")) plan_devices(*v, devices, p);
  if (const json* v = f::find(resources, "unified")) plan_unified(*v, p);
  return p.plan;
}

void apply_resources(const ResourcePlan& plan, const std::vector<std::string>& dirs) {
  struct Failed {
    const ControlWrite* write;
    std::string path, value;
  };
  std::vector<Failed> retry;
  auto write_one = [&](const ControlWrite& w, bool last_try) {
    for (const std::string& dir : dirs) {
      if (is_v2_dir(dir) != (w.version == V::V2)) continue;
      for (const auto& [file, value] : w.choices) {
        std::string path = dir + "/" + file;
        int err = 0;
        if (write_file(path, value, err)) return;
        if (err == ENOENT) continue;
        if (err == EINVAL && !last_try) {
          retry.push_back({&w, path, value});
          return;
        }
        throw Error(err, w.field + ": write '" + value + "' to " + path);
      }
    }
    throw Error(ENOENT, w.field + ": " + w.choices[0].first +
                            " is in none of the container's cgroups "
                            "(controller missing or not enabled)");
  };
  for (const ControlWrite& w : plan.writes) write_one(w, false);
  for (const Failed& f : retry) write_one(*f.write, true);
  if (plan.v2_device_rules) {
    for (const std::string& dir : dirs)
      if (is_v2_dir(dir)) {
        attach_device_program(dir, *plan.v2_device_rules);
        return;
      }
    throw Error(ENOENT, kRes + ".devices: no cgroup v2 directory to attach the device program to");
  }
}

}  // namespace sandcell::oci
