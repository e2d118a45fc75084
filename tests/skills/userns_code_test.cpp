// `sandcell code` as root runs each phase with --userns=auto (issue 11): the sandbox's root is an
// unprivileged host id, and /workspace is bound idmapped, so what it writes there is root's on
// the host, as before, and the next call of a session (another id range) finds it its own.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "sandcell/agent/code_result.hpp"
#include "sandcell/base/number.hpp"
#include "skills_support.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;
using UsernsCode = Skills;

constexpr const char* kWrite =
    "read -r inside base count < /proc/self/uid_map; echo \"$inside $base $count\"; id -u\n"
    "mkdir -p /workspace/out; echo written >> /workspace/out/result.txt\n";

// The host id of the sandbox's root, from the uid_map line its program printed.
uint64_t host_root_of(const CliRun& r) {
  const std::string out = r.record["stdout"].get<std::string>();
  const size_t first = out.find(' '), second = out.find(' ', first + 1);
  return parse_number<uint64_t>(out.substr(first + 1, second - first - 1)).value_or(0);
}

TEST_F(UsernsCode, RootIsAnUnprivilegedHostIdAndItsWorkspaceFilesAreCollected) {
  auto r = code("bash", kWrite, {"--session", "ns1"});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  ASSERT_EQ(r.record["status"], "ok") << r.out;
  const auto& userns = r.record["report"]["isolation"]["userns"];
  ASSERT_TRUE(userns.is_object()) << r.record["report"].dump();
  const uint64_t base = userns["uid_base"].get<uint64_t>();
  EXPECT_GE(base, 65536u);  // no id a distribution gives its users or system accounts
  EXPECT_EQ(r.record["stdout"], "0 " + std::to_string(base) + " 65536\n0\n");
  EXPECT_EQ(host_root_of(r), base);
  ASSERT_EQ(r.record["artifacts"].size(), 1u) << r.out;
  EXPECT_EQ(r.record["artifacts"][0]["path"], "/workspace/out/result.txt");
  EXPECT_EQ(agent::base64_decode(r.record["artifacts"][0]["base64"].get<std::string>(), "artifact"),
            "written\n");

  // On the host the file is root's (the bind is idmapped), and the next call of the session,
  // whatever range it gets, appends to it.
  // Between calls the session's workspace is in its disk image: mounted here to look.
  const fs::path session = fs::path(sessions()) / "ns1", look = session / "inspect";
  fs::create_directories(look);
  const std::string mount =
      "mount -o loop,ro " + (session / "disk.img").string() + " " + look.string();
  const fs::path file = look / "workspace/out/result.txt";
  ASSERT_EQ(shell_output(mount), "");
  struct stat st {};
  EXPECT_EQ(stat(file.c_str(), &st), 0);
  shell_output("umount " + look.string());
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  auto again = code("bash", kWrite, {"--session", "ns1"});
  ASSERT_EQ(again.record["status"], "ok") << again.out;
  ASSERT_EQ(shell_output(mount), "");
  EXPECT_EQ(read_text(file), "written\nwritten\n");
  shell_output("umount " + look.string());
}

TEST_F(UsernsCode, UsernsHostOptsOut) {
  auto r = code("bash", kWrite, {"--userns", "host"});
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record["stdout"], "0 0 4294967295\n0\n");
  EXPECT_TRUE(r.record["report"]["isolation"]["userns"].is_null());
  EXPECT_EQ(r.record["artifacts"].size(), 1u) << r.out;
}

// The kernel gives no user namespace to a chrooted process (issue 31). sandcell runs here as
// root in a chroot: a private mount namespace, / bound recursively under a directory, chroot.
// The directory is removed with rmdir, never recursively: the bind of / lives only in the private
// mount namespace, and if it ever showed here, a recursive removal would walk the host's tree.
struct ChrootDir {
  std::string path;
  ChrootDir() {
    char name[] = "/tmp/sc-chroot.XXXXXX";
    if (mkdtemp(name) != nullptr) path = name;
  }
  ~ChrootDir() { rmdir(path.c_str()); }
};

class UsernsChroot : public Skills {
 protected:
  ChrootDir chroot_dir_;
  CliRun code_in_chroot(std::vector<std::string> flags) {
    std::vector<std::string> argv = {"/usr/bin/unshare",
                                     "--mount",
                                     "--propagation",
                                     "private",
                                     "/bin/sh",
                                     "-c",
                                     "mount --rbind / \"$0\" && exec chroot \"$0\" \"$@\"",
                                     chroot_dir_.path,
                                     sandcell_binary(),
                                     "--root",
                                     test_store(),
                                     "code",
                                     "--json",
                                     "--sessions-dir",
                                     sessions(),
                                     "--skill",
                                     "bash"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("-");
    return run_program(argv, "read -r inside base count < /proc/self/uid_map; echo \"$base\"\n");
  }
};

TEST_F(UsernsChroot, TheDefaultFallsBackToHostWithOneWarningLineAndARecordedWarning) {
  auto r = code_in_chroot({});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;
  EXPECT_EQ(r.record["status"], "ok") << r.out;
  EXPECT_EQ(r.record["stdout"], "0\n");  // no user namespace: the host's identity map
  EXPECT_TRUE(r.record["report"]["isolation"]["userns"].is_null());
  // One line on stderr, naming the fallback, the user namespace and the cause.
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_TRUE(r.err.starts_with("sandcell: warning: userns: host, not auto: ")) << r.err;
  EXPECT_NE(r.err.find("user namespace"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("chrooted"), std::string::npos) << r.err;
  const auto& warnings = r.record["report"]["warnings"];
  ASSERT_TRUE(warnings.is_array()) << r.record["report"].dump();
  ASSERT_EQ(warnings.size(), 1u) << warnings.dump();
  EXPECT_NE(warnings[0].get<std::string>().find("chrooted"), std::string::npos) << warnings.dump();
}

TEST_F(UsernsChroot, AnExplicitUsernsAutoFailsNamingTheUserNamespaceTheCauseAndTheFix) {
  auto r = code_in_chroot({"--userns", "auto"});
  EXPECT_EQ(r.exit_code, 125) << r.out << r.err;
  ASSERT_TRUE(r.record.is_object()) << r.out << r.err;  // --json: the failure is in the record
  EXPECT_EQ(r.record["status"], "runtime_error") << r.out;
  const std::string message = r.record["error"]["message"].get<std::string>();
  EXPECT_TRUE(message.starts_with("the kernel refuses this process a user namespace")) << message;
  EXPECT_NE(message.find("chrooted"), std::string::npos) << message;
  EXPECT_NE(message.find("Fix: run sandcell outside the chroot"), std::string::npos) << message;
  EXPECT_NE(message.find("userns host"), std::string::npos) << message;
}

TEST_F(UsernsChroot, OutsideAChrootTheDefaultStaysAutoWithoutWarnings) {
  auto r = code("bash", "echo ok\n");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_TRUE(r.record["report"]["isolation"]["userns"].is_object()) << r.record["report"].dump();
  EXPECT_TRUE(r.record["report"]["warnings"].is_null()) << r.record["report"].dump();
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandcell::test
