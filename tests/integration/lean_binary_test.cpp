// The lean `sandcell` maps the network's C libraries only when a run uses the network
// (network/src/dynamic_libs.hpp): loading them cost 0.9 ms of every `--net none` start. The
// dynamic loader says what it maps (LD_DEBUG=files), both what the executable links (and what
// that links) and what it opens later with dlopen.
//
// Where the toolchain can, `sandcell` is a static PIE and maps nothing at all; what needs the
// network's libraries then runs in `sandcell-net`, the same program linked dynamically
// (cli/forward.cpp), and the loader's questions are asked of that one.
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "sandcell_cli.hpp"
#include "text_pages.hpp"

namespace sandcell::test {
namespace {

// The network libraries and the libraries only they bring in.
const std::set<std::string> kNetworkLibraries = {
    "libnftables.so.1", "libnftnl.so.11",    "libmnl.so.0",          "libjansson.so.4",
    "libgmp.so.10",     "libxtables.so.12",  "libnl-3.so.200",       "libnl-route-3.so.200",
    "libidn2.so.0",     "libunistring.so.2", "libhttp_parser.so.2.9"};

std::string sandcell_net_binary() {
  return (std::filesystem::path(sandcell_binary()).parent_path() / "sandcell-net").string();
}

// The lean program as linked dynamically: sandcell itself, or sandcell-net beside a static one.
std::string dynamic_lean_binary() {
#if SANDCELL_LEAN_IS_STATIC
  return sandcell_net_binary();
#else
  return sandcell_binary();
#endif
}

// `BINARY ARGS...` with the dynamic loader reporting on stderr what it maps.
CliRun run_with_ld_debug(const std::string& binary, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "LD_DEBUG=files", binary};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv);
}

// The file names of the shared objects ld.so mapped: "file=libc.so.6 [0];  needed by ..." for a
// NEEDED entry, "file=libidn2.so.0 [0];  dynamically loaded by ..." for a dlopen (and
// "opening file=/usr/lib/.../libidn2.so.0 [0]" for it too).
std::set<std::string> libraries_mapped(const CliRun& run) {
  std::set<std::string> mapped;
  static const std::regex file(R"(file=(?:\S*/)?(\S+) \[)");
  for (std::sregex_iterator it(run.err.begin(), run.err.end(), file), end; it != end; ++it)
    mapped.insert((*it)[1]);
  return mapped;
}

std::set<std::string> network_libraries_in(const std::set<std::string>& loaded) {
  std::set<std::string> found;
  for (const auto& name : loaded)
    if (kNetworkLibraries.contains(name)) found.insert(name);
  return found;
}

// Full RELRO (cli/CMakeLists.txt, -z now): ld.so binds every symbol of the executable before
// main() and its GOT is read-only after. Nothing of it is bound lazily, in the supervisor or in
// the sandbox's child (a fork of it: ld.so would report there too, on the stderr the child passes
// through). Shared libraries a sanitizer build links bind as they were built to.
TEST(LeanBinary, BindsEverySymbolBeforeMain) {
  const std::string binary = dynamic_lean_binary();
  const CliRun run = run_program({"/usr/bin/env", "LD_DEBUG=bindings", binary, "run", "--rootfs",
                                  test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string ours = "binding file " + binary + " [0]";
  const size_t start = run.err.find("transferring control");
  ASSERT_NE(start, std::string::npos) << run.err.substr(0, 2000);
  ASSERT_NE(run.err.rfind(ours, start), std::string::npos) << run.err.substr(0, 2000);
  const size_t late = run.err.find(ours, start);
  EXPECT_EQ(late, std::string::npos) << "bound after main(): " << run.err.substr(late, 300);
}

TEST(LeanBinary, NetNoneRun_LoadsNoNetworkLibrary) {
  const CliRun run = run_with_ld_debug(dynamic_lean_binary(),
                                       {"run", "--rootfs", test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto loaded = libraries_mapped(run);
  // What it does link: proves ld.so reported, so an empty answer below means something.
  ASSERT_TRUE(loaded.contains("libc.so.6")) << run.err;
  EXPECT_EQ(network_libraries_in(loaded), std::set<std::string>{});
}

// libseccomp and libcap come from their archives, libstdc++ and libgcc too, and nothing uses
// libm: ld.so maps and binds one library per run instead of five (~0.3 ms of each run here).
TEST(LeanBinary, NetNoneRun_MapsOnlyLibc) {
#if !SANDCELL_LEAN_LINKS_ONLY_LIBC
  GTEST_SKIP() << "this build links shared libraries on purpose (sanitizers, or "
                  "SANDCELL_STATIC_SYSLIBS / SANDCELL_STATIC_LIBSTDCXX off)";
#endif
  const CliRun run = run_with_ld_debug(dynamic_lean_binary(),
                                       {"run", "--rootfs", test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(libraries_mapped(run), std::set<std::string>{"libc.so.6"}) << run.err;
}

// The other half: a library opened with dlopen shows up too, so the test above would see one.
// Asked of `sandcell`: a static one hands the run to sandcell-net, whose loader reports it.
TEST(LeanBinary, AllowRun_LoadsLibidn2ForTheHostName) {
  const CliRun run = run_with_ld_debug(
      sandcell_binary(),
      {"run", "--rootfs", test_rootfs(), "--net", "allow:example.test", "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto loaded = libraries_mapped(run);
  EXPECT_TRUE(network_libraries_in(loaded).contains("libidn2.so.0")) << run.err;
}

// The ELF header and program headers of an executable.
struct ElfShape {
  uint16_t type = 0;
  bool has_interpreter = false;
  bool is_elf64 = false;
};

ElfShape read_elf_shape(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  Elf64_Ehdr header{};
  in.read(reinterpret_cast<char*>(&header), sizeof header);
  ElfShape shape;
  if (!in || memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64)
    return shape;
  shape.is_elf64 = true;
  shape.type = header.e_type;
  for (int i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr program{};
    in.seekg(static_cast<std::streamoff>(header.e_phoff + i * header.e_phentsize));
    in.read(reinterpret_cast<char*>(&program), sizeof program);
    if (in && program.p_type == PT_INTERP) shape.has_interpreter = true;
  }
  return shape;
}

// Static, and still a PIE (ET_DYN), so ASLR places it anywhere like any other PIE: the
// supervisor handles what the sandbox writes, and a fixed address would help an exploit.
TEST(LeanBinary, IsAStaticPie) {
#if !SANDCELL_LEAN_IS_STATIC
  GTEST_SKIP() << "this build links sandcell dynamically (sanitizers, SANDCELL_STATIC_LEAN off, "
                  "or no -static-pie in the toolchain)";
#endif
  const ElfShape shape = read_elf_shape(sandcell_binary());
  ASSERT_TRUE(shape.is_elf64) << sandcell_binary();
  EXPECT_EQ(shape.type, ET_DYN) << "not position-independent";
  EXPECT_FALSE(shape.has_interpreter) << "has a dynamic loader (PT_INTERP)";
  const CliRun run =
      run_with_ld_debug(sandcell_binary(), {"run", "--rootfs", test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(libraries_mapped(run), std::set<std::string>{}) << run.err;
  const ElfShape twin = read_elf_shape(sandcell_net_binary());
  EXPECT_TRUE(twin.has_interpreter) << sandcell_net_binary() << " must be able to load libraries";
}

// cli/sandcell.order puts the functions a run calls first in .text, in the order of their first
// call (lld, cli/CMakeLists.txt). A page fault maps the 64 KiB around it, so with those
// functions spread over the program a run's supervisor mapped ~94% of its text pages by the
// time the program ran, with them together ~40%. Above 60%, the order no longer matches what a
// run calls (or was not applied): scripts/function-order.sh rewrites it.
TEST(LeanBinary, ARunMapsLittleOfTheProgramsText) {
#if !SANDCELL_LEAN_TEXT_ORDERED
  GTEST_SKIP() << "sandcell is linked without its function order (no lld, or not a static PIE)";
#endif
  const pid_t supervisor =
      spawn_sandcell({"run", "--rootfs", test_rootfs(), "--", "/bin/sleep", "1"});
  ASSERT_GT(supervisor, 0);
  const pid_t program = wait_for_sandbox_program(supervisor);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the supervisor's part of it
  const TextPages pages = text_pages(supervisor, sandcell_binary());
  int status = 0;
  ASSERT_EQ(waitpid(supervisor, &status, 0), supervisor);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  ASSERT_GT(program, 0) << "the program never started";
  ASSERT_GT(pages.total, 100u) << "no executable mapping of " << sandcell_binary();
  EXPECT_LT(pages.present * 100, pages.total * 60)
      << pages.present << " of " << pages.total << " text pages mapped";
}

// What needs the network's libraries runs in sandcell-net: a run with a network and gc (which
// removes leftover veths and nft rules). `--net none` runs stay in the static binary (above).
TEST(LeanBinary, NetworkRunsAndGcAreHandedToSandcellNet) {
#if !SANDCELL_LEAN_IS_STATIC
  GTEST_SKIP() << "sandcell is linked dynamically here and loads the libraries itself";
#endif
  const std::string by_twin = "needed by " + sandcell_net_binary();
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--rootfs", test_rootfs(), "--net", "allow:example.test",
                                 "--", "/bin/true"},
        std::vector<std::string>{"gc"}}) {
    const CliRun run = run_with_ld_debug(sandcell_binary(), args);
    EXPECT_EQ(run.exit_code, 0) << args[0] << ": " << run.err;
    EXPECT_NE(run.err.find(by_twin), std::string::npos)
        << args[0] << ": " << run.err.substr(0, 2000);
  }
}

// The system calls `sandcell ARGS...` makes between its own execve and the next one (the
// hand-over to a sibling), in order, the execve included; nullopt when it exited first. Traced
// with ptrace, system-call entries only (PTRACE_GET_SYSCALL_INFO).
std::optional<std::vector<long>> calls_before_hand_over(const std::vector<std::string>& args) {
  std::vector<std::string> words = {sandcell_binary()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  const pid_t child = fork();
  if (child == 0) {
    const int null = open("/dev/null", O_RDWR);
    dup2(null, 1);
    dup2(null, 2);
    ptrace(PTRACE_TRACEME, 0, nullptr, nullptr);
    raise(SIGSTOP);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);  // its SIGSTOP
  ptrace(PTRACE_SETOPTIONS, child, nullptr,
         PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL);
  std::vector<long> calls;
  int execs = 0;
  while (true) {
    ptrace(PTRACE_SYSCALL, child, nullptr, nullptr);
    if (waitpid(child, &status, 0) != child || WIFEXITED(status) || WIFSIGNALED(status))
      return std::nullopt;
    if (status >> 8 == (SIGTRAP | (PTRACE_EVENT_EXEC << 8))) {
      if (++execs == 2) break;
      continue;
    }
    if (WSTOPSIG(status) != (SIGTRAP | 0x80)) continue;  // another signal: not passed on
    __ptrace_syscall_info info{};
    if (ptrace(PTRACE_GET_SYSCALL_INFO, child, sizeof info, &info) > 0 &&
        info.op == PTRACE_SYSCALL_INFO_ENTRY && execs == 1)
      calls.push_back(static_cast<long>(info.entry.nr));
  }
  kill(child, SIGKILL);
  waitpid(child, &status, 0);
  return calls;
}

// The static sandcell hands a command line for sandcell-images over from its entry point,
// before glibc starts (cli/early_forward.cpp): one readlink of /proc/self/exe, then the execve.
// The lean commands start glibc and main() as before: `gc` is handed to sandcell-net only after
// main() has parsed it (killed at that execve here, so nothing is collected), and `run --rootfs`
// is not handed over at all.
TEST(LeanBinary, ImageCommandsAreHandedOverBeforeGlibcStarts) {
#if !SANDCELL_LEAN_IS_STATIC
  GTEST_SKIP() << "only the static sandcell has the early entry point";
#endif
  const std::vector<long> early = {SYS_readlink, SYS_execve};
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--version"}, std::vector<std::string>{},
        std::vector<std::string>{"--root", "/nonexistent", "images"},
        std::vector<std::string>{"--root=/nonexistent", "code", "--help"},
        std::vector<std::string>{"run", "sandcell/skill-python", "--", "--rootfs"},
        std::vector<std::string>{"no-such-command"}}) {
    const std::optional<std::vector<long>> calls = calls_before_hand_over(args);
    ASSERT_TRUE(calls.has_value()) << testing::PrintToString(args) << " was not handed over";
    EXPECT_EQ(*calls, early) << testing::PrintToString(args);
  }
  const std::optional<std::vector<long>> gc = calls_before_hand_over({"gc"});
  ASSERT_TRUE(gc.has_value()) << "gc was not handed to sandcell-net";
  EXPECT_GT(gc->size(), 10u) << "gc is handed over after main(): " << testing::PrintToString(*gc);
  EXPECT_EQ(calls_before_hand_over({"run", "--rootfs", test_rootfs(), "--", "/bin/true"}),
            std::nullopt)
      << "run --rootfs runs in sandcell itself";
}

// Installed without its twin, a static sandcell still runs `--net none` and says in one line
// what is missing for the rest, leaving nothing behind.
TEST(LeanBinary, WithoutSandcellNetANetworkRunSaysWhatIsMissing) {
#if !SANDCELL_LEAN_IS_STATIC
  GTEST_SKIP() << "sandcell is linked dynamically here and loads the libraries itself";
#endif
  char dir_template[] = "/tmp/sandcell-alone-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::filesystem::path dir = dir_template;
  std::filesystem::copy_file(sandcell_binary(), dir / "sandcell");
  const std::string alone = (dir / "sandcell").string();
  const CliRun none =
      run_program({alone, "run", "--rootfs", test_rootfs(), "--", "/bin/echo", "ok"});
  EXPECT_EQ(none.exit_code, 0) << none.err;
  EXPECT_EQ(none.out, "ok\n");
  const CliRun allow = run_program(
      {alone, "run", "--rootfs", test_rootfs(), "--net", "allow:example.test", "--", "/bin/true"});
  EXPECT_EQ(allow.exit_code, 125);
  EXPECT_EQ(allow.err, "sandcell: " + (dir / "sandcell-net").string() +
                           ": No such file or directory (runs with a network and gc live in "
                           "sandcell-net, installed next to sandcell)\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sandcell::test
