// The built-in filter of `sandcell run`. Allow by default (language runtimes use a long, changing
// tail of syscalls), deny what a sandboxed program never needs and what has been the way out of
// containers again and again. Capabilities are dropped as well; this list is the second wall
// for when a capability check has a bug, and it shuts kernel surface that needs no capability.
#include <sched.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "sandcell/seccomp/profile.hpp"

namespace sandcell::seccomp {
namespace {

using Op = ArgCondition::Op;

// Denied with EPERM, the answer a program already handles for "not allowed". Names this
// architecture lacks (stime, nfsservctl on newer kernels) are skipped by compile().
const std::vector<std::string>& denied_syscalls() {
  static const std::vector<std::string> names = {
      // Kernel keyrings are not namespaced: a sandbox could read or fill the host's keys.
      "keyctl", "add_key", "request_key",
      // Mount and namespace changes: the mount table and namespaces are the sandbox itself.
      "mount", "umount2", "unshare", "setns", "pivot_root", "fsopen", "fsconfig", "fsmount",
      "fspick", "move_mount", "open_tree", "mount_setattr",
      // Loading code into the kernel.
      "kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
      // Large attack surface with a record of privilege-escalation bugs: eBPF verifier,
      // perf (CVE-2013-2094), userfaultfd as an exploit timing aid, io_uring (Google's kCTF
      // reports; disabled in ChromeOS and Android for the same reason).
      "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
      "io_uring_register",
      // File handles bypass path lookup and so the mount root ("shocker", Docker 2014).
      "open_by_handle_at", "name_to_handle_at",
      // Host-global state: power, swap, accounting, clocks, quotas, kernel log, terminals.
      "reboot", "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
      "adjtimex", "stime", "quotactl", "quotactl_fd", "syslog", "vhangup",
      // Obsolete interfaces nobody should reach: lookup_dcookie (oprofile), nfsservctl (gone
      // since 3.1), uselib (a.out), raw I/O port access.
      "lookup_dcookie", "nfsservctl", "uselib", "iopl", "ioperm"};
  return names;
}

ArgCondition masked_equal(unsigned index, uint64_t mask, uint64_t value) {
  return {.index = index, .op = Op::MaskedEqual, .value = mask, .value_two = value};
}

Rule deny_one(const std::string& name, ArgCondition condition) {
  return {.names = {name}, .action = {ActionKind::Errno, EPERM}, .args = {condition}};
}

// clone(2) may create namespaces just like unshare(2). libseccomp ANDs the conditions of one
// rule, so "any of these flags" takes one rule per flag. CLONE_NEWTIME is unshare/clone3-only
// (its bit is part of CSIGNAL for clone), so it needs no rule here.
std::vector<Rule> clone_namespace_rules() {
  std::vector<Rule> rules;
  for (uint64_t flag : {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID,
                        CLONE_NEWNET, CLONE_NEWCGROUP}) {
    rules.push_back(deny_one("clone", masked_equal(0, flag, flag)));
  }
  return rules;
}

// Typing into a terminal the sandbox shares with the host runs commands as the host user
// (TIOCSTI: CVE-2016-7545, CVE-2017-5226; TIOCLINUX can paste the selection). The kernel reads
// the request as an unsigned int, so only the low 32 bits are compared: a plain 64-bit equality
// is bypassed by setting a high bit (CVE-2019-10063 in flatpak).
std::vector<Rule> terminal_injection_rules() {
  return {deny_one("ioctl", masked_equal(1, 0xffffffff, TIOCSTI)),
          deny_one("ioctl", masked_equal(1, 0xffffffff, TIOCLINUX))};
}

// Docker allows personality(2) only for PER_LINUX (0), PER_LINUX32 (8), UNAME26 (0x20000), both
// (0x20008) and the query 0xffffffff: the other persona flags switch off ASLR
// (ADDR_NO_RANDOMIZE) or make every mapping executable (READ_IMPLIES_EXEC). Under an Allow
// default that allowlist must be written as deny rules, and libseccomp takes one condition per
// argument per rule, so the complement is covered with "bit i set and bit j clear" compares.
// Why they cover it exactly: the allowed values other than the query are those with no bit
// outside {3, 17}. A value with such a bit set that is not all ones either has, walking those 30
// bits cyclically, a set bit followed by a clear one, or has all 30 set and then bit 3 or 17
// clear. Each rule needs a set bit outside {3, 17} and a clear bit, so none matches an allowed
// value. Only the low 32 bits are compared because the kernel takes an unsigned int.
std::vector<Rule> personality_rules() {
  std::vector<unsigned> bits;
  for (unsigned bit = 0; bit < 32; ++bit) {
    if (bit != 3 && bit != 17) bits.push_back(bit);
  }
  std::vector<Rule> rules;
  auto deny_set_clear = [&rules](unsigned set, unsigned clear) {
    const uint64_t mask = (uint64_t{1} << set) | (uint64_t{1} << clear);
    rules.push_back(deny_one("personality", masked_equal(0, mask, uint64_t{1} << set)));
  };
  for (size_t i = 0; i < bits.size(); ++i) deny_set_clear(bits[i], bits[(i + 1) % bits.size()]);
  deny_set_clear(bits[0], 3);
  deny_set_clear(bits[0], 17);
  return rules;
}

void append(std::vector<Rule>& to, std::vector<Rule> rules) {
  to.insert(to.end(), std::make_move_iterator(rules.begin()), std::make_move_iterator(rules.end()));
}

}  // namespace

Profile builtin_profile() {
  Profile profile{.name = "builtin", .default_action = {ActionKind::Allow, 0}, .rules = {}};
  profile.rules.push_back({.names = denied_syscalls(), .action = {ActionKind::Errno, EPERM}});
  // clone3 passes its flags in a struct seccomp cannot read, so namespace flags cannot be told
  // apart; ENOSYS (not EPERM) makes glibc and other runtimes fall back to clone(2), checked above.
  profile.rules.push_back({.names = {"clone3"}, .action = {ActionKind::Errno, ENOSYS}});
  append(profile.rules, clone_namespace_rules());
  append(profile.rules, terminal_injection_rules());
  append(profile.rules, personality_rules());
  return profile;
}

}  // namespace sandcell::seccomp
