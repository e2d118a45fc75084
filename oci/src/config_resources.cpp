// config.json "linux.resources" → runtime::Limits (cgroup memory, pids, cpu bandwidth).
#include "config_parts.hpp"
#include "json_fields.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

using nlohmann::json;
namespace f = fields;

void parse_memory(const json& memory, runtime::Limits& limits) {
  f::object(memory, "linux.resources.memory");
  if (const json* v = f::find(memory, "limit")) {
    int64_t limit = f::integer(*v, "linux.resources.memory.limit");
    if (limit == 0 || limit < -1) throw Error::invalid("linux.resources.memory.limit: must be positive or -1 (unlimited)");
    if (limit > 0) limits.memory_bytes = static_cast<uint64_t>(limit);
  }
  for (const char* key : {"reservation", "swap", "kernel", "kernelTCP"})
    if (const json* v = f::find(memory, key)) f::integer(*v, std::string("linux.resources.memory.") + key);
}

void parse_cpu(const json& cpu, runtime::Limits& limits) {
  f::object(cpu, "linux.resources.cpu");
  int64_t quota = 0;
  uint64_t period = 100000;
  if (const json* v = f::find(cpu, "quota")) quota = f::integer(*v, "linux.resources.cpu.quota");
  if (const json* v = f::find(cpu, "period")) period = f::unsigned_integer(*v, "linux.resources.cpu.period");
  if (period == 0) throw Error::invalid("linux.resources.cpu.period: must be positive");
  if (quota > 0) limits.cpus = static_cast<double>(quota) / static_cast<double>(period);
  if (const json* v = f::find(cpu, "shares")) f::unsigned_integer(*v, "linux.resources.cpu.shares");
  for (const char* key : {"cpus", "mems"})
    if (const json* v = f::find(cpu, key)) f::text(*v, std::string("linux.resources.cpu.") + key);
}

// Device cgroup rules are checked, not installed: the container's /dev holds only the nodes
// sandcell creates (the defaults and linux.devices), which is what the rules would allow.
void check_device_rules(const json& rules) {
  f::array(rules, "linux.resources.devices");
  for (size_t i = 0; i < rules.size(); ++i) {
    std::string path = "linux.resources.devices[" + std::to_string(i) + "]";
    f::object(rules[i], path);
    const json* allow = f::find(rules[i], "allow");
    if (allow == nullptr) throw Error::invalid(path + ".allow: missing");
    f::boolean(*allow, path + ".allow");
    if (const json* t = f::find(rules[i], "type")) f::text(*t, path + ".type");
    if (const json* a = f::find(rules[i], "access")) f::text(*a, path + ".access");
  }
}

void refuse_if_set(const json& resources, const char* key) {
  const json* v = f::find(resources, key);
  if (v != nullptr && !v->empty())
    throw Error::invalid(std::string("linux.resources.") + key + ": not supported by sandcell-oci");
}

}  // namespace

runtime::Limits parse_resources(const json& resources) {
  f::object(resources, "linux.resources");
  runtime::Limits limits;
  if (const json* v = f::find(resources, "memory")) parse_memory(*v, limits);
  if (const json* v = f::find(resources, "cpu")) parse_cpu(*v, limits);
  if (const json* v = f::find(resources, "pids")) {
    f::object(*v, "linux.resources.pids");
    if (const json* l = f::find(*v, "limit")) {
      int64_t limit = f::integer(*l, "linux.resources.pids.limit");
      if (limit > 0) limits.pids = static_cast<uint64_t>(limit);
    }
  }
  if (const json* v = f::find(resources, "devices")) check_device_rules(*v);
  // Limits sandcell cannot enforce are refused rather than silently dropped.
  for (const char* key : {"blockIO", "hugepageLimits", "unified", "rdma"}) refuse_if_set(resources, key);
  return limits;
}

}  // namespace sandcell::oci

namespace sandcell::oci {
runtime::Limits parse_config_resources(const nlohmann::json& resources) { return parse_resources(resources); }
}  // namespace sandcell::oci
