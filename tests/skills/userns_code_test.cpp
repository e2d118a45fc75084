// `sandcell code` as root runs each phase with --userns=auto (issue 11): the sandbox's root is an
// unprivileged host id, and /workspace is bound idmapped, so what it writes there is root's on
// the host, as before, and the next call of a session (another id range) finds it its own.
#include <sys/stat.h>

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

}  // namespace
}  // namespace sandcell::test
