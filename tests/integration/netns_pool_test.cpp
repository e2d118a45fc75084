// Network namespaces made ahead (runtime/src/netns_pool.hpp): a `--net none` run as root enters
// the one the run before it left, leaves a new one, never hands a used one out again, and
// `sandcell gc` removes them all. Each test has a state root of its own (SANDCELL_STATE), so
// what it counts in the pool is its own runs' doing.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

std::string mountinfo() {
  std::ifstream in("/proc/self/mountinfo");
  return {std::istreambuf_iterator<char>(in), {}};
}

std::string stdout_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

class NetnsPool : public ::testing::Test {
 protected:
  void SetUp() override { fs::create_directories(root_); }
  void TearDown() override {
    gc();
    EXPECT_EQ(mountinfo().find(root_), std::string::npos) << "mounts left under " << root_;
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  CliRun sandcell(const std::vector<std::string>& args) {
    std::vector<std::string> argv{"/usr/bin/env", "SANDCELL_STATE=" + root_, sandcell_binary()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_program(argv);
  }

  CliRun run(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
    std::vector<std::string> args{"run", "--json", "--rootfs", test_rootfs()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return sandcell(args);
  }

  // The sandbox's network namespace as /proc names it ("net:[4026532178]").
  std::string namespace_of_run(const std::vector<std::string>& flags = {}) {
    CliRun r = run(flags, {"readlink", "/proc/self/ns/net"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return r.record.is_object() ? stdout_line(r.record.value("stdout", "")) : "";
  }

  CliRun gc() { return sandcell({"gc"}); }

  std::string pool() const { return root_ + "/netns"; }

  // The pool's ready entries: name -> the namespace mounted there ("net:[N]"), or "" when the
  // entry holds no namespace.
  std::map<std::string, std::string> ready() const {
    std::map<std::string, std::string> entries;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(pool(), ec)) {
      std::string name = entry.path().filename();
      if (name.rfind("ready-", 0) != 0) continue;
      struct stat st {};
      std::string ns = entry.path() / "ns";
      bool mounted = stat(ns.c_str(), &st) == 0 && st.st_ino != 0 &&
                     mountinfo().find(" " + ns + " ") != std::string::npos;
      entries[name] = mounted ? "net:[" + std::to_string(st.st_ino) + "]" : "";
    }
    return entries;
  }

  std::vector<std::string> names_in_pool() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(pool(), ec))
      names.push_back(entry.path().filename());
    return names;
  }

  const std::string root_ = "/run/sandcell-test-netns-pool-" + std::to_string(getpid());
};

TEST_F(NetnsPool, ARunEntersTheNamespaceTheRunBeforeItLeft) {
  std::string first = namespace_of_run();
  auto left = ready();
  ASSERT_EQ(left.size(), 1u) << "the first run leaves one namespace for the next";
  std::string waiting = left.begin()->second;
  ASSERT_FALSE(waiting.empty()) << left.begin()->first << " holds no namespace";
  EXPECT_NE(waiting, first);

  EXPECT_EQ(namespace_of_run(), waiting);
  auto after = ready();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after.begin()->second, waiting) << "a taken namespace went back into the pool";
  EXPECT_EQ(mountinfo().find(waiting), std::string::npos) << "the taken entry is still mounted";
  for (const std::string& name : names_in_pool())
    EXPECT_EQ(name.rfind("ready-", 0), 0u) << name << " left in the pool";
}

TEST_F(NetnsPool, WhatAProgramChangesInItsNamespaceNoLaterRunSees) {
  namespace_of_run();  // fills the pool
  CliRun changed =
      run({"--cap-add", "NET_ADMIN"},
          {"/bin/sh", "-c", "ip addr add 10.7.7.7/32 dev lo && ip link set lo mtu 1280"});
  ASSERT_EQ(changed.exit_code, 0) << changed.out << changed.err;
  for (int i = 0; i < 3; ++i) {
    std::string expected = ready().begin()->second;
    CliRun r = run({}, {"/bin/sh", "-c", "readlink /proc/self/ns/net; ip addr show lo"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::string out = r.record.value("stdout", "");
    EXPECT_EQ(out.rfind(expected + "\n", 0), 0u) << "not the pooled namespace: " << out;
    EXPECT_EQ(out.find("10.7.7.7"), std::string::npos) << out;
    EXPECT_NE(out.find("<LOOPBACK,UP,LOWER_UP> mtu 65536"), std::string::npos) << out;
    EXPECT_NE(out.find("inet 127.0.0.1/8"), std::string::npos) << out;
  }
}

TEST_F(NetnsPool, AnEntryThatHoldsNoNamespaceIsPassedOver) {
  fs::create_directories(pool() + "/ready-1-00000000");
  std::ofstream(pool() + "/ready-1-00000000/ns") << "not a namespace\n";
  fs::create_directories(pool() + "/ready-2-00000000");  // no file at all
  CliRun r = run({}, {"/bin/sh", "-c", "ls /sys/class/net"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.record.value("stdout", ""), "lo\n");
  auto left = ready();
  ASSERT_EQ(left.size(), 1u) << "the stray entries are removed and one real one is made";
  EXPECT_FALSE(left.begin()->second.empty());
  EXPECT_EQ(left.count("ready-1-00000000") + left.count("ready-2-00000000"), 0u);
}

TEST_F(NetnsPool, RunsWithAUserNamespaceMakeTheirOwn) {
  namespace_of_run();
  auto before = ready();
  ASSERT_EQ(before.size(), 1u);
  std::string own = namespace_of_run({"--userns", "auto"});
  EXPECT_NE(own, before.begin()->second);
  EXPECT_EQ(ready(), before) << "a run with a user namespace cannot enter a pooled one";
}

TEST_F(NetnsPool, TurnedOffItIsNeitherUsedNorFilled) {
  namespace_of_run();
  auto before = ready();
  ASSERT_EQ(before.size(), 1u);
  std::vector<std::string> argv{"/usr/bin/env",
                                "SANDCELL_STATE=" + root_,
                                "SANDCELL_NETNS_POOL=0",
                                sandcell_binary(),
                                "run",
                                "--json",
                                "--rootfs",
                                test_rootfs(),
                                "--",
                                "readlink",
                                "/proc/self/ns/net"};
  CliRun off = run_program(argv);
  ASSERT_EQ(off.exit_code, 0) << off.out << off.err;
  EXPECT_NE(stdout_line(off.record.value("stdout", "")), before.begin()->second);
  EXPECT_EQ(ready(), before);
  gc();
  off = run_program(argv);
  ASSERT_EQ(off.exit_code, 0) << off.out << off.err;
  EXPECT_TRUE(names_in_pool().empty()) << "SANDCELL_NETNS_POOL=0 left a namespace";
}

TEST_F(NetnsPool, RunsAtTheSameTimeNeverShareANamespace) {
  for (int round = 0; round < 2; ++round) {
    std::vector<std::future<CliRun>> runs;
    for (int i = 0; i < 8; ++i)
      runs.push_back(std::async(std::launch::async, [this] {
        return run({}, {"/bin/sh", "-c", "readlink /proc/self/ns/net; sleep 0.3"});
      }));
    std::set<std::string> seen;
    for (auto& future : runs) {
      CliRun r = future.get();
      ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
      EXPECT_TRUE(seen.insert(stdout_line(r.record.value("stdout", ""))).second)
          << "two sandboxes alive together in one namespace";
    }
    // Each run adds one only when it found no other: never more than the runs at once.
    EXPECT_GE(ready().size(), 1u);
    EXPECT_LE(ready().size(), 8u);
  }
}

TEST_F(NetnsPool, GcRemovesThePoolAndWhatDeadRunsLeftButNotALiveRunsEntry) {
  namespace_of_run();
  ASSERT_EQ(ready().size(), 1u);
  // A supervisor killed with SIGKILL leaves its taken entry; this test process passes for a live
  // supervisor (run_state.hpp: its executable's name starts with "sandcell").
  const std::string dead = pool() + "/taken-999999999-00000000";
  const std::string live = pool() + "/taken-" + std::to_string(getpid()) + "-00000000";
  for (const std::string& dir : {dead, live}) {
    fs::create_directories(dir);
    std::ofstream(dir + "/ns").close();
    std::string out = shell_output("unshare --net=" + dir + "/ns true");
    ASSERT_EQ(out.rfind("FAILED", 0), std::string::npos) << out;
  }
  CliRun r = gc();
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("taken-999999999-00000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ready-"), std::string::npos) << r.out;
  EXPECT_TRUE(ready().empty());
  EXPECT_FALSE(fs::exists(dead));
  std::vector<std::string> names = names_in_pool();
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(pool() + "/" + names[0], live);
  EXPECT_NE(mountinfo().find(live + "/ns"), std::string::npos);
  shell_output("umount " + live + "/ns");
  fs::remove_all(live);
}

}  // namespace
}  // namespace sandcell::test
