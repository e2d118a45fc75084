// Profile → BPF with libseccomp, in the parent: the child only has to hand the finished program
// to seccomp(2), so it neither allocates nor links libseccomp logic between clone and execve.
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "sandcell/runtime/error.hpp"
#include "sandcell/seccomp/profile.hpp"

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

std::vector<scmp_arg_cmp> libseccomp_conditions(const std::vector<ArgCondition>& args) {
  std::vector<scmp_arg_cmp> conditions;
  for (const ArgCondition& arg : args) {
    // An index past 5 is passed on as is: libseccomp rejects it, and the error names the rule.
    conditions.push_back({.arg = arg.index,
                          .op = libseccomp_op(arg.op),
                          .datum_a = arg.value,
                          .datum_b = arg.value_two});
  }
  return conditions;
}

bool same_action(const Action& a, const Action& b) {
  return a.kind == b.kind && (a.kind != ActionKind::Errno || a.errno_ret == b.errno_ret);
}

void add_rule(scmp_filter_ctx ctx, const Rule& rule) {
  const uint32_t action = libseccomp_action(rule.action);
  const std::vector<scmp_arg_cmp> conditions = libseccomp_conditions(rule.args);
  for (const std::string& name : rule.names) {
    // Profiles list syscalls of every architecture (Docker's does); a name this one lacks
    // (unknown, or only a libseccomp pseudo-number here) has nothing to filter.
    const int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_NATIVE, name.c_str());
    if (nr < 0) continue;
    check_libseccomp(
        seccomp_rule_add_array(ctx, action, nr, static_cast<unsigned>(conditions.size()),
                               conditions.data()),
        "seccomp rule for '" + name + "'");
  }
}

FilterContext new_context(const Profile& profile) {
  FilterContext ctx(seccomp_init(libseccomp_action(profile.default_action)), &seccomp_release);
  if (!ctx) throw Error(EINVAL, "seccomp_init for profile '" + profile.name + "'");
  // The runtime sets no_new_privs itself, right before installing the program.
  check_libseccomp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0),
                   "seccomp attribute no_new_privs");
  // The filter only knows native syscall numbers; the same number means another syscall in the
  // i386 and x32 ABIs, so a call through either is killed rather than judged by the wrong table.
  // The i386 ABI fails the arch check. x32 shares AUDIT_ARCH_X86_64 and is told apart only by
  // bit 30 of the number: libseccomp 2.5.4 emits "nr >= 0x40000000 && nr != -1 → bad arch" for
  // a native x86_64 filter (checked in tests/unit/seccomp_test.cpp with a live x32 number).
  check_libseccomp(seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS),
                   "seccomp attribute bad-arch action");
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

}  // namespace

runtime::SeccompProgram compile(const Profile& profile) {
  FilterContext ctx = new_context(profile);
  for (const Rule& rule : profile.rules) {
    // libseccomp refuses a rule that repeats the default action (EACCES); it changes nothing, so
    // it is skipped as runc does.
    if (same_action(rule.action, profile.default_action)) continue;
    add_rule(ctx.get(), rule);
  }
  return {.name = profile.name,
          .instructions = export_program(ctx.get(), profile.name),
          // A notify action needs the listener fd seccomp(2) returns only with this flag.
          .flags = uses_notify(profile) ? unsigned{SECCOMP_FILTER_FLAG_NEW_LISTENER} : 0u,
          .notify = std::nullopt};
}

}  // namespace sandcell::seccomp
