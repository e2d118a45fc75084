// JSON seccomp profiles (Docker, containers-common, OCI), the shipped default.json and
// code.json on the real kernel, and the denial report's notify plumbing without the runtime.
// Installing a filter needs no root once no_new_privs is set, so each behavioural test forks a
// child, filters it and reports through its exit status.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"
#include "host_abi.hpp"
#include "seccomp_install.hpp"

namespace sandcell::seccomp {
namespace {

using test::i386_getpid;
using test::install;
using test::kInstallFailed;
using test::kX32SyscallBit;

using nlohmann::json;

constexpr const char* kDockerDefault =
    "/usr/share/gocode/src/github.com/docker/docker/profiles/seccomp/default.json";
constexpr const char* kContainersCommon = "/usr/share/containers/seccomp.json";
constexpr int kAfAlg = 38;
constexpr int kAfVsock = 40;

const ProfileContext kNoCaps{.capabilities = {}, .arch = "amd64", .kernel = {6, 1}};

bool exists(const char* path) {
  struct stat st {};
  return ::stat(path, &st) == 0;
}

Profile parse(const json& profile, const ProfileContext& ctx = kNoCaps) {
  return parse_docker_profile(profile, "test.json", ctx);
}

// The message parse() fails with, or "" if it succeeds.
std::string parse_error(const json& profile) {
  try {
    parse(profile);
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error());
    return e.what();
  }
  return "";
}

json one_entry(json entry) {
  return {{"defaultAction", "SCMP_ACT_ERRNO"}, {"syscalls", json::array({std::move(entry)})}};
}

bool has_rule(const Profile& profile, const std::string& name, ActionKind kind) {
  return std::any_of(profile.rules.begin(), profile.rules.end(), [&](const Rule& rule) {
    return rule.action.kind == kind &&
           std::find(rule.names.begin(), rule.names.end(), name) != rule.names.end();
  });
}

bool allows(const Profile& profile, const std::string& name) {
  return has_rule(profile, name, ActionKind::Allow);
}

Profile shipped(const std::string& which) {
  return *load_profile_arg(which, kNoCaps);
}

uint64_t native_key(long nr) {
  return (uint64_t{AUDIT_ARCH_X86_64} << 32) | uint64_t(nr);
}

// ---- loading -----------------------------------------------------------------------------

TEST(DockerProfile, DockersOwnDefaultJson_LoadsAndCompilesBothWays) {
  ASSERT_TRUE(exists(kDockerDefault))
      << kDockerDefault << " is missing: install Debian's golang-github-docker-docker-dev";
  const Profile profile = *load_profile_arg(kDockerDefault, kNoCaps);
  EXPECT_EQ(profile.default_action, (Action{ActionKind::Errno, EPERM}));
  EXPECT_TRUE(allows(profile, "read"));
  EXPECT_TRUE(has_rule(profile, "clone3", ActionKind::Errno));
  for (const bool report : {false, true}) {
    const Program program = compile(profile, {.report_denials = report});
    EXPECT_LE(program.instructions.size(), static_cast<size_t>(BPF_MAXINSNS));
  }
}

TEST(DockerProfile, ContainersCommonJsonWithErrnoNames_LoadsAndCompiles) {
  ASSERT_TRUE(exists(kContainersCommon))
      << kContainersCommon << " is missing: install Debian's golang-github-containers-common";
  const Profile profile = *load_profile_arg(kContainersCommon, kNoCaps);
  EXPECT_EQ(profile.default_action, (Action{ActionKind::Errno, ENOSYS}));
  EXPECT_TRUE(has_rule(profile, "socket", ActionKind::Errno));  // EINVAL for audit netlink
  const Program program = compile(profile, {.report_denials = true});
  EXPECT_FALSE(program.instructions.empty());
}

TEST(DockerProfile, CapabilityIncludesAndExcludes_FollowTheKeptCapabilities) {
  ASSERT_TRUE(exists(kDockerDefault)) << "install golang-github-docker-docker-dev";
  ProfileContext admin = kNoCaps;
  admin.capabilities = {"CAP_SYS_ADMIN"};
  EXPECT_FALSE(allows(*load_profile_arg(kDockerDefault, kNoCaps), "mount"));
  EXPECT_TRUE(allows(*load_profile_arg(kDockerDefault, admin), "mount"));
  // clone3's ENOSYS entry excludes CAP_SYS_ADMIN: with it, clone3 is allowed instead.
  EXPECT_FALSE(has_rule(*load_profile_arg(kDockerDefault, admin), "clone3", ActionKind::Errno));

  const json entry = {{"names", {"chroot"}},
                      {"action", "SCMP_ACT_ALLOW"},
                      {"includes", {{"caps", {"CAP_SYS_CHROOT", "CAP_SYS_ADMIN"}}}}};
  EXPECT_FALSE(allows(parse(one_entry(entry), admin), "chroot"));  // includes needs all
  admin.capabilities.push_back("CAP_SYS_CHROOT");
  EXPECT_TRUE(allows(parse(one_entry(entry), admin), "chroot"));
}

TEST(DockerProfile, ArchesFilter_KeepsOnlyEntriesForThisArchitecture) {
  const json for_amd64 = {{"names", {"arch_prctl"}},
                          {"action", "SCMP_ACT_ALLOW"},
                          {"includes", {{"arches", {"amd64"}}}}};
  const json not_s390 = {
      {"names", {"clone"}}, {"action", "SCMP_ACT_ALLOW"}, {"excludes", {{"arches", {"s390x"}}}}};
  ProfileContext arm = kNoCaps;
  arm.arch = "arm64";
  EXPECT_TRUE(allows(parse(one_entry(for_amd64)), "arch_prctl"));
  EXPECT_FALSE(allows(parse(one_entry(for_amd64), arm), "arch_prctl"));
  EXPECT_TRUE(allows(parse(one_entry(not_s390), arm), "clone"));
  EXPECT_EQ(native_docker_arch(), "amd64");
}

TEST(DockerProfile, MinKernel_ComparesWithTheContextsKernel) {
  const json entry = {
      {"names", {"ptrace"}}, {"action", "SCMP_ACT_ALLOW"}, {"includes", {{"minKernel", "4.8"}}}};
  ProfileContext old_kernel = kNoCaps;
  old_kernel.kernel = {4, 7};
  EXPECT_FALSE(allows(parse(one_entry(entry), old_kernel), "ptrace"));
  old_kernel.kernel = {4, 8};
  EXPECT_TRUE(allows(parse(one_entry(entry), old_kernel), "ptrace"));
  EXPECT_GE(running_kernel(), (KernelVersion{3, 0}));
  json bad = entry;
  bad["includes"]["minKernel"] = "four";
  EXPECT_EQ(parse_error(one_entry(bad)),
            "seccomp profile test.json: syscalls[0].includes.minKernel: invalid kernel version "
            "'four' (expected major.minor)");
}

TEST(DockerProfile, MalformedEntries_NameTheFieldAndIndex) {
  const json ok = {{"names", {"read"}}, {"action", "SCMP_ACT_ALLOW"}};
  json profile = one_entry(ok);
  profile["syscalls"].push_back({{"action", "SCMP_ACT_ALLOW"}});
  EXPECT_EQ(parse_error(profile), "seccomp profile test.json: syscalls[1].names: missing");

  EXPECT_EQ(parse_error(one_entry({{"names", {"read"}}, {"action", "SCMP_ACT_FOO"}})),
            "seccomp profile test.json: syscalls[0].action: unknown action 'SCMP_ACT_FOO'");

  json arg = {{"index", 0}, {"value", 1}, {"op", "SCMP_CMP_FOO"}};
  json entry = {{"names", {"read"}}, {"action", "SCMP_ACT_ALLOW"}, {"args", {arg}}};
  EXPECT_EQ(parse_error(one_entry(entry)),
            "seccomp profile test.json: syscalls[0].args[0].op: unknown operator 'SCMP_CMP_FOO'");

  entry["args"][0] = {{"index", 6}, {"value", 1}, {"op", "SCMP_CMP_EQ"}};
  EXPECT_EQ(parse_error(one_entry(entry)),
            "seccomp profile test.json: syscalls[0].args[0].index: 6 is out of range (a syscall "
            "has arguments 0..5)");

  EXPECT_EQ(parse_error(
                one_entry({{"names", {"read"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", "1"}})),
            "seccomp profile test.json: syscalls[0].errnoRet: expected a non-negative integer, got "
            "\"1\"");
  EXPECT_EQ(parse_error(json{{"syscalls", json::array()}}),
            "seccomp profile test.json: defaultAction: missing");
  EXPECT_EQ(parse_error(json::array()),
            "seccomp profile test.json: (top level): expected an object, got []");
}

TEST(DockerProfile, ErrnoNames_AreReadAndMustAgreeWithErrnoRet) {
  const json named = {{"names", {"read"}}, {"action", "SCMP_ACT_ERRNO"}, {"errno", "EACCES"}};
  EXPECT_EQ(parse(one_entry(named)).rules[0].action, (Action{ActionKind::Errno, EACCES}));
  json both = named;
  both["errnoRet"] = 1;
  EXPECT_EQ(parse_error(one_entry(both)),
            "seccomp profile test.json: syscalls[0].errno: 'EACCES' disagrees with errnoRet 1");
  json unknown = named;
  unknown["errno"] = "EFOO";
  EXPECT_EQ(parse_error(one_entry(unknown)),
            "seccomp profile test.json: syscalls[0].errno: unknown errno name 'EFOO'");
  const json defaulted = {{"defaultAction", "SCMP_ACT_ERRNO"}, {"defaultErrno", "ENOSYS"}};
  EXPECT_EQ(parse(defaulted).default_action, (Action{ActionKind::Errno, ENOSYS}));
}

// runtime-spec config-linux.md: "When the action doesn't support an errno, the runtime MUST print
// and error and fail" (runc: errnoRet only with SCMP_ACT_ERRNO and SCMP_ACT_TRACE).
TEST(DockerProfile, AnErrnoOnAnActionWithoutOne_IsAnError) {
  EXPECT_EQ(parse_error(one_entry({{"names", {"read"}}, {"action", "SCMP_ACT_KILL"}, {"errnoRet", 1}})),
            "seccomp profile test.json: syscalls[0].errnoRet: SCMP_ACT_KILL returns no errno; remove errnoRet or "
            "use SCMP_ACT_ERRNO");
  EXPECT_EQ(parse_error(one_entry({{"names", {"read"}}, {"action", "SCMP_ACT_ALLOW"}, {"errno", "EPERM"}})),
            "seccomp profile test.json: syscalls[0].errno: SCMP_ACT_ALLOW returns no errno; remove errno or use "
            "SCMP_ACT_ERRNO");
  EXPECT_EQ(parse_error(json{{"defaultAction", "SCMP_ACT_ALLOW"}, {"defaultErrnoRet", 1}}),
            "seccomp profile test.json: defaultErrnoRet: SCMP_ACT_ALLOW returns no errno; remove defaultErrnoRet "
            "or use SCMP_ACT_ERRNO");
  // SCMP_ACT_TRACE takes one (no tracer attached: ENOSYS whatever it says).
  EXPECT_EQ(parse(one_entry({{"names", {"read"}}, {"action", "SCMP_ACT_TRACE"}, {"errnoRet", 1}})).rules[0].action,
            (Action{ActionKind::Errno, ENOSYS}));
}

TEST(DockerProfile, OciLinuxSeccompObject_Loads) {
  const json oci = json::parse(R"({
    "defaultAction": "SCMP_ACT_ERRNO", "defaultErrnoRet": 38,
    "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
    "flags": ["SECCOMP_FILTER_FLAG_TSYNC"],
    "syscalls": [
      {"names": ["read", "write"], "action": "SCMP_ACT_ALLOW"},
      {"names": ["ptrace"], "action": "SCMP_ACT_TRACE"},
      {"names": ["kill"], "action": "SCMP_ACT_KILL"},
      {"names": ["tkill"], "action": "SCMP_ACT_KILL_PROCESS"},
      {"names": ["mkdir"], "action": "SCMP_ACT_NOTIFY"},
      {"names": ["getpriority"], "action": "SCMP_ACT_LOG", "args": [
        {"index": 0, "value": 1, "op": "SCMP_CMP_NE"}, {"index": 1, "value": 2, "op": "SCMP_CMP_LT"},
        {"index": 2, "value": 3, "op": "SCMP_CMP_LE"}, {"index": 3, "value": 4, "op": "SCMP_CMP_GE"},
        {"index": 4, "value": 5, "op": "SCMP_CMP_GT"},
        {"index": 5, "value": 255, "valueTwo": 7, "op": "SCMP_CMP_MASKED_EQ"}]}]})");
  const Profile profile = parse(oci);
  EXPECT_EQ(profile.default_action, (Action{ActionKind::Errno, ENOSYS}));
  ASSERT_EQ(profile.rules.size(), 6u);
  EXPECT_EQ(profile.rules[1].action, (Action{ActionKind::Errno, ENOSYS}));  // TRACE, no tracer
  EXPECT_EQ(profile.rules[2].action.kind, ActionKind::KillThread);
  EXPECT_EQ(profile.rules[3].action.kind, ActionKind::KillProcess);
  EXPECT_EQ(profile.rules[4].action.kind, ActionKind::Notify);
  ASSERT_EQ(profile.rules[5].args.size(), 6u);
  EXPECT_EQ(profile.rules[5].args[5].op, ArgCondition::Op::MaskedEqual);
  EXPECT_EQ(profile.rules[5].args[5].value_two, 7u);
  EXPECT_FALSE(profile.kill_foreign_abi);
  EXPECT_FALSE(compile(profile, {.report_denials = true}).instructions.empty());
}

TEST(DockerProfile, OciFeaturesSandcellCannotHonour_AreRefused) {
  json oci = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"listenerPath", "/run/agent.sock"}};
  EXPECT_EQ(parse_error(oci),
            "seccomp profile test.json: listenerPath: seccomp notify agents are not supported");
  oci = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"flags", {"SECCOMP_FILTER_FLAG_SPEC_ALLOW"}}};
  EXPECT_EQ(parse_error(oci),
            "seccomp profile test.json: flags[0]: "
            "'SECCOMP_FILTER_FLAG_SPEC_ALLOW' is not supported");
  oci = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"architectures", {"SCMP_ARCH_Z80"}}};
  EXPECT_EQ(parse_error(oci),
            "seccomp profile test.json: architectures[0]: unknown architecture 'SCMP_ARCH_Z80'");
  oci = {{"defaultAction", "SCMP_ACT_ALLOW"}, {"sandcellForeignAbi", "maybe"}};
  EXPECT_NE(parse_error(oci).find("sandcellForeignAbi: expected"), std::string::npos);
}

TEST(LoadProfileArg, KeywordsAndFiles) {
  EXPECT_FALSE(load_profile_arg("unconfined", kNoCaps).has_value());
  EXPECT_EQ(load_profile_arg("builtin", kNoCaps)->name, "builtin");
  EXPECT_EQ(load_profile_arg("default", kNoCaps)->name, "default");
  EXPECT_EQ(load_profile_arg("code", kNoCaps)->name, "code");
  try {
    load_profile_arg("/nonexistent/profile.json", kNoCaps);
    FAIL() << "a missing file was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
  }
}

// ---- shipped profiles --------------------------------------------------------------------

TEST(ShippedProfiles, DefaultKeepsDockersAllowlistWithoutIoUringAndGuardsSocket) {
  const Profile profile = shipped("default");
  EXPECT_EQ(profile.default_action, (Action{ActionKind::Errno, EPERM}));
  EXPECT_FALSE(profile.kill_foreign_abi);
  for (const char* name : {"read", "execve", "ptrace", "personality", "clone", "socket"}) {
    EXPECT_TRUE(allows(profile, name)) << name;
  }
  for (const char* name : {"io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
                           "keyctl", "bpf", "mount", "unshare", "perf_event_open"}) {
    EXPECT_FALSE(allows(profile, name)) << name;
  }
  for (const Rule& rule : profile.rules) {
    if (rule.names == std::vector<std::string>{"socket"}) {
      EXPECT_FALSE(rule.args.empty());
    }
  }
}

TEST(ShippedProfiles, CodeDropsDebuggingAndKernelSurfaceAndKillsForeignAbis) {
  ProfileContext all_caps = kNoCaps;
  all_caps.capabilities = {"CAP_SYS_PTRACE", "CAP_SYS_ADMIN"};
  const Profile profile = *load_profile_arg("code", all_caps);
  EXPECT_TRUE(profile.kill_foreign_abi);
  for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open",
                           "io_uring_setup", "userfaultfd"}) {
    EXPECT_FALSE(allows(profile, name)) << name << " allowed even with capabilities";
  }
  EXPECT_TRUE(allows(profile, "read"));
}

// ---- compile with the denial report ------------------------------------------------------

TEST(SeccompReport, BuiltinWithReport_HasListenerFlagAndErrnoMap) {
  const Program program = compile(builtin_profile(), {.report_denials = true});
  EXPECT_NE(program.flags & SECCOMP_FILTER_FLAG_NEW_LISTENER, 0u);
  ASSERT_TRUE(program.notify.has_value());
  const NotifyPlan& plan = *program.notify;
  EXPECT_EQ(plan.native_arch, uint32_t{AUDIT_ARCH_X86_64});
  EXPECT_EQ(plan.default_errno, EPERM);
  EXPECT_TRUE(plan.kill_on_foreign_abi);  // the built-in profile kills foreign ABIs
  EXPECT_EQ(plan.errno_for.at(native_key(SYS_keyctl)), EPERM);
  EXPECT_EQ(plan.errno_for.at(native_key(SYS_bpf)), EPERM);
  EXPECT_FALSE(plan.errno_for.contains(native_key(SYS_clone3)));  // ENOSYS is not a denial
  EXPECT_FALSE(plan.errno_for.contains(native_key(SYS_getpid)));
}

TEST(SeccompReport, NameOf_NamesNativeX32AndI386Calls) {
  const auto plan = *compile(builtin_profile(), {.report_denials = true}).notify;
  EXPECT_EQ(plan.name_of(AUDIT_ARCH_X86_64, 250), "keyctl");
  EXPECT_EQ(plan.name_of(AUDIT_ARCH_X86_64, kX32SyscallBit | 39), "x32:getpid");
  EXPECT_EQ(plan.name_of(AUDIT_ARCH_I386, 20), "i386:getpid");
  EXPECT_EQ(plan.name_of(AUDIT_ARCH_X86_64, 99999), "syscall_99999");
}

TEST(SeccompReport, ShippedProfilesWithReport_CarryTheirForeignAbiChoice) {
  EXPECT_FALSE(compile(shipped("default"), {.report_denials = true}).notify->kill_on_foreign_abi);
  EXPECT_TRUE(compile(shipped("code"), {.report_denials = true}).notify->kill_on_foreign_abi);
  EXPECT_EQ(compile(shipped("default"), {.report_denials = false}).flags, 0u);
}

TEST(SeccompReport, SyscallDeniedWithTwoErrnos_StaysUnreportedSoTheAnswerStaysExact) {
  const Rule eacces{.names = {"getpriority", "keyctl"},
                    .action = {ActionKind::Errno, EACCES},
                    .args = {{.index = 0, .op = ArgCondition::Op::Equal, .value = 5}}};
  const Rule allow_keyctl{.names = {"keyctl"}, .action = {}, .args = {}};
  const Profile profile{.name = "mixed",
                        .default_action = {ActionKind::Errno, EPERM},
                        .rules = {eacces, allow_keyctl}};
  const NotifyPlan plan = *compile(profile, {.report_denials = true}).notify;
  // getpriority: EACCES by the rule, EPERM by the default → not in the map, rule stays ERRNO.
  EXPECT_FALSE(plan.errno_for.contains(native_key(SYS_getpriority)));
  // keyctl: the unconditional allow shuts out the default, so EACCES is its only answer.
  EXPECT_EQ(plan.errno_for.at(native_key(SYS_keyctl)), EACCES);
}

// ---- behaviour on the kernel -------------------------------------------------------------

// The errno `call` fails with in a child under `program` (nullptr: unfiltered); 0 on success.
// `setup` runs before the filter is installed.
int errno_under(
    const Program* program, const std::function<long()>& call,
    const std::function<bool()>& setup = [] { return true; }) {
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    alarm(10);
    if (!setup()) _exit(kInstallFailed + 1);
    if (program != nullptr && install(*program) < 0) _exit(kInstallFailed);
    _exit(call() == -1 ? errno : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  EXPECT_NE(WEXITSTATUS(status), kInstallFailed);
  return WEXITSTATUS(status);
}

const Program& default_program() {
  static const Program program =
      compile(shipped("default"), {.report_denials = false});
  return program;
}

const Program& code_program() {
  static const Program program =
      compile(shipped("code"), {.report_denials = false});
  return program;
}

long open_socket(long family, int type, int protocol = 0) {
  const long fd = syscall(SYS_socket, family, type, protocol);
  if (fd >= 0) close(static_cast<int>(fd));
  return fd < 0 ? -1 : 0;
}

TEST(DefaultJson, DeniesKeyctlVsockAndAlgAllowsInetAndFork) {
  const auto* p = &default_program();
  EXPECT_EQ(errno_under(p, [] { return syscall(SYS_keyctl, 0, -3, 0); }), EPERM);
  EXPECT_EQ(errno_under(p, [] { return open_socket(kAfVsock, SOCK_STREAM); }), EPERM);
  EXPECT_EQ(errno_under(p, [] { return open_socket(kAfAlg, SOCK_SEQPACKET); }), EPERM);
  // The kernel reads the family as an int: high bits must not sneak AF_VSOCK past the filter.
  EXPECT_EQ(errno_under(p, [] { return open_socket((1L << 32) | kAfVsock, SOCK_STREAM); }), EPERM);
  EXPECT_EQ(errno_under(p, [] { return open_socket(AF_INET, SOCK_STREAM); }), 0);
  EXPECT_EQ(errno_under(p, [] { return open_socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC); }), 0);
  EXPECT_EQ(errno_under(p, [] { return syscall(SYS_clone3, nullptr, 0); }), ENOSYS);
  EXPECT_EQ(errno_under(p, [] { return syscall(SYS_clone, CLONE_NEWNS | SIGCHLD, 0, 0, 0, 0); }),
            EPERM);
  EXPECT_EQ(errno_under(p,
                        [] {
                          const pid_t pid = fork();
                          if (pid == 0) _exit(0);
                          std::thread([] {}).join();
                          return pid < 0 ? -1L : long{waitpid(pid, nullptr, 0)};
                        }),
            0);
  // ptrace stays Docker's: allowed (ESRCH: there is no process 0 to peek at).
  EXPECT_EQ(errno_under(p, [] { return ptrace(PTRACE_PEEKDATA, 0, nullptr, nullptr); }), ESRCH);
}

TEST(DefaultJson, ForeignAbiWithoutSupervisor_FailsWithEperm) {
  EXPECT_EQ(errno_under(&default_program(),
                        [] { return syscall(kX32SyscallBit | SYS_getpid) == -1 ? -1L : 0L; }),
            EPERM);
}

// AF_PACKET and raw sockets need CAP_NET_RAW, which a test run as a user lacks; a user
// namespace with its own network namespace grants it, so the filter is what says no.
int errno_in_own_netns(const Program* program, const std::function<long()>& call) {
  return errno_under(program, call, [] {
    return unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0 || unshare(CLONE_NEWNET) == 0;
  });
}

TEST(CodeJson, DeniesPtracePacketAndRawSockets) {
  const auto* p = &code_program();
  EXPECT_EQ(errno_under(p, [] { return ptrace(PTRACE_PEEKDATA, 0, nullptr, nullptr); }), EPERM);
  EXPECT_EQ(errno_under(p, [] { return syscall(SYS_userfaultfd, 0); }), EPERM);
  EXPECT_EQ(errno_under(p, [] { return open_socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK); }), 0);
  const auto packet = [] { return open_socket(AF_PACKET, SOCK_DGRAM); };
  const auto raw = [] { return open_socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP); };
  if (errno_in_own_netns(nullptr, packet) != 0 || errno_in_own_netns(nullptr, raw) != 0) {
    GTEST_SKIP() << "no network namespace with CAP_NET_RAW here; the filter cannot be told apart";
  }
  EXPECT_EQ(errno_in_own_netns(p, packet), EPERM);
  EXPECT_EQ(errno_in_own_netns(p, raw), EPERM);
  EXPECT_EQ(errno_in_own_netns(&default_program(), packet), 0);  // Docker allows both
}

TEST(SeccompCompile, TwoConditionsOnOneArgument_AreOredAsRuncDoes) {
  const Rule rule{.names = {"getpriority"},
                  .action = {ActionKind::Errno, EACCES},
                  .args = {{.index = 0, .op = ArgCondition::Op::Equal, .value = 5},
                           {.index = 0, .op = ArgCondition::Op::Equal, .value = 6}}};
  const Program program =
      compile({.name = "or", .default_action = {}, .rules = {rule}}, {.report_denials = false});
  EXPECT_EQ(errno_under(&program, [] { return syscall(SYS_getpriority, 5, 0); }), EACCES);
  EXPECT_EQ(errno_under(&program, [] { return syscall(SYS_getpriority, 6, 0); }), EACCES);
  EXPECT_EQ(errno_under(&program, [] { return syscall(SYS_getpriority, PRIO_PROCESS, 0); }), 0);
}

// ---- the notify plumbing, without the runtime --------------------------------------------

void send_fd(int sock, int fd) {
  char byte = 0;
  iovec iov{.iov_base = &byte, .iov_len = 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  sendmsg(sock, &msg, 0);
}

int receive_fd(int sock) {
  char byte = 0;
  iovec iov{.iov_base = &byte, .iov_len = 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  if (recvmsg(sock, &msg, 0) != 1) return -1;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  if (cmsg == nullptr || cmsg->cmsg_type != SCM_RIGHTS) return -1;
  int fd = -1;
  std::memcpy(&fd, CMSG_DATA(cmsg), sizeof(int));
  return fd;
}

std::optional<seccomp_notif> next_notification(int listener) {
  pollfd pfd{.fd = listener, .events = POLLIN, .revents = 0};
  if (poll(&pfd, 1, 5000) != 1) return std::nullopt;
  seccomp_notif notif{};
  if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &notif) != 0) return std::nullopt;
  return notif;
}

void answer(int listener, const seccomp_notif& notif, int err) {
  seccomp_notif_resp resp{};
  resp.id = notif.id;
  resp.error = -err;
  EXPECT_EQ(ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp), 0) << std::strerror(errno);
}

// A child under `program` hands its listener fd over `sock`, then makes the calls of `body`.
pid_t filtered_child(const Program& program, int sock,
                     const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    alarm(10);  // a missed answer fails the test instead of hanging it
    const long listener = install(program);
    if (listener < 0) _exit(kInstallFailed);
    send_fd(sock, static_cast<int>(listener));
    close(static_cast<int>(listener));  // the parent must hold the only copy
    _exit(body());
  }
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status)) << "child killed by signal " << WTERMSIG(status);
  return WEXITSTATUS(status);
}

TEST(SeccompNotify, DenialReachesSupervisor_AndWithoutItTheCallFailsWithEnosys) {
  const Program program = compile(builtin_profile(), {.report_denials = true});
  const NotifyPlan& plan = *program.notify;
  int socks[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, socks), 0);
  const pid_t pid = filtered_child(program, socks[1], [&] {
    if (syscall(SYS_keyctl, 0, -3, 0) != -1 || errno != EPERM) return 1;
    char go = 0;
    if (read(socks[1], &go, 1) != 1) return 2;  // the parent has closed the listener
    if (syscall(SYS_keyctl, 0, -3, 0) != -1 || errno != ENOSYS) return 3;
    return 0;
  });
  const int listener = receive_fd(socks[0]);
  ASSERT_GE(listener, 0);
  const std::optional<seccomp_notif> notif = next_notification(listener);
  ASSERT_TRUE(notif.has_value()) << "no notification within 5 s";
  EXPECT_EQ(plan.name_of(notif->data.arch, static_cast<uint64_t>(notif->data.nr)), "keyctl");
  const uint64_t key = (uint64_t{notif->data.arch} << 32) | static_cast<uint32_t>(notif->data.nr);
  answer(listener, *notif, plan.errno_for.at(key));
  close(listener);
  ASSERT_EQ(write(socks[0], "g", 1), 1);
  EXPECT_EQ(exit_code(pid), 0);
  close(socks[0]);
  close(socks[1]);
}

// A foreign-ABI call under default.json reaches the supervisor by name; answered with the
// default errno ("sandcellForeignAbi": "errno").
void expect_foreign_call_reported(const std::function<long()>& call, const std::string& name) {
  const Program program = compile(shipped("default"), {.report_denials = true});
  int socks[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, socks), 0);
  const pid_t pid = filtered_child(program, socks[1], [&] { return call() == -EPERM ? 0 : 1; });
  const int listener = receive_fd(socks[0]);
  ASSERT_GE(listener, 0);
  const std::optional<seccomp_notif> notif = next_notification(listener);
  ASSERT_TRUE(notif.has_value()) << "no notification within 5 s";
  EXPECT_EQ(program.notify->name_of(notif->data.arch, static_cast<uint64_t>(notif->data.nr)), name);
  answer(listener, *notif, program.notify->default_errno);
  EXPECT_EQ(exit_code(pid), 0);
  close(listener);
  close(socks[0]);
  close(socks[1]);
}

TEST(SeccompNotify, X32CallReachesSupervisorAsX32Name) {
  // The raw syscall instruction returns -errno in rax.
  expect_foreign_call_reported(
      [] {
        long ret = static_cast<long>(kX32SyscallBit | SYS_getpid);
        __asm__ volatile("syscall" : "+a"(ret) : : "rcx", "r11", "memory");
        return ret;
      },
      "x32:getpid");
}

TEST(SeccompNotify, I386CallReachesSupervisorAsI386Name) {
  if (!test::kernel_runs_i386_calls()) GTEST_SKIP() << test::kNoI386Reason;
  expect_foreign_call_reported(i386_getpid, "i386:getpid");
}

}  // namespace
}  // namespace sandcell::seccomp
