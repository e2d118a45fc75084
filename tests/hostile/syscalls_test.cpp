// Hostile syscalls: each dangerous kernel interface, called by a static program inside the
// default profile, must fail with EPERM (what the kernel answered) AND appear by name in
// events.denied_syscalls (what sandcell reported). Cases already covered by
// tests/integration/confinement_test.cpp (keyctl, unshare, mount, setns, bpf, perf_event_open,
// userfaultfd, io_uring_setup, open_by_handle_at, clone with CLONE_NEWNS, vsock/alg sockets,
// x32/int80, a second thread, the program's own filter) are not repeated here.
#include <seccomp.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "hostile.hpp"

// A namespace of its own: unity builds put several test files in one translation unit.
namespace sandcell::test::hostile_syscall_tests {
namespace {

namespace fs = std::filesystem;

struct Denial {
  const char* probe;    // sc-probe syscall NAME
  const char* syscall;  // the name in the record
};

class DefaultProfileDenies : public ::testing::TestWithParam<Denial> {};

TEST_P(DefaultProfileDenies, WithEpermAndReportsIt) {
  const Denial d = GetParam();
  auto r = run_in_sandbox({}, {"/bin/sc-probe", "syscall", d.probe});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(stdout_of(r), std::string(d.probe) + " errno=EPERM\n");
  EXPECT_EQ(status_of(r), "ok");
  EXPECT_EQ(denied_count(r, d.syscall), 1u) << r.record["events"].dump();
  EXPECT_EQ(r.record["isolation"]["seccomp"], "default");
}

// Keyrings, module loading, kexec, reboot, swap, accounting, clocks, personality, the old and
// new mount APIs, chroot, handles, quotas, port I/O, io_uring, user namespaces through clone,
// the domain name, cross-process inspection, NUMA, legacy loaders and protection keys.
const Denial kDenials[] = {
    {"add_key", "add_key"},           {"request_key", "request_key"},
    {"umount2", "umount2"},           {"pivot_root", "pivot_root"},
    {"kexec_load", "kexec_load"},     {"kexec_file_load", "kexec_file_load"},
    {"init_module", "init_module"},   {"finit_module", "finit_module"},
    {"delete_module", "delete_module"}, {"reboot", "reboot"},
    {"swapon", "swapon"},             {"swapoff", "swapoff"},
    {"acct", "acct"},                 {"settimeofday", "settimeofday"},
    {"clock_settime", "clock_settime"}, {"personality", "personality"},
    {"chroot", "chroot"},
    {"open_tree", "open_tree"},       {"fsopen", "fsopen"},
    {"move_mount", "move_mount"},     {"fsmount", "fsmount"},
    {"mount_setattr", "mount_setattr"}, {"name_to_handle_at", "name_to_handle_at"},
    {"quotactl", "quotactl"},         {"iopl", "iopl"},
    {"ioperm", "ioperm"},             {"io_uring_enter", "io_uring_enter"},
    {"io_uring_register", "io_uring_register"}, {"clone-newuser", "clone"},
    {"setdomainname", "setdomainname"},
    {"kcmp", "kcmp"},                 {"pidfd_getfd", "pidfd_getfd"},
    {"process_vm_readv", "process_vm_readv"}, {"move_pages", "move_pages"},
    {"mbind", "mbind"},               {"uselib", "uselib"},
    {"pkey_alloc", "pkey_alloc"},     {"fanotify_init", "fanotify_init"},
};

INSTANTIATE_TEST_SUITE_P(Hostile, DefaultProfileDenies, ::testing::ValuesIn(kDenials),
                         [](const auto& info) {
                           std::string name = info.param.probe;
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

// The init's namespaces cannot even be opened (it is not dumpable); setns into any namespace
// the program can open is denied by seccomp and reported.
TEST(HostileSyscalls, SetnsIntoEveryNamespaceIsDeniedAndReported) {
  const std::vector<std::string> kinds{"mnt", "net", "pid", "user", "uts", "ipc", "cgroup"};
  std::string script;
  for (const auto& ns : kinds)
    script += "/bin/sc-probe setns-path /proc/1/ns/" + ns + "; /bin/sc-probe setns-path /proc/self/ns/" + ns + ";";
  auto r = run_in_sandbox({}, {"/bin/sh", "-c", script});
  std::string expected;
  for (const auto& ns : kinds)
    expected += "setns /proc/1/ns/" + ns + " errno=EACCES\nsetns /proc/self/ns/" + ns + " errno=EPERM\n";
  EXPECT_EQ(stdout_of(r), expected);
  EXPECT_EQ(denied_count(r, "setns"), kinds.size()) << r.record["events"].dump();
  EXPECT_EQ(status_of(r), "ok");
}

TEST(HostileSyscalls, CodeProfileDeniesPtraceOfTheParent) {
  // Under `default` (Docker's list) ptrace is allowed on this kernel; `code` removes it.
  auto r = run_in_sandbox({"--seccomp", "code"}, {"/bin/sh", "-c", "/bin/sc-probe syscall ptrace-attach; true"});
  EXPECT_EQ(stdout_of(r), "ptrace-attach errno=EPERM\n");
  EXPECT_EQ(denied_count(r, "ptrace"), 1u) << r.record["events"].dump();
  EXPECT_EQ(status_of(r), "ok");
}

// --- the full sweep ---------------------------------------------------------------------------

// The golden list: one line "NAME VERDICT" per native syscall. See tests/hostile/golden/README.md.
const char* kGolden = SANDCELL_HOSTILE_GOLDEN_DIR "/default-profile-x86_64.txt";
constexpr int kLastSyscall = 470;  // above the highest x86_64 number libseccomp 2.5 knows

std::map<std::string, std::string> read_golden() {
  std::map<std::string, std::string> verdicts;
  std::ifstream in(kGolden);
  std::string name, verdict;
  while (in >> name >> verdict)
    if (name[0] != '#') verdicts[name] = verdict;
    else std::getline(in, name);
  return verdicts;
}

// denied: the record lists it (the supervisor answered EPERM); enosys: the profile answers
// ENOSYS (clone3, so libc falls back); allowed: it reached the kernel.
std::map<std::string, std::string> sweep_verdicts(const CliRun& r) {
  std::set<std::string> denied;
  for (const auto& entry : r.record["events"]["denied_syscalls"]) denied.insert(entry["name"]);
  std::map<std::string, std::string> verdicts;
  std::istringstream lines(stdout_of(r));
  for (std::string line; std::getline(lines, line);) {
    int nr = std::stoi(line);
    std::string outcome = line.substr(line.find(' ') + 1);
    // Numbers libseccomp has no name for (holes in the table, syscalls newer than it) are
    // named as the supervisor reports them.
    char* raw = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
    std::string name = raw != nullptr ? raw : "syscall_" + std::to_string(nr);
    free(raw);
    if (outcome == "skipped") verdicts[name] = "skipped";
    else if (denied.contains(name)) verdicts[name] = outcome == "errno=EPERM" ? "denied" : "denied-but-" + outcome;
    else if (name == "clone3" && outcome == "errno=ENOSYS") verdicts[name] = "enosys";
    else verdicts[name] = "allowed";
  }
  return verdicts;
}

TEST(HostileSyscalls, FullSweepMatchesTheGoldenListOfTheDefaultProfile) {
  auto r = run_in_sandbox({"--timeout", "120", "--output-limit", "1m"},
                          {"/bin/sc-probe", "sweep", "0", std::to_string(kLastSyscall)});
  ASSERT_EQ(status_of(r), "ok") << r.err;
  auto verdicts = sweep_verdicts(r);
  if (getenv("SANDCELL_UPDATE_GOLDEN") != nullptr) {
    std::ofstream out(kGolden);
    out << "# sc-probe sweep under `sandcell run --seccomp default`, every argument -1.\n"
        << "# Regenerate: SANDCELL_UPDATE_GOLDEN=1 build/default/tests/sandcell_integration_tests \\\n"
        << "#   --gtest_filter='*FullSweep*'   then review the diff (see golden/README.md).\n";
    for (const auto& [name, verdict] : verdicts) out << name << ' ' << verdict << '\n';
  }
  auto golden = read_golden();
  ASSERT_GT(golden.size(), 300u) << kGolden;
  for (const auto& [name, verdict] : golden)
    EXPECT_EQ(verdicts.contains(name) ? verdicts[name] : "missing", verdict) << name;
  for (const auto& [name, verdict] : verdicts)
    EXPECT_TRUE(golden.contains(name)) << name << " " << verdict << " is not in " << kGolden;
  // The supervisor saw each denied call once, and nothing else.
  for (const auto& entry : r.record["events"]["denied_syscalls"])
    EXPECT_EQ(golden[entry["name"].get<std::string>()], "denied") << entry.dump();
}

}  // namespace
}  // namespace sandcell::test::hostile_syscall_tests
