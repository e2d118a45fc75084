#include "confine_plan.hpp"

#include <linux/filter.h>
#include <sched.h>

#include <cstring>
#include <fstream>
#include <string>

#include "sandcell/base/error.hpp"
#include "sandcell_confine.h"

namespace sandcell::runtime {
namespace {

// The buffer under construction: the header first, each part appended at an 8-aligned offset.
class PlanWriter {
 public:
  PlanWriter() : bytes_(sizeof(sandcell_confine_plan)) {}

  sandcell_confine_plan& header() {
    return *reinterpret_cast<sandcell_confine_plan*>(bytes_.data());
  }

  uint32_t append(const void* data, size_t size) {
    bytes_.resize((bytes_.size() + 7) & ~size_t{7});
    const size_t offset = bytes_.size();
    if (offset + size > UINT32_MAX) throw Error(E2BIG, "the confinement plan is too large");
    bytes_.resize(offset + size);
    if (size > 0) memcpy(bytes_.data() + offset, data, size);
    return static_cast<uint32_t>(offset);
  }

  std::vector<unsigned char> finish() {
    header().size = static_cast<uint32_t>(bytes_.size());
    return std::move(bytes_);
  }

 private:
  std::vector<unsigned char> bytes_;
};

void check_count(size_t count, size_t max, const char* what) {
  if (count > max)
    throw Error(E2BIG, std::string("a program from outside takes at most ") + std::to_string(max) +
                           " " + what + ", not " + std::to_string(count));
}

uint64_t mask_of(const std::vector<cap_value_t>& caps) {
  uint64_t mask = 0;
  for (cap_value_t cap : caps)
    if (cap >= 0 && cap < 64) mask |= uint64_t{1} << cap;
  return mask;
}

uint64_t flag_mask(cap_t state, cap_flag_t flag) {
  uint64_t mask = 0;
  for (cap_value_t cap = 0; cap < 64 && cap <= CAP_LAST_CAP; ++cap) {
    cap_flag_value_t value = CAP_CLEAR;
    if (cap_get_flag(state, cap, flag, &value) == 0 && value == CAP_SET) mask |= uint64_t{1} << cap;
  }
  return mask;
}

}  // namespace

// The namespaces run_child()'s clone made (and its cgroup namespace, unshared after "go").
uint32_t confine_namespaces(const ChildPlan& plan) {
  uint32_t flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP;
  if (!plan.host_network) flags |= CLONE_NEWNET;
  if (plan.user_namespace || plan.own_user_ns) flags |= CLONE_NEWUSER;
  return flags;
}

std::vector<unsigned char> confine_plan_for(const ChildPlan& plan, const SeccompProgram* program,
                                            mode_t umask) {
  check_count(plan.groups.size(), SANDCELL_CONFINE_MAX_GROUPS, "groups");
  check_count(plan.rlimits.size(), SANDCELL_CONFINE_MAX_RLIMITS, "rlimits");
  check_count(plan.landlock.writable.size(), SANDCELL_CONFINE_MAX_WRITABLE, "writable paths");
  check_count(plan.seccomp_layers.size() + (program ? 1 : 0), SANDCELL_CONFINE_MAX_LAYERS,
              "seccomp filters");
  PlanWriter writer;
  {
    sandcell_confine_plan& h = writer.header();
    h.magic = SANDCELL_CONFINE_MAGIC;
    h.version = SANDCELL_CONFINE_VERSION;
    h.join_namespaces = confine_namespaces(plan);
    h.uid = plan.uid;
    h.gid = plan.gid;
    h.group_count = static_cast<uint32_t>(plan.groups.size());
    h.setgroups_denied = plan.setgroups_denied ? 1 : 0;
    h.bounding_drop = mask_of(plan.caps.drop_from_bounding);
    h.cap_effective = flag_mask(plan.caps.final_state.get(), CAP_EFFECTIVE);
    h.cap_permitted = flag_mask(plan.caps.final_state.get(), CAP_PERMITTED);
    h.cap_inheritable = flag_mask(plan.caps.final_state.get(), CAP_INHERITABLE);
    // set_capabilities(): root keeps its capabilities across execve by its bounding set; any
    // other uid by the ambient set.
    h.cap_ambient = plan.uid == 0 ? 0 : mask_of(plan.caps.keep);
    h.no_new_privs = plan.no_new_privileges ? 1 : 0;
    h.umask = umask & 0777;
    h.landlock_abi = static_cast<uint32_t>(std::max(plan.landlock.abi, 0));
    h.landlock_deny_tcp = plan.landlock.deny_tcp ? 1 : 0;
    h.landlock_writable_count = static_cast<uint32_t>(plan.landlock.writable.size());
    h.rlimit_count = static_cast<uint32_t>(plan.rlimits.size());
    h.filter_count = static_cast<uint32_t>(plan.seccomp_layers.size() + (program ? 1 : 0));
  }
  std::vector<uint32_t> groups(plan.groups.begin(), plan.groups.end());
  const uint32_t groups_offset = writer.append(groups.data(), groups.size() * sizeof(uint32_t));
  std::string writable;
  for (const std::string& path : plan.landlock.writable) writable.append(path).push_back('\0');
  const uint32_t writable_offset = writer.append(writable.data(), writable.size());
  std::vector<sandcell_confine_rlimit> rlimits;
  for (const Rlimit& r : plan.rlimits)
    rlimits.push_back({.resource = static_cast<uint32_t>(r.resource),
                       .reserved = 0,
                       .soft = r.soft,
                       .hard = r.hard});
  const uint32_t rlimit_offset = writer.append(rlimits.data(), rlimits.size() * sizeof rlimits[0]);
  std::vector<sandcell_confine_filter> filters;
  auto add_filter = [&](uint32_t flags, const std::vector<sock_filter>& instructions) {
    check_count(instructions.size(), SANDCELL_CONFINE_MAX_FILTER,
                "seccomp instructions per filter");
    filters.push_back(
        {.flags = flags,
         .count = static_cast<uint32_t>(instructions.size()),
         .offset = writer.append(instructions.data(), instructions.size() * sizeof(sock_filter)),
         .reserved = 0});
  };
  if (program) add_filter(program->flags, program->instructions);
  for (const std::vector<sock_filter>& layer : plan.seccomp_layers) add_filter(0, layer);
  const uint32_t filter_offset = writer.append(filters.data(), filters.size() * sizeof filters[0]);
  const std::string cwd = plan.cwd.empty() ? "/" : plan.cwd;
  const uint32_t cwd_offset = writer.append(cwd.c_str(), cwd.size() + 1);
  sandcell_confine_plan& h = writer.header();
  h.groups_offset = groups_offset;
  h.landlock_writable_offset = writable_offset;
  h.rlimit_offset = rlimit_offset;
  h.filter_offset = filter_offset;
  h.cwd_offset = cwd_offset;
  return writer.finish();
}

mode_t current_umask() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.starts_with("Umask:"))
      return static_cast<mode_t>(std::stoul(line.substr(6), nullptr, 8));
  return 022;
}

}  // namespace sandcell::runtime
