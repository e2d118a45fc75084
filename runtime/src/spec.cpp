#include "sandcell/runtime/spec.hpp"

#include <sys/resource.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <unordered_map>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {

Limits default_limits() {
  return {
      .memory_bytes = 512ull << 20,
      .pids = 128,
      .cpus = 1.0,
      .wall_s = 30.0,
      .cpu_s = std::nullopt,  // bounded by cpus × wall already; set --cpu-time to tighten
      .output_bytes = 1ull << 20,
      .disk_bytes = std::nullopt,  // `run`: the tmpfs upper's size (Spec::rootfs_upper_bytes)
  };
}

Spec default_spec() {
  Spec spec;
  spec.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root",
              "HOSTNAME=sandcell", "LANG=C.UTF-8"};
  // Docker's lists (moby oci/defaults.go), plus /proc/interrupts as in Docker 25.
  spec.masked_paths = {"/proc/acpi",           "/proc/asound",        "/proc/interrupts",
                       "/proc/kcore",          "/proc/keys",          "/proc/latency_stats",
                       "/proc/sched_debug",    "/proc/scsi",          "/proc/timer_list",
                       "/proc/timer_stats",    "/sys/firmware",       "/sys/devices/virtual/powercap"};
  spec.readonly_paths = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"};
  spec.rlimits = {
      {.resource = RLIMIT_CORE, .soft = 0, .hard = 0},          // no core dumps of untrusted code
      {.resource = RLIMIT_NOFILE, .soft = 1024, .hard = 1024},
      {.resource = RLIMIT_MEMLOCK, .soft = 0, .hard = 0},       // nothing pinned outside the memcg
  };
  spec.writable_paths = {"/tmp", "/var/tmp", "/dev/shm", "/root"};
  spec.limits = default_limits();
  return spec;
}

namespace {
const std::pair<int, const char*> kRlimitNames[] = {
    {RLIMIT_AS, "RLIMIT_AS"},           {RLIMIT_CORE, "RLIMIT_CORE"},       {RLIMIT_CPU, "RLIMIT_CPU"},
    {RLIMIT_DATA, "RLIMIT_DATA"},       {RLIMIT_FSIZE, "RLIMIT_FSIZE"},     {RLIMIT_LOCKS, "RLIMIT_LOCKS"},
    {RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"}, {RLIMIT_MSGQUEUE, "RLIMIT_MSGQUEUE"}, {RLIMIT_NICE, "RLIMIT_NICE"},
    {RLIMIT_NOFILE, "RLIMIT_NOFILE"},   {RLIMIT_NPROC, "RLIMIT_NPROC"},     {RLIMIT_RSS, "RLIMIT_RSS"},
    {RLIMIT_RTPRIO, "RLIMIT_RTPRIO"},   {RLIMIT_RTTIME, "RLIMIT_RTTIME"},   {RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING"},
    {RLIMIT_STACK, "RLIMIT_STACK"}};
}  // namespace

std::optional<int> rlimit_resource(std::string_view name) {
  for (const auto& [resource, known] : kRlimitNames)
    if (name == known) return resource;
  return std::nullopt;
}

const char* rlimit_name(int resource) {
  for (const auto& [known, name] : kRlimitNames)
    if (known == resource) return name;
  return "RLIMIT_?";
}

uint64_t parse_size(const std::string& text, const std::string& what) {
  auto bad = [&] {
    return Error::invalid(what + ": invalid size '" + text + "' (expected e.g. 512m, 1g, 65536)");
  };
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) throw bad();
  char* end = nullptr;
  errno = 0;
  unsigned long long number = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) throw bad();
  std::string suffix(end);
  if (!suffix.empty() && (suffix.back() == 'b' || suffix.back() == 'B')) suffix.pop_back();
  unsigned shift = 0;
  if (suffix.size() > 1) throw bad();
  if (suffix.size() == 1) {
    switch (std::tolower(static_cast<unsigned char>(suffix[0]))) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      case 't': shift = 40; break;
      default: throw bad();
    }
  }
  if (shift > 0 && number > (~0ull >> shift)) throw bad();
  return number << shift;
}

double parse_positive_number(const std::string& text, const std::string& what) {
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
    throw Error::invalid(what + ": expected a positive number, got '" + text + "'");
  return value;
}

void set_network_arg(const std::string& net, bool has_allow_file, Spec& spec) {
  if (net == "none") {
    spec.network = NetworkMode::None;
  } else if (net == "full") {
    spec.network = NetworkMode::Full;
  } else if (net.rfind("allow:", 0) == 0) {
    spec.network = NetworkMode::Allow;
    size_t start = 6;
    for (size_t comma; start <= net.size(); start = comma + 1) {
      comma = net.find(',', start);
      if (comma == std::string::npos) comma = net.size();
      if (comma > start) spec.network_policy.allow.push_back(net.substr(start, comma - start));
    }
    if (spec.network_policy.allow.empty() && !has_allow_file)
      throw Error::invalid("--net allow: needs hosts, e.g. --net allow:example.com,*.example.org");
  } else {
    throw Error::invalid("--net expects none, allow:HOST[,HOST...] or full, got '" + net + "'");
  }
}

NetworkTransport parse_network_transport(const std::string& text) {
  if (text == "auto") return NetworkTransport::Auto;
  if (text == "socket") return NetworkTransport::Socket;
  if (text == "veth") return NetworkTransport::Veth;
  if (text == "slirp") return NetworkTransport::Slirp;
  throw Error::invalid("--net-transport expects auto, socket, veth or slirp, got '" + text + "'");
}

void merge_env(std::vector<std::string>& env, const std::vector<std::string>& overrides) {
  auto name_of = [](const std::string& entry) { return std::string_view(entry).substr(0, entry.find('=')); };
  std::unordered_map<std::string_view, std::size_t> last;  // name -> index of its last override
  for (std::size_t i = 0; i < overrides.size(); ++i) last[name_of(overrides[i])] = i;
  std::vector<std::string> merged;
  for (std::string& entry : env)
    if (!last.contains(name_of(entry))) merged.push_back(std::move(entry));
  for (std::size_t i = 0; i < overrides.size(); ++i)
    if (last[name_of(overrides[i])] == i) merged.push_back(overrides[i]);
  env = std::move(merged);
}

}  // namespace sandcell::runtime
