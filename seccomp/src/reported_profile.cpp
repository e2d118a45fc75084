// Denials become SECCOMP_RET_USER_NOTIF so the supervisor can count them by name, and the plan
// tells it which errno to answer, so the program sees what plain SECCOMP_RET_ERRNO would give.
//
// A notification carries only the syscall number and arguments, not the rule that matched, so
// the answer is looked up per syscall. Where a syscall can be denied with two different errnos
// (say EINVAL by a conditional rule and EPERM by the default), its rules stay plain ERRNO: the
// answer stays exact and only those denials go unreported. ENOSYS is a compatibility answer
// ("not here, use the fallback", as for clone3), not a denial, and is never reported.
#include "reported_profile.hpp"

#include <cerrno>
#include <map>
#include <optional>
#include <set>

#include "syscall_table.hpp"

namespace sandcell::seccomp {
namespace {

bool reportable(const Action& action) {
  return action.kind == ActionKind::Errno && action.errno_ret != ENOSYS;
}

int default_errno_of(const Profile& profile) {
  const Action& action = profile.default_action;
  return action.kind == ActionKind::Errno ? action.errno_ret : EPERM;
}

// The errno the supervisor gives a call this action sends to it; nullopt if it sends none.
std::optional<int> answer_of(const Action& action, int default_errno) {
  if (reportable(action)) return action.errno_ret;
  if (action.kind == ActionKind::Notify) return default_errno;
  return std::nullopt;
}

// Every errno a notification of this syscall could stand for.
struct Answers {
  std::set<int> from_rules;
  bool default_reachable = true;  // false once a rule matches the syscall unconditionally
};

std::map<int, Answers> answers_by_syscall(const Profile& profile) {
  const int default_errno = default_errno_of(profile);
  std::map<int, Answers> by_nr;
  for (const Rule& rule : profile.rules) {
    if (rule.action == profile.default_action) continue;  // compile() skips it
    const std::optional<int> answer = answer_of(rule.action, default_errno);
    for (const std::string& name : rule.names) {
      const int nr = native_syscall_number(name);
      if (nr < 0) continue;
      Answers& answers = by_nr[nr];
      if (rule.args.empty()) answers.default_reachable = false;
      if (answer) answers.from_rules.insert(*answer);
    }
  }
  return by_nr;
}

// The one errno every notification of the syscall stands for, if there is one.
std::optional<int> single_answer(const Answers& answers, const Profile& profile) {
  std::set<int> all = answers.from_rules;
  if (answers.default_reachable && reportable(profile.default_action)) {
    all.insert(profile.default_action.errno_ret);
  }
  if (all.size() != 1) return std::nullopt;
  return *all.begin();
}

uint64_t plan_key(uint32_t arch, int nr) {
  return (uint64_t{arch} << 32) | static_cast<uint32_t>(nr);
}

// Splits an Errno rule into a Notify rule for the syscalls with a single answer and the
// original rule for the rest.
void add_reported_rule(const Rule& rule, const std::map<int, std::optional<int>>& exact,
                       std::vector<Rule>& out) {
  Rule notify{.names = {}, .action = {ActionKind::Notify, 0}, .args = rule.args};
  Rule keep{.names = {}, .action = rule.action, .args = rule.args};
  for (const std::string& name : rule.names) {
    const auto it = exact.find(native_syscall_number(name));
    (it != exact.end() && it->second ? notify : keep).names.push_back(name);
  }
  if (!notify.names.empty()) out.push_back(std::move(notify));
  if (!keep.names.empty()) out.push_back(std::move(keep));
}

NotifyPlan empty_plan(const Profile& profile) {
  return {.default_errno = default_errno_of(profile),
          .errno_for = {},
          .kill_on_foreign_abi = profile.kill_foreign_abi,
          .native_arch = native_audit_arch(),
          .name_of = &syscall_name};
}

}  // namespace

ReportedProfile with_denials_reported(const Profile& profile) {
  ReportedProfile reported{.profile = profile, .plan = empty_plan(profile)};
  std::map<int, std::optional<int>> exact;
  for (const auto& [nr, answers] : answers_by_syscall(profile)) {
    exact[nr] = single_answer(answers, profile);
    if (exact[nr] && !answers.from_rules.empty()) {
      reported.plan.errno_for[plan_key(reported.plan.native_arch, nr)] = *exact[nr];
    }
  }
  reported.profile.rules.clear();
  for (const Rule& rule : profile.rules) {
    if (rule.action == profile.default_action) continue;
    if (reportable(rule.action)) {
      add_reported_rule(rule, exact, reported.profile.rules);
    } else {
      reported.profile.rules.push_back(rule);
    }
  }
  if (reportable(profile.default_action)) reported.profile.default_action = {ActionKind::Notify, 0};
  return reported;
}

}  // namespace sandcell::seccomp
