// AppArmor profile templates: rendering, the rules sandcell-default must hold, the AppArmor 3
// downgrade of sandcell-binary, and that both parse with the distribution's apparmor_parser.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "sandcell/apparmor/profile.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::apparmor {
namespace {

const std::map<std::string, std::string> kDefaultValues = {{"name", "sandcell-default"},
                                                           {"sandcell_binary", "sandcell"}};

std::string render_default() {
  return render_profile(load_profile_template("sandcell-default"), kDefaultValues);
}

// The rules of a profile, one per line, comments and indentation dropped, so a rule that only
// appears in a comment does not count. `#include` lines are directives, kept as they are.
std::set<std::string> rules_of(const std::string& profile) {
  std::set<std::string> rules;
  std::istringstream lines(profile);
  for (std::string line; std::getline(lines, line);) {
    line.erase(0, line.find_first_not_of(" \t"));
    if (!line.starts_with("#include")) line.erase(std::min(line.find('#'), line.size()));
    line.erase(line.find_last_not_of(" \t") + 1);
    if (!line.empty()) rules.insert(line);
  }
  return rules;
}

std::string invalid_message(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_TRUE(e.input_error()) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected Error::invalid";
  return {};
}

TEST(AppArmorProfile, Render_FillsEveryPlaceholder) {
  EXPECT_EQ(render_profile("profile {{name}} { signal peer={{name}}, ptrace peer={{b}}, }",
                           {{"name", "sc-1"}, {"b", "sandcell"}}),
            "profile sc-1 { signal peer=sc-1, ptrace peer=sandcell, }");
  EXPECT_EQ(render_profile("no placeholders @{PROC}/{a,b}", {}), "no placeholders @{PROC}/{a,b}");
}

TEST(AppArmorProfile, Render_RejectsUnfilledPlaceholderByName) {
  std::string message = invalid_message([] { render_profile("peer={{sandcell_binary}},", {}); });
  EXPECT_NE(message.find("{{sandcell_binary}}"), std::string::npos) << message;
  EXPECT_NE(message.find("not filled"), std::string::npos) << message;
}

TEST(AppArmorProfile, Render_RejectsUnknownPlaceholderByName) {
  std::string message = invalid_message([] {
    render_profile("profile {{name}} {}", {{"name", "x"}, {"nmae", "y"}});
  });
  EXPECT_NE(message.find("unknown placeholder {{nmae}}"), std::string::npos) << message;
}

TEST(AppArmorProfile, Render_RejectsUnterminatedPlaceholder) {
  std::string message = invalid_message([] {
    render_profile("profile {{name {}", {{"name", "x"}});
  });
  EXPECT_NE(message.find("unterminated"), std::string::npos) << message;
}

TEST(AppArmorProfile, Render_RejectsValuesThatWouldInjectRules) {
  for (const char* value : {"x,\n  mount", "a b", "x}", "*", "", "@{PROC}"}) {
    std::string message = invalid_message([&] { render_profile("{{name}}", {{"name", value}}); });
    EXPECT_NE(message.find("{{name}}"), std::string::npos) << message;
  }
}

TEST(AppArmorProfile, LoadTemplate_RejectsPathsAndMissingNames) {
  invalid_message([] { load_profile_template("../profiles/sandcell-default"); });
  invalid_message([] { load_profile_template(".hidden"); });
  try {
    load_profile_template("no-such-profile");
    ADD_FAILURE() << "expected Error(ENOENT)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code().value(), ENOENT);
  }
}

TEST(AppArmorProfile, Default_RendersWithoutLeftoverPlaceholders) {
  std::string profile = render_default();
  EXPECT_EQ(profile.find("{{"), std::string::npos);
  EXPECT_TRUE(rules_of(profile).contains(
      "profile sandcell-default flags=(attach_disconnected,mediate_deleted) {"));
}

TEST(AppArmorProfile, Default_DeniesMountsProcAndSysWritesAndAfAlg) {
  std::set<std::string> rules = rules_of(render_default());
  for (const char* rule :
       {"deny mount,", "deny umount,", "deny pivot_root,", "deny network alg,", "deny @{PROC}/* w,",
        "deny @{PROC}/sys/[^k]** w,", "deny @{PROC}/sys/kernel/{?,??,[^s][^h][^m]**} w,",
        "deny @{PROC}/{[^1-9],[^1-9][^0-9],[^1-9s][^0-9y][^0-9s],[^1-9][^0-9][^0-9][^0-9]*}/** w,",
        "deny @{PROC}/sysrq-trigger rwklx,", "deny @{PROC}/kcore rwklx,",
        "deny /sys/[^f]*/** wklx,", "deny /sys/f[^s]*/** wklx,", "deny /sys/fs/[^c]*/** wklx,",
        "deny /sys/fs/c[^g]*/** wklx,", "deny /sys/fs/cg[^r]*/** wklx,",
        "deny /sys/firmware/** rwklx,", "deny /sys/kernel/security/** rwklx,",
        "#include if exists <abstractions/base>"})
    EXPECT_TRUE(rules.contains(rule)) << "missing: " << rule;
}

TEST(AppArmorProfile, Default_ConfinesPtraceAndSignalsToTheProfile) {
  std::set<std::string> rules = rules_of(render_default());
  EXPECT_TRUE(rules.contains("ptrace (trace,read,tracedby,readby) peer=sandcell-default,"));
  EXPECT_TRUE(rules.contains("signal (send,receive) peer=sandcell-default,"));
  EXPECT_TRUE(rules.contains("signal (receive) peer=sandcell,"));
  // No other ptrace or mount grant widens what the deny rules and the peer rule leave.
  for (const std::string& rule : rules) {
    if (rule.starts_with("ptrace")) {
      EXPECT_EQ(rule, "ptrace (trace,read,tracedby,readby) peer=sandcell-default,");
    }
    EXPECT_FALSE(rule.starts_with("mount") || rule.starts_with("umount")) << "grants: " << rule;
    // Out of the profile, a program may send one signal only: 64 (kProgramDoneSignal), to the
    // sandbox's init, which runs unconfined or under sandcell's own profile.
    if (rule.starts_with("signal (send") && !rule.ends_with("peer=sandcell-default,")) {
      EXPECT_TRUE(rule == "signal (send) set=(rtmin+32) peer=unconfined," ||
                  rule == "signal (send) set=(rtmin+32) peer=sandcell,")
          << "grants: " << rule;
    }
  }
}

TEST(AppArmorProfile, Binary_AttachesToBothExecutablesUnconfinedWithUserns) {
  std::set<std::string> rules = rules_of(binary_profile("/opt/sandcell/bin/"));
  EXPECT_TRUE(rules.contains(
      "profile sandcell /opt/sandcell/bin/sandcell{,-images,-net,-serve} flags=(unconfined) {"));
  EXPECT_TRUE(rules.contains("userns,"));
  EXPECT_TRUE(rules.contains("#include if exists <local/sandcell>"));
}

TEST(AppArmorProfile, Binary_RefusesDirectoriesThatWouldInjectRules) {
  EXPECT_THROW(binary_profile("relative/bin"), Error);
  EXPECT_THROW(binary_profile("/opt/x, /** rwx"), Error);
  EXPECT_THROW(binary_profile("/opt/{a,b}"), Error);
}

TEST(AppArmorProfile, StripUserns_RemovesExactlyTheUsernsRule) {
  std::string binary = binary_profile("/usr/bin");
  std::string expected = binary;
  expected.erase(expected.find("  userns,\n"), std::string("  userns,\n").size());
  EXPECT_EQ(strip_userns_rule(binary), expected);

  EXPECT_EQ(strip_userns_rule("a {\n  userns,\n  # userns, stays\n  deny userns create,\n"
                              "  audit userns,\n  file,\n}"),
            "a {\n  # userns, stays\n  file,\n}");
  EXPECT_EQ(strip_userns_rule("no rule at all\n"), "no rule at all\n");
}

TEST(AppArmorProfile, ChangeOnexec_RejectsBadNamesWithoutTouchingProc) {
  errno = 0;
  EXPECT_EQ(change_onexec("", -1), -1);
  EXPECT_EQ(errno, EINVAL);
  std::string long_name(2000, 'x');
  EXPECT_EQ(change_onexec(long_name.c_str(), -1), -1);
  EXPECT_EQ(errno, ENAMETOOLONG);
}

TEST(AppArmorProfile, LoadProfile_FailsWithEnosysWithoutAppArmor) {
  struct stat st {};
  if (stat("/sys/kernel/security/apparmor", &st) == 0)
    GTEST_SKIP() << "this kernel has AppArmor; loading is an integration test (needs root)";
  try {
    load_profile(render_default());
    ADD_FAILURE() << "expected Error(ENOSYS)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code().value(), ENOSYS);
    EXPECT_NE(std::string(e.what()).find("no AppArmor"), std::string::npos) << e.what();
  }
}

// --- apparmor_parser: Debian's 3.0.8 must accept what we ship (minus AppArmor 4 syntax) ---

const char* find_parser() {
  for (const char* path : {"/sbin/apparmor_parser", "/usr/sbin/apparmor_parser"})
    if (access(path, X_OK) == 0) return path;
  return nullptr;
}

// Runs `apparmor_parser -QK` (parse and compile only: no kernel, no cache) on profile text.
// Includes resolve against /etc/apparmor.d, which Debian's apparmor package fills.
void expect_parses(const std::string& profile, const std::string& what) {
  const char* parser = find_parser();
  ASSERT_NE(parser, nullptr) << "apparmor_parser not found: install the `apparmor` package "
                                "(apt-get install apparmor) to check the AppArmor profiles parse";
  char path[] = "/tmp/sandcell-apparmor-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  std::ofstream(path) << profile;
  std::string command =
      std::string(parser) + " -QK --base /etc/apparmor.d -I /etc/apparmor.d " + path + " 2>&1";
  std::string output;
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  for (char buf[512]; fgets(buf, sizeof buf, pipe);) output += buf;
  int status = pclose(pipe);
  unlink(path);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << what << ":\n" << output;
}

TEST(AppArmorProfile, Parser_AcceptsRenderedDefault) {
  expect_parses(render_default(), "sandcell-default");
}

TEST(AppArmorProfile, Parser_AcceptsBinaryWithUsernsStripped) {
  expect_parses(strip_userns_rule(binary_profile("/usr/local/bin")),
                "sandcell-binary (userns rule stripped)");
}

}  // namespace
}  // namespace sandcell::apparmor
