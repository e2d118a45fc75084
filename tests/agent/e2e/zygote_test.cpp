// A skill's zygote (sandcell/agent/zygote.hpp) under attack from the programs forked from it:
// the real executor with python's members forked from its zygote. What PoolE2E checks of every
// pooled run (the cold result, the hostile programs' answers, exhaustion, leftovers) runs again
// in that mode (CTest's agent.e2e.PoolE2E.zygote); here is what only a zygote could get wrong: a
// child reaching the zygote (its process, its ids, its interpreter), siblings sharing ids or
// random state, a zygote that dies, and what a pool with zygotes leaves behind.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "e2e_support.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using agent_service::Executor;

std::unique_ptr<Executor> zygote_executor(int members) {
  return agent_service::make_subprocess_executor(
      {.sandcell_bin = agent_service::sandcell_bin_in(fs::path(sandcell_bin()).parent_path()),
       .root = skill_store(),
       .code_flags = {},
       .pool = {.sizes = {{"python", members}},
                .memory_bytes = 4ull << 30,
                .idle = std::chrono::seconds(600),
                .zygotes = {"python"}}});
}

void wait_for_members(const Executor& e, size_t n) {
  for (int i = 0; i < 1200 && e.pool_ready("python") < n; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(e.pool_ready("python"), n) << "the pool did not fill";
}

bool was_forked(const json& r) {
  return r.contains("report") && r["report"].value("pooled", false) &&
         r["report"].contains("zygote");
}

json run_python(Executor& e, const std::string& code) {
  return e.run({{"skill", "python"}, {"code", code}});
}

// The zygote's directory and its python process (the child of the zygote sandbox's init).
struct ZygoteProcess {
  std::string dir;
  json info;
  pid_t python = 0;
};
std::optional<ZygoteProcess> find_zygote() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(skill_store() + "/zygotes", ec)) {
    std::ifstream in(entry.path() / "zygote.json");
    if (!in) continue;
    ZygoteProcess z{
        .dir = entry.path().string(), .info = json::parse(in, nullptr, false), .python = 0};
    if (!z.info.is_object()) continue;
    const pid_t init = z.info["init"].get<pid_t>();
    std::ifstream children("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) +
                           "/children");
    children >> z.python;
    if (z.python > 0) return z;
  }
  return std::nullopt;
}

std::string status_field(pid_t pid, const std::string& name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(name + ":"))
      return line.substr(line.find_first_not_of(" \t", name.size() + 1));
  return "";
}

// The program cannot name the zygote: no parent it can see, no process of the zygote's in its
// /proc, no signal that reaches past its sandbox; its ids are a slot of the zygote's user
// namespace that is not the zygote's own; the zygote's interpreter, which it runs, is read-only.
TEST(ZygoteE2E, AForkedProgramCannotReachTheZygote) {
  auto pool = zygote_executor(1);
  wait_for_members(*pool, 1);
  std::optional<ZygoteProcess> zygote = find_zygote();
  ASSERT_TRUE(zygote) << "no zygote under " << skill_store() << "/zygotes";
  EXPECT_EQ(status_field(zygote->python, "CapEff"), "0000000000200000")
      << "the zygote keeps CAP_SYS_ADMIN only";
  EXPECT_EQ(status_field(zygote->python, "NoNewPrivs"), "1");

  json r = run_python(*pool,
                      "import os, signal\n"
                      "print(os.getpid(), os.getppid())\n"
                      "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
                      "print(pids, open('/proc/1/cmdline').read().strip('\\0'))\n"
                      "print(open('/proc/self/uid_map').read().split())\n"
                      "for path in ('/proc/self/exe', '/proc/self/root/usr/bin/python3.11'):\n"
                      "    try:\n"
                      "        open(path, 'ab').close()\n"
                      "        print(path, 'opened for writing')\n"
                      "    except OSError as e:\n"
                      "        print(path, e.strerror)\n"
                      "try:\n"
                      "    os.kill(-1, signal.SIGKILL)\n"
                      "except ProcessLookupError:\n"
                      "    pass\n");
  ASSERT_TRUE(was_forked(r)) << r;
  std::istringstream out(r["stdout"].get<std::string>());
  std::string line;
  std::getline(out, line);
  EXPECT_EQ(line, "2 0") << "pid 2 with a parent outside its pid namespace";
  std::getline(out, line);
  EXPECT_EQ(line, "[1, 2] sandcell-init") << "only its own sandbox's processes";
  std::getline(out, line);
  // "0 BASE 65536" in the zygote's ids: BASE is a slot after the zygote's own (0..65535).
  const json map = json::parse(std::regex_replace(line, std::regex("'"), "\""), nullptr, false);
  ASSERT_TRUE(map.is_array() && map.size() == 3) << line;
  EXPECT_EQ(map[0], "0");
  EXPECT_GE(std::stoul(map[1].get<std::string>()), 65536u)
      << "the program's ids are the zygote's own";
  std::getline(out, line);
  EXPECT_TRUE(line == "/proc/self/exe Read-only file system" ||
              line == "/proc/self/exe Permission denied")
      << line;
  std::getline(out, line);
  EXPECT_EQ(line, "/proc/self/root/usr/bin/python3.11 Permission denied");
  // The record's ids are a slot zygote.json lists, none of them the zygote's.
  const json& userns = r["report"]["isolation"]["userns"];
  bool listed = false;
  for (const json& slot : zygote->info["slots"])
    listed = listed || slot["uid_base"] == userns["uid_base"];
  EXPECT_TRUE(listed) << userns << " " << zygote->info;
  EXPECT_NE(status_field(zygote->python, "Uid"), "") << "the zygote survived its child's kill(-1)";
  EXPECT_EQ(r["report"]["zygote"]["shares_with_siblings"],
            json::array({"address_layout", "str_hash_seed"}));
  wait_for_members(*pool, 1);
  json next = run_python(*pool, "print('next')");
  EXPECT_TRUE(was_forked(next)) << next;
  EXPECT_EQ(next["stdout"], "next\n");
}

// Siblings alive at once hold different id slots; each has its own random state (numpy's legacy
// generator and Python's `random` are reseeded by the zygote before each fork: its fork runs no
// at-fork handler), and the same str hash seed, which the record says.
TEST(ZygoteE2E, SiblingsHaveTheirOwnIdsAndRandomStateButShareTheHashSeed) {
  auto pool = zygote_executor(3);
  wait_for_members(*pool, 3);
  std::vector<std::future<json>> replies;
  for (int i = 0; i < 3; ++i)
    replies.push_back(std::async(std::launch::async, [&] {
      return run_python(
          *pool,
          "import numpy, random, time\n"
          "print(numpy.random.randint(1 << 30), random.getrandbits(30), hash('sandcell'))\n"
          "time.sleep(2)\n");
    }));
  std::set<uint64_t> uids;
  std::set<std::string> numpy_draws, python_draws, hashes;
  int forked = 0;
  for (auto& reply : replies) {
    json r = reply.get();
    ASSERT_EQ(r["status"], "ok") << r;
    if (!was_forked(r)) continue;  // one may have run cold (a member not yet replaced)
    ++forked;
    uids.insert(r["report"]["isolation"]["userns"]["uid_base"].get<uint64_t>());
    std::istringstream words(r["stdout"].get<std::string>());
    std::string a, b, c;
    words >> a >> b >> c;
    numpy_draws.insert(a);
    python_draws.insert(b);
    hashes.insert(c);
  }
  ASSERT_GE(forked, 2);
  EXPECT_EQ(uids.size(), static_cast<size_t>(forked))
      << "two siblings alive at once share host ids";
  EXPECT_EQ(numpy_draws.size(), static_cast<size_t>(forked)) << "numpy's random state was shared";
  EXPECT_EQ(python_draws.size(), static_cast<size_t>(forked)) << "random's state was shared";
  EXPECT_EQ(hashes.size(), 1u) << "the hash seed is the zygote's (report.zygote says so)";
}

// A zygote killed: its members' sandboxes, nested in it, end with it; requests meanwhile run cold
// and answer; another zygote starts and its forks serve again.
TEST(ZygoteE2E, AZygoteThatDiesIsReplaced) {
  auto pool = zygote_executor(2);
  wait_for_members(*pool, 2);
  std::optional<ZygoteProcess> first = find_zygote();
  ASSERT_TRUE(first);
  ASSERT_EQ(kill(first->python, SIGKILL), 0);
  json during = run_python(*pool, "print('during')");
  EXPECT_EQ(during["status"], "ok") << during;
  EXPECT_EQ(during["stdout"], "during\n");
  bool forked_again = false;
  for (int i = 0; i < 100 && !forked_again; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (pool->pool_ready("python") == 0) continue;
    json r = run_python(*pool, "print('again')");
    EXPECT_EQ(r["stdout"], "again\n") << r;
    forked_again = was_forked(r);
  }
  EXPECT_TRUE(forked_again) << "no new zygote served";
  std::optional<ZygoteProcess> second = find_zygote();
  ASSERT_TRUE(second);
  EXPECT_NE(second->dir, first->dir);
  EXPECT_FALSE(fs::exists(first->dir)) << "the dead zygote's directory is left";
}

// A zygote's supervisor killed with SIGKILL leaves its directory unheld: the pool starts another
// zygote, and `sandcell gc` removes the dead one's directory (once it is 10 s old: a directory
// is locked right after it is made) and not the live one's.
TEST(ZygoteE2E, AKilledZygoteSupervisorLeavesWhatGcRemoves) {
  auto pool = zygote_executor(1);
  wait_for_members(*pool, 1);
  std::optional<ZygoteProcess> first = find_zygote();
  ASSERT_TRUE(first);
  const pid_t init = first->info["init"].get<pid_t>();
  pid_t supervisor = 0;
  {
    std::ifstream stat("/proc/" + std::to_string(init) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    std::istringstream fields(text.substr(text.rfind(')') + 2));
    std::string state;
    fields >> state >> supervisor;
  }
  ASSERT_GT(supervisor, 0);
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::seconds(11));
  EXPECT_TRUE(fs::exists(first->dir)) << "nothing removed the directory before gc";
  Finished gc = run_sandcell_with_store({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(fs::exists(first->dir)) << gc.out;
  wait_for_members(*pool, 1);
  std::optional<ZygoteProcess> second = find_zygote();
  ASSERT_TRUE(second) << "gc removed the live zygote's directory";
  EXPECT_NE(second->dir, first->dir);
  EXPECT_TRUE(was_forked(run_python(*pool, "print(1)")));
}

// The pool gone: no zygote, member or directory is left.
TEST(ZygoteE2E, APoolWithAZygoteLeavesNothing) {
  {
    auto pool = zygote_executor(2);
    wait_for_members(*pool, 2);
    EXPECT_TRUE(was_forked(run_python(*pool, "print(1)")));
  }
  EXPECT_TRUE(children_of(getpid()).empty());
  std::error_code ec;
  EXPECT_TRUE(fs::is_empty(skill_store() + "/zygotes", ec) ||
              !fs::exists(skill_store() + "/zygotes"))
      << "a zygote's directory is left";
}

}  // namespace
}  // namespace sandcell::test
