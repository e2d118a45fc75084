// Profile → BPF with libseccomp, in the parent: the child only has to hand the finished program
// to seccomp(2), so it neither allocates nor links libseccomp logic between clone and execve.
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "reported_profile.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/profile.hpp"
#include "syscall_table.hpp"

namespace sandcell::seccomp {
namespace {

using FilterContext = std::unique_ptr<void, decltype(&seccomp_release)>;

class OwnedFd {
 public:
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  ~OwnedFd() { ::close(fd_); }
  int get() const { return fd_; }

 private:
  int fd_;
};

// libseccomp returns -errno.
void check_libseccomp(int rc, const std::string& step) {
  if (rc < 0) throw Error(-rc, step);
}

uint32_t libseccomp_action(const Action& action) {
  switch (action.kind) {
    case ActionKind::Allow:
      return SCMP_ACT_ALLOW;
    case ActionKind::Errno:
      return SCMP_ACT_ERRNO(static_cast<uint32_t>(action.errno_ret));
    case ActionKind::KillProcess:
      return SCMP_ACT_KILL_PROCESS;
    case ActionKind::KillThread:
      return SCMP_ACT_KILL_THREAD;
    case ActionKind::Trap:
      return SCMP_ACT_TRAP;
    case ActionKind::Log:
      return SCMP_ACT_LOG;
    case ActionKind::Notify:
      return SCMP_ACT_NOTIFY;
  }
  throw Error::invalid("unknown seccomp action");
}

scmp_compare libseccomp_op(ArgCondition::Op op) {
  using Op = ArgCondition::Op;
  switch (op) {
    case Op::NotEqual:
      return SCMP_CMP_NE;
    case Op::Less:
      return SCMP_CMP_LT;
    case Op::LessEqual:
      return SCMP_CMP_LE;
    case Op::Equal:
      return SCMP_CMP_EQ;
    case Op::GreaterEqual:
      return SCMP_CMP_GE;
    case Op::Greater:
      return SCMP_CMP_GT;
    case Op::MaskedEqual:
      return SCMP_CMP_MASKED_EQ;
  }
  throw Error::invalid("unknown seccomp argument comparison");
}

scmp_arg_cmp libseccomp_condition(const ArgCondition& arg) {
  // An index past 5 is passed on as is: libseccomp rejects it, and the error names the rule.
  return {.arg = arg.index,
          .op = libseccomp_op(arg.op),
          .datum_a = arg.value,
          .datum_b = arg.value_two};
}

bool repeats_an_argument(const std::vector<ArgCondition>& args) {
  std::set<unsigned> seen;
  for (const ArgCondition& arg : args) {
    if (!seen.insert(arg.index).second) return true;
  }
  return false;
}

// The condition sets to add for one rule. libseccomp 2.5 refuses two conditions on the same
// argument in one rule (EINVAL). runc (libcontainer/seccomp/seccomp_linux.go, matchCall) then
// adds each condition as a rule of its own, and Docker and Podman profiles are written against
// runc, so that is what they mean here: the conditions are ORed, not ANDed, for such a rule.
std::vector<std::vector<scmp_arg_cmp>> libseccomp_condition_sets(const Rule& rule) {
  std::vector<scmp_arg_cmp> all;
  for (const ArgCondition& arg : rule.args) all.push_back(libseccomp_condition(arg));
  if (!repeats_an_argument(rule.args)) return {all};
  std::vector<std::vector<scmp_arg_cmp>> one_each;
  for (const scmp_arg_cmp& condition : all) one_each.push_back({condition});
  return one_each;
}

void add_rule(scmp_filter_ctx ctx, const Rule& rule) {
  const uint32_t action = libseccomp_action(rule.action);
  const std::vector<std::vector<scmp_arg_cmp>> condition_sets = libseccomp_condition_sets(rule);
  for (const std::string& name : rule.names) {
    // Profiles list syscalls of every architecture (Docker's does); a name this one lacks
    // (unknown, or only a libseccomp pseudo-number here) has nothing to filter.
    const int nr = native_syscall_number(name);
    if (nr < 0) continue;
    for (const std::vector<scmp_arg_cmp>& conditions : condition_sets) {
      check_libseccomp(
          seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(conditions.size()),
                                 conditions.data()),
          "seccomp rule for '" + name + "'");
    }
  }
}

FilterContext new_context(const Profile& profile, uint32_t foreign_abi_action) {
  FilterContext ctx(seccomp_init(libseccomp_action(profile.default_action)), &seccomp_release);
  if (!ctx) throw Error(EINVAL, "seccomp_init for profile '" + profile.name + "'");
  // The runtime sets no_new_privs itself, right before installing the program.
  check_libseccomp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0),
                   "seccomp attribute no_new_privs");
  // The filter only knows native syscall numbers; the same number means another syscall in the
  // i386 and x32 ABIs, so a call through either gets the bad-arch action rather than being
  // judged by the wrong table. The i386 ABI fails the arch check. x32 shares AUDIT_ARCH_X86_64
  // and is told apart only by bit 30 of the number: libseccomp 2.5.4 emits "nr >= 0x40000000 &&
  // nr != -1 → bad arch" for a native x86_64 filter (checked in tests/unit/seccomp_test.cpp and
  // seccomp_profile_test.cpp with live x32 and i386 calls).
  check_libseccomp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, foreign_abi_action),
                   "seccomp attribute bad-arch action");
  // A binary tree of syscall numbers instead of one long chain of comparisons. Not for the
  // syscalls themselves but for loading: the kernel runs the filter once per syscall number to
  // build its allow cache, ~450 walks down a 300-compare chain. Docker's allowlist: 381 us to
  // load as a chain (334 instructions), 110 us as a tree (408), on this VM; every sandbox pays it.
  check_libseccomp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, 2),
                   "seccomp attribute optimize");
  return ctx;
}

std::vector<sock_filter> read_program(int fd, const std::string& step) {
  struct stat st {};
  check(::fstat(fd, &st), step);
  if (st.st_size % static_cast<off_t>(sizeof(sock_filter)) != 0) throw Error(EIO, step);
  std::vector<sock_filter> program(static_cast<size_t>(st.st_size) / sizeof(sock_filter));
  auto* bytes = reinterpret_cast<char*>(program.data());
  for (off_t done = 0; done < st.st_size;) {
    const ssize_t n =
        check(::pread(fd, bytes + done, static_cast<size_t>(st.st_size - done), done), step);
    if (n == 0) throw Error(EIO, step);
    done += n;
  }
  return program;
}

std::vector<sock_filter> export_program(scmp_filter_ctx ctx, const std::string& profile_name) {
  const std::string step = "export seccomp profile '" + profile_name + "'";
  OwnedFd fd(static_cast<int>(check(::memfd_create("sandcell-seccomp", MFD_CLOEXEC), step)));
  check_libseccomp(seccomp_export_bpf(ctx, fd.get()), step);
  return read_program(fd.get(), step);
}

bool uses_notify(const Profile& profile) {
  if (profile.default_action.kind == ActionKind::Notify) return true;
  for (const Rule& rule : profile.rules) {
    if (rule.action.kind == ActionKind::Notify) return true;
  }
  return false;
}

// Without a supervisor a foreign-ABI call cannot be reported, only killed or denied.
uint32_t unreported_foreign_abi_action(const Profile& profile) {
  if (profile.kill_foreign_abi) return SCMP_ACT_KILL_PROCESS;
  const Action& fallback = profile.default_action;
  return SCMP_ACT_ERRNO(
      static_cast<uint32_t>(fallback.kind == ActionKind::Errno ? fallback.errno_ret : EPERM));
}

Program compile_filter(const Profile& profile, uint32_t foreign_abi_action,
                                       unsigned flags) {
  FilterContext ctx = new_context(profile, foreign_abi_action);
  for (const Rule& rule : profile.rules) {
    // libseccomp refuses a rule that repeats the default action (EACCES); it changes nothing, so
    // it is skipped as runc does.
    if (rule.action == profile.default_action) continue;
    add_rule(ctx.get(), rule);
  }
  // A notify action needs the listener fd seccomp(2) returns only with this flag.
  if (uses_notify(profile)) flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
  return {.name = profile.name,
          .instructions = export_program(ctx.get(), profile.name),
          .flags = flags,
          .notify = std::nullopt};
}

}  // namespace

Program compile(const Profile& profile, const CompileOptions& options) {
  if (!options.report_denials) {
    return compile_filter(profile, unreported_foreign_abi_action(profile), 0);
  }
  ReportedProfile reported = with_denials_reported(profile);
  // Foreign-ABI calls go to the supervisor too: it records them, then kills the sandbox or
  // answers with the default errno as plan.kill_on_foreign_abi says. libseccomp 2.5.4 accepts
  // SCMP_ACT_NOTIFY as the bad-arch action.
  Program program =
      compile_filter(reported.profile, SCMP_ACT_NOTIFY, SECCOMP_FILTER_FLAG_NEW_LISTENER);
  program.notify = std::move(reported.plan);
  return program;
}

Program compile(const Profile& profile) {
  return compile(profile, CompileOptions{.report_denials = false});
}

}  // namespace sandcell::seccomp
