#include "sandcell/agent/request_ceilings.hpp"

#include <set>
#include <sstream>

#include "sandcell/base/error.hpp"

namespace sandcell::agent {
namespace {

struct Ceiling {
  const char* request_field;  // as a request names it
  const char* flag;           // the operator's flag
  bool size;                  // "2g" or a number
};

constexpr Ceiling kMemory{"memory", "--max-memory", true};
constexpr Ceiling kTimeout{"timeout", "--max-timeout", false};
constexpr Ceiling kPids{"pids", "--max-pids", false};
constexpr Ceiling kCpus{"cpus", "--max-cpus", false};
constexpr Ceiling kOutput{"output_limit", "--max-output", true};
constexpr Ceiling kDisk{"disk", "--max-disk", true};

double value_of(const Ceiling& c, const std::string& text, const std::string& what) {
  return c.size ? static_cast<double>(runtime::parse_size(text, what))
                : runtime::parse_positive_number(text, what);
}

void check_one(const Ceiling& c, const std::optional<std::string>& ceiling,
               const std::optional<std::string>& asked) {
  if (!ceiling || !asked) return;
  if (value_of(c, *asked, c.request_field) > value_of(c, *ceiling, c.flag))
    throw Error::invalid(std::string(c.request_field) + " " + *asked +
                         " is over the operator's limit (" + c.flag + " " + *ceiling + ")");
}

// "none" < "allow:HOSTS" < "full"; allow: lists compare as sets of names.
struct NetPolicy {
  enum class Kind { None, Allow, Full } kind;
  std::set<std::string> hosts;
};

NetPolicy net_policy(const std::string& net, const std::string& what) {
  if (net == "none") return {NetPolicy::Kind::None, {}};
  if (net == "full") return {NetPolicy::Kind::Full, {}};
  if (net.rfind("allow:", 0) != 0)
    throw Error::invalid(what + " '" + net + "': expected none, allow:HOST[,HOST...] or full");
  NetPolicy p{NetPolicy::Kind::Allow, {}};
  std::stringstream list(net.substr(6));
  for (std::string host; std::getline(list, host, ',');)
    if (!host.empty()) p.hosts.insert(host);
  return p;
}

bool net_within(const std::string& net, const std::string& ceiling) {
  NetPolicy asked = net_policy(net, "net"), allowed = net_policy(ceiling, "--allowed-net");
  if (allowed.kind == NetPolicy::Kind::Full || asked.kind == NetPolicy::Kind::None) return true;
  if (asked.kind == NetPolicy::Kind::Full || allowed.kind == NetPolicy::Kind::None) return false;
  for (const std::string& host : asked.hosts)
    if (!allowed.hosts.contains(host)) return false;
  return true;
}

template <typename T>
void lower(std::optional<T>& limit, const Ceiling& c, const std::optional<std::string>& ceiling) {
  if (!ceiling) return;
  T most = static_cast<T>(value_of(c, *ceiling, c.flag));
  if (!limit || *limit > most) limit = most;
}

}  // namespace

void check_ceilings(const RequestCeilings& c) {
  for (auto [ceiling, text] : {std::pair{kMemory, c.memory},
                               {kTimeout, c.timeout},
                               {kPids, c.pids},
                               {kCpus, c.cpus},
                               {kOutput, c.output},
                               {kDisk, c.disk}})
    if (text) (void)value_of(ceiling, *text, ceiling.flag);
  if (c.net) (void)net_policy(*c.net, "--allowed-net");
}

void check_request_within(const RequestCeilings& c, const CodeRequest& r) {
  check_one(kMemory, c.memory, r.limits.memory);
  check_one(kTimeout, c.timeout, r.limits.timeout);
  check_one(kPids, c.pids, r.limits.pids);
  check_one(kCpus, c.cpus, r.limits.cpus);
  check_one(kOutput, c.output, r.limits.output_limit);
  check_one(kDisk, c.disk, r.limits.disk);
  if (c.net && r.net && !net_within(*r.net, *c.net))
    throw Error::invalid("net " + *r.net + " is over the operator's limit (--allowed-net " +
                         *c.net + ")");
}

void clamp_to_ceilings(const RequestCeilings& c, runtime::Limits& limits) {
  lower(limits.memory_bytes, kMemory, c.memory);
  lower(limits.wall_s, kTimeout, c.timeout);
  lower(limits.pids, kPids, c.pids);
  lower(limits.cpus, kCpus, c.cpus);
  lower(limits.output_bytes, kOutput, c.output);
  lower(limits.disk_bytes, kDisk, c.disk);
}

std::string clamp_net(const RequestCeilings& c, const std::string& net) {
  return !c.net || net_within(net, *c.net) ? net : "none";
}

}  // namespace sandcell::agent
