// The lean `sandcell` maps the network's C libraries only when a run uses the network
// (network/src/dynamic_libs.hpp): loading them cost 0.9 ms of every `--net none` start. The
// dynamic loader says what it maps (LD_DEBUG=files), both what the executable links (and what
// that links) and what it opens later with dlopen.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

// The network libraries and the libraries only they bring in.
const std::set<std::string> kNetworkLibraries = {
    "libnftables.so.1", "libnftnl.so.11",    "libmnl.so.0",          "libjansson.so.4",
    "libgmp.so.10",     "libxtables.so.12",  "libnl-3.so.200",       "libnl-route-3.so.200",
    "libidn2.so.0",     "libunistring.so.2", "libhttp_parser.so.2.9"};

// `sandcell ARGS...` with the dynamic loader reporting on stderr what it maps.
CliRun run_with_ld_debug(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "LD_DEBUG=files", sandcell_binary()};
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
  const CliRun run = run_program({"/usr/bin/env", "LD_DEBUG=bindings", sandcell_binary(), "run",
                                  "--rootfs", test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string ours = "binding file " + sandcell_binary() + " [0]";
  const size_t start = run.err.find("transferring control");
  ASSERT_NE(start, std::string::npos) << run.err.substr(0, 2000);
  ASSERT_NE(run.err.rfind(ours, start), std::string::npos) << run.err.substr(0, 2000);
  const size_t late = run.err.find(ours, start);
  EXPECT_EQ(late, std::string::npos) << "bound after main(): " << run.err.substr(late, 300);
}

TEST(LeanBinary, NetNoneRun_LoadsNoNetworkLibrary) {
  const CliRun run = run_with_ld_debug({"run", "--rootfs", test_rootfs(), "--", "/bin/true"});
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
  const CliRun run = run_with_ld_debug({"run", "--rootfs", test_rootfs(), "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(libraries_mapped(run), std::set<std::string>{"libc.so.6"}) << run.err;
}

// The other half: a library opened with dlopen shows up too, so the test above would see one.
TEST(LeanBinary, AllowRun_LoadsLibidn2ForTheHostName) {
  const CliRun run = run_with_ld_debug(
      {"run", "--rootfs", test_rootfs(), "--net", "allow:example.test", "--", "/bin/true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto loaded = libraries_mapped(run);
  EXPECT_TRUE(network_libraries_in(loaded).contains("libidn2.so.0")) << run.err;
}

}  // namespace
}  // namespace sandcell::test
