// The warm pool end to end (docs/architecture.md, "The warm pool"): the real executor with
// `--pool`-style options against the python skill image. A pooled run gives what a cold one gives
// (output, status, error class, files), is never reused, is timed from its hand-over, ends memory,
// pids and time exhaustion with the cold status; concurrent requests never share a sandbox; a
// killed server leaves nothing `sandcell gc` does not remove; without a pool nothing changes.
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <future>
#include <set>
#include <thread>

#include "e2e_support.hpp"
#include "sandcell/agent_service/executor.hpp"

namespace sandcell::test {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using agent_service::Executor;

std::unique_ptr<Executor> executor(agent_service::PoolOptions pool) {
  return agent_service::make_subprocess_executor(
      {.sandcell_bin = agent_service::sandcell_bin_in(fs::path(sandcell_bin()).parent_path()),
       .root = skill_store(),
       .code_flags = {},
       .pool = std::move(pool)});
}

// With SANDCELL_TEST_POOL_ZYGOTE set (CTest's agent.e2e.PoolE2E.zygote), python's members are
// forks of its zygote (sandcell/agent/zygote.hpp), and every test here holds for them too.
bool zygote_mode() {
  const char* set = getenv("SANDCELL_TEST_POOL_ZYGOTE");
  return set != nullptr && *set != '\0';
}

agent_service::PoolOptions python_pool(int n) {
  agent_service::PoolOptions pool{
      .sizes = {{"python", n}}, .memory_bytes = 4ull << 30, .idle = std::chrono::seconds(600)};
  if (zygote_mode()) pool.zygotes = {"python"};
  return pool;
}

// Waits (bounded) until `n` sandboxes of `skill` are ready.
void wait_ready(const Executor& e, size_t n, const std::string& skill = "python") {
  for (int i = 0; i < 1200 && e.pool_ready(skill) < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_GE(e.pool_ready(skill), n) << "the pool did not fill";
}

bool pooled(const json& result) { return result.contains("report") && result["report"].value("pooled", false); }

// What must be the same, cold or pooled.
json comparable(const json& r) {
  return {{"status", r["status"]}, {"exit_code", r["exit_code"]}, {"stdout", r["stdout"]}, {"stderr", r["stderr"]},
          {"error", r["error"]},   {"files", r["files"]},         {"artifacts", r["artifacts"]}};
}

// One line that names the sandbox (its namespaces, and its init's start time: namespace inodes
// are reused once a sandbox is gone), then whether anything a previous request left is there:
// files in the workspace, the root, /dev/shm, a mark in the interpreter. Leaves all of them.
const char* kIdentity =
    "import builtins, os, time\n"
    "print(os.readlink('/proc/self/ns/pid'), os.readlink('/proc/self/ns/mnt'), os.readlink('/proc/self/ns/net'),\n"
    "      os.readlink('/proc/self/ns/uts'), open('/proc/1/stat').read().split()[21])\n"
    "print(os.path.exists('/workspace/left.txt'), os.path.exists('/tmp/left.txt'), os.path.exists('/dev/shm/left'),\n"
    "      hasattr(builtins, 'left'))\n"
    "open('/workspace/left.txt', 'w').write('x')\n"
    "open('/tmp/left.txt', 'w').write('x')\n"
    "builtins.left = 1\n"
    "try:\n"
    "    open('/dev/shm/left', 'w').write('x')\n"
    "except OSError:\n"
    "    pass\n";

TEST(PoolE2E, PooledRunGivesTheColdResult) {
  auto cold = executor({});
  auto warm = executor(python_pool(2));
  const std::vector<json> requests = {
      {{"skill", "python"}, {"code", "print(1)"}},
      {{"skill", "python"}, {"code", "import sys\nprint('out')\nprint('err', file=sys.stderr)\nsys.exit(3)\n"}},
      {{"skill", "python"}, {"code", "def f():\n    return 1 / 0\n\nf()\n"}},
      {{"skill", "python"}, {"code", "print(\n"}},
      {{"skill", "python"}, {"code", "import sys\nprint(sys.argv, sys.path[0], __name__, __file__, sorted(k for k in globals() if not k.startswith('__')))\n"}},
      // __main__'s own names as a cold run has them (a pooled one lacked __annotations__ once).
      {{"skill", "python"},
       {"code", "print(sorted(globals()), __annotations__, __doc__, __package__, __spec__, __cached__,\n"
                "      type(__loader__).__name__, __loader__.name, __loader__.path, type(__builtins__).__name__)\n"}},
      {{"skill", "python"}, {"code", "import sys\nprint(repr(sys.stdin.read()))\n"}, {"stdin", "line one\nline two\n"}},
      {{"skill", "python"}, {"code", "import sys\nprint(repr(sys.stdin.read()))\n"}},
      {{"skill", "python"},
       {"code", "import os\nos.makedirs('out', exist_ok=True)\nopen('out/r.txt', 'w').write(open('in.txt').read().upper())\n"},
       {"files", json::array({{{"path", "in.txt"}, {"content_base64", "aGVsbG8="}}})},
       {"get", json::array({"out/r.txt"})}},
      {{"skill", "python"}, {"code", "import numpy as np\nprint(np.arange(10).sum())\n"}},
      // The skill's env (BLAS threads for the CPU limit) was the prepared interpreter's too.
      {{"skill", "python"}, {"code", "import os\nprint(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n"}},
      // Still running when the limit fires, so both are killed (137): a program that exits on its
      // own first keeps its exit code, and which comes first would be a race (seen under -j2).
      {{"skill", "python"}, {"code", "import sys, time\nprint('x' * 100, flush=True)\ntime.sleep(60)\n"}, {"output_limit", "10"}},
      // The pooled interpreter's exit (pool_boot.py) as Python's own: the SystemExit message
      // before the non-daemon threads and atexit, an unclosed file flushed, unflushed output kept.
      {{"skill", "python"},
       {"code", "import atexit, os, sys, threading, time\natexit.register(lambda: print('atexit ran'))\n"
                "os.makedirs('out', exist_ok=True)\nlog = open('out/unclosed.txt', 'w')\nlog.write('flushed at exit')\n"
                "def late():\n    time.sleep(0.2)\n    print('thread done')\n"
                "threading.Thread(target=late).start()\nsys.stdout.write('no newline ')\nsys.exit('bye')\n"}},
      {{"skill", "python"},
       {"code", "import atexit, sys\natexit.register(lambda: print('after', file=sys.stderr))\nraise KeyboardInterrupt\n"}},
      {{"skill", "python"}, {"code", "import sys\nsys.stdout.close()\nsys.exit(256)\n"}},
  };
  for (const json& request : requests) {
    wait_ready(*warm, 1);
    json a = cold->run(request);
    json b = warm->run(request);
    EXPECT_FALSE(pooled(a)) << a;
    EXPECT_FALSE(a["report"].contains("pool_wait_ms")) << a;
    EXPECT_TRUE(pooled(b)) << request << "\n" << b;
    EXPECT_TRUE(b["report"]["pool_wait_ms"].is_number()) << b;
    EXPECT_EQ(comparable(a), comparable(b)) << request;
    EXPECT_EQ(a["report"]["limits"], b["report"]["limits"]) << request;
  }
}

// bash's bootstrap (pool_boot.sh) execs `bash /workspace/main.sh` after the go byte: the same
// $0, SHLVL, environment, process tree, stdin, exit status and signal as a cold run.
TEST(PoolE2E, PooledBashGivesTheColdResult) {
  auto cold = executor({});
  auto warm = executor({.sizes = {{"bash", 1}}, .memory_bytes = 1ull << 30, .idle = std::chrono::seconds(600)});
  const std::vector<json> requests = {
      {{"skill", "bash"}, {"code", "echo hi"}},
      {{"skill", "bash"}, {"code", "echo \"$0 $# $SHLVL [$_]\"; env | sort; ps -o pid,args"}},
      {{"skill", "bash"}, {"code", "cat; echo done"}, {"stdin", "line one\nline two"}},
      {{"skill", "bash"}, {"code", "read -r x || echo eof"}},
      {{"skill", "bash"}, {"code", "echo err >&2; exit 7"}},
      {{"skill", "bash"}, {"code", "kill -INT $$"}},
      {{"skill", "bash"}, {"code", "mkdir -p out && printf 'a,b\\n' > out/t.csv"}},
  };
  for (const json& request : requests) {
    wait_ready(*warm, 1, "bash");
    json a = cold->run(request);
    json b = warm->run(request);
    EXPECT_TRUE(pooled(b)) << request << "\n" << b;
    EXPECT_EQ(comparable(a), comparable(b)) << request;
  }
}

// node's bootstrap is loaded by --require before main.js, which node then runs as its main
// module: the same argv, execArgv, module cache, stack frames under an uncaught error, stdin,
// exit codes, signals and workspace as `node /workspace/main.js`; the bootstrap's file is gone.
TEST(PoolE2E, PooledNodeGivesTheColdResult) {
  auto cold = executor({});
  auto warm = executor({.sizes = {{"node", 1}}, .memory_bytes = 1ull << 30, .idle = std::chrono::seconds(600)});
  const std::vector<json> requests = {
      {{"skill", "node"}, {"code", "console.log(1)"}},
      {{"skill", "node"},
       {"code",
        "const fs = require('fs');\n"
        "console.log(process.argv, process.execArgv, Object.keys(require.cache), require.main === module,\n"
        "            module.parent, fs.readdirSync('/workspace').sort(), fs.readdirSync('/workspace/.sandcell'),\n"
        "            process.title, process.ppid, Object.keys(process.env).sort())"}},
      {{"skill", "node"}, {"code", "function f(o) {\n  return o.x.y;\n}\nf({});\n"}},
      {{"skill", "node"}, {"code", "Promise.reject(new Error('nope'));"}},
      {{"skill", "node"},
       {"code", "let s = '';\nprocess.stdin.on('data', d => s += d);\nprocess.stdin.on('end', () => { console.log(JSON.stringify(s)); process.exitCode = 4; });"},
       {"stdin", "line one\nline two"}},
      {{"skill", "node"}, {"code", "process.stdin.resume(); process.stdin.on('end', () => console.log('eof'));"}},
      {{"skill", "node"}, {"code", "console.error('err'); process.exit(7);"}},
      {{"skill", "node"}, {"code", "process.kill(process.pid, 'SIGINT');"}},
      {{"skill", "node"}, {"code", "require('fs').mkdirSync('out'); require('fs').writeFileSync('out/t.csv', 'a,b\\n');"}},
      {{"skill", "node"}, {"code", "console.log(require('child_process').execFileSync(process.execPath, ['-p', 'process.execArgv.length + \" \" + process.argv.length']).toString())"}},
  };
  for (const json& request : requests) {
    wait_ready(*warm, 1, "node");
    json a = cold->run(request);
    json b = warm->run(request);
    EXPECT_TRUE(pooled(b)) << request << "\n" << b;
    EXPECT_EQ(comparable(a), comparable(b)) << request;
  }
}

TEST(PoolE2E, APooledSandboxServesOneRequestAndSeesNothingOfAnother) {
  auto warm = executor(python_pool(2));
  std::set<std::string> seen;
  for (int i = 0; i < 3; ++i) {
    wait_ready(*warm, 1);
    json r = warm->run({{"skill", "python"}, {"code", kIdentity}});
    ASSERT_EQ(r["status"], "ok") << r;
    ASSERT_TRUE(pooled(r)) << r;
    std::string out = r["stdout"];
    std::string first = out.substr(0, out.find('\n'));
    EXPECT_TRUE(seen.insert(first).second) << "namespaces or cgroup seen twice: " << first;
    EXPECT_EQ(out.substr(out.find('\n') + 1), "False False False False\n") << "a previous request's files are visible";
  }
}

// The hostile programs of tests/hostile/python through a prepared sandbox: what the kernel
// answered them (their stdout), the status, the error class and the denied syscalls are the cold
// run's. (Those that need limits of their own run cold by design; the pool's own exhaustion
// cases are in ExhaustionInAPooledSandboxHasTheColdStatus.)
TEST(PoolE2E, HostilePythonProgramsGetTheColdAnswers) {
  auto cold = executor({});
  auto warm = executor(python_pool(1));
  auto hostile = [](const std::string& file, const std::string& preamble = "") {
    std::ifstream in(fs::path(SANDCELL_HOSTILE_PYTHON_DIR) / file);
    return preamble + std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  std::vector<json> requests;
  // All of tests/hostile/python's syscalls and socket families (python_hostile_test.cpp).
  for (const char* name : {"unshare", "clone", "setns", "mount", "fsopen", "pivot_root", "chroot", "keyctl", "add_key",
                           "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "ptrace", "process_vm_readv",
                           "open_by_handle_at", "kexec_load", "init_module"})
    requests.push_back({{"skill", "python"}, {"code", hostile("denied_syscall.py", "NAME = \"" + std::string(name) + "\"\n")}});
  for (const char* kind : {"packet", "raw", "netlink_audit", "vsock", "alg"})
    requests.push_back({{"skill", "python"}, {"code", hostile("denied_socket.py", "NAME = \"" + std::string(kind) + "\"\n")}});
  for (const char* file : {"kernel_knobs.py", "masked_files.py", "overwrite_exe.py", "inherited_fds.py",
                           "kill_everything.py", "sethostname.py", "huge_exception.py"})
    requests.push_back({{"skill", "python"}, {"code", hostile(file)}});
  requests.push_back({{"skill", "python"}, {"code", hostile("output_flood.py")}, {"output_limit", "64k"}});
  requests.push_back({{"skill", "python"}, {"code", hostile("cpu_spin.py")}, {"cpu_time", 1}});
  for (const json& request : requests) {
    ASSERT_FALSE(request["code"].get<std::string>().empty());
    wait_ready(*warm, 1);
    json a = cold->run(request);
    json b = warm->run(request);
    ASSERT_TRUE(pooled(b)) << b;
    const std::string what = request["code"].get<std::string>().substr(0, 60);
    EXPECT_EQ(a["status"], b["status"]) << what;
    EXPECT_EQ(a["exit_code"], b["exit_code"]) << what;
    if (zygote_mode() && what.find("CVE-2019-5736") != std::string::npos) {
      // A zygote's child runs the zygote's interpreter, from the zygote's read-only root: its
      // /proc/self/exe is refused with EROFS (cold: ETXTBSY), and the sandbox's own copy of the
      // interpreter, not running there, by Landlock (EACCES). Refused either way.
      EXPECT_EQ(b["stdout"],
                "/proc/self/exe EROFS\n/proc/1/exe EACCES\n/usr/bin/python3.11 EACCES\n")
          << b;
      continue;
    }
    EXPECT_EQ(a["stdout"].get<std::string>().size(), b["stdout"].get<std::string>().size()) << what;
    if (a["stdout"].get<std::string>().size() < 4096) {
      EXPECT_EQ(a["stdout"], b["stdout"]) << what;
    }
    EXPECT_EQ(a["error"].is_object() ? a["error"]["class"] : json(), b["error"].is_object() ? b["error"]["class"] : json()) << what;
    EXPECT_EQ(a["report"]["events"]["denied_syscalls"], b["report"]["events"]["denied_syscalls"]) << what;
    for (const char* field : {"seccomp", "lsm", "namespaces", "capabilities", "no_new_privs", "network", "cgroup"})
      EXPECT_EQ(a["report"]["isolation"][field], b["report"]["isolation"][field]) << what << " " << field;
  }
}

TEST(PoolE2E, ConcurrentRequestsNeverShareASandbox) {
  auto warm = executor(python_pool(3));
  wait_ready(*warm, 3);
  std::vector<std::future<json>> replies;
  for (int i = 0; i < 6; ++i)  // more than the pool holds: the rest run cold
    replies.push_back(std::async(std::launch::async, [&] {
      // Alive at the same time, so that even the namespace inodes must differ.
      return warm->run({{"skill", "python"}, {"code", std::string(kIdentity) + "time.sleep(3)\n"}});
    }));
  std::set<std::string> seen;
  int n_pooled = 0;
  for (auto& reply : replies) {
    json r = reply.get();
    ASSERT_EQ(r["status"], "ok") << r;
    n_pooled += pooled(r);
    std::string out = r["stdout"];
    EXPECT_TRUE(seen.insert(out.substr(0, out.find('\n'))).second) << out;
    EXPECT_EQ(out.substr(out.find('\n') + 1), "False False False False\n");
  }
  EXPECT_GE(n_pooled, 1);
  EXPECT_LE(n_pooled, 6);
}

TEST(PoolE2E, ExhaustionInAPooledSandboxHasTheColdStatus) {
  auto cold = executor({});
  auto warm = executor(python_pool(1));
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"skill", "python"}, {"code", "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"}}, "oom"},
      {{{"skill", "python"}, {"code", "import os, time\nfor _ in range(1000):\n    if os.fork() == 0:\n        time.sleep(30)\n        os._exit(0)\n"}}, ""},
      {{{"skill", "python"}, {"code", "while True:\n    pass\n"}, {"timeout", 1}}, "timeout_wall"},
      {{{"skill", "python"}, {"code", "while True:\n    pass\n"}, {"cpu_time", 1}, {"timeout", 20}}, "timeout_cpu"},
  };
  for (const auto& [request, status] : cases) {
    wait_ready(*warm, 1);
    json a = cold->run(request);
    json b = warm->run(request);
    ASSERT_TRUE(pooled(b)) << b;
    if (!status.empty()) {
      EXPECT_EQ(a["status"], status) << a;
    }
    EXPECT_EQ(a["status"], b["status"]) << request << "\ncold: " << a << "\npooled: " << b;
    EXPECT_EQ(a["report"]["limits"], b["report"]["limits"]);
  }
}

// Streaming (serve's "stream": true, MCP's progress): the same events and result as cold.
TEST(PoolE2E, AStreamedPooledRunGivesTheColdEventsAndResult) {
  auto cold = executor({});
  auto warm = executor(python_pool(1));
  const json request{{"skill", "python"},
                     {"code", "import sys\nfor i in range(3):\n    print(i, flush=True)\n    print(-i, file=sys.stderr, flush=True)\n"}};
  auto streamed = [&](Executor& e) {
    std::string out, err;
    json result = e.run_streaming(request, [&](std::string_view stream, std::string_view data) {
      (stream == "stdout" ? out : err).append(data);
    });
    return std::tuple{result, out, err};
  };
  wait_ready(*warm, 1);
  auto [a, a_out, a_err] = streamed(*cold);
  auto [b, b_out, b_err] = streamed(*warm);
  EXPECT_TRUE(pooled(b)) << b;
  EXPECT_EQ(a_out, "0\n1\n2\n");
  EXPECT_EQ(a_out, b_out);
  EXPECT_EQ(a_err, b_err);
  EXPECT_EQ(comparable(a), comparable(b));
}

// Cancelling a pooled run kills its sandbox and says so, as cold (CancelE2E); as a subreaper this
// test would inherit any process of the run that outlived its member.
TEST(PoolE2E, StoppingAPooledRunKillsItsSandbox) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  {
    auto warm = executor(python_pool(1));
    wait_ready(*warm, 1);
    std::stop_source stop;
    std::string out;
    json result = warm->run_streaming(
        {{"skill", "python"}, {"code", "import time\nprint('started', flush=True)\ntime.sleep(600)\nprint('not reached')\n"},
         {"timeout", 900}},
        [&](std::string_view stream, std::string_view data) {
          if (stream == "stdout") out.append(data);
          if (out.find("started\n") != std::string::npos) stop.request_stop();
        },
        stop.get_token());
    EXPECT_EQ(out, "started\n");
    EXPECT_TRUE(pooled(result)) << result;
    EXPECT_NE(result.value("status", ""), "ok") << result;
    EXPECT_NE(result.dump().find("interrupted"), std::string::npos) << result;
  }  // the pool's own members are cancelled and reaped here
  for (int i = 0; i < 100 && !children_of(getpid()).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(children_of(getpid()).empty()) << "a process of the pool outlived it";
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

// The cpu.shares (v1) or cpu.weight (v2) file of every run's cgroup, with its value.
std::map<std::string, std::string> cpu_share_files() {
  std::map<std::string, std::string> found;
  std::error_code ec;
  for (const char* root : {"/sys/fs/cgroup/cpu/sandcell", "/sys/fs/cgroup/cpu,cpuacct/sandcell", "/sys/fs/cgroup/sandcell"})
    for (const auto& e : fs::directory_iterator(root, ec))
      for (const char* name : {"/cpu.shares", "/cpu.weight"}) {
        std::ifstream in(e.path().string() + name);
        std::string value;
        if (in >> value) found[e.path().string() + name] = value;
      }
  return found;
}

// A prepared sandbox yields the CPU to running requests until its hand-over, then has the
// default share a cold run has.
TEST(PoolE2E, APreparedSandboxHasALowCpuShareUntilItsHandOver) {
  auto warm = executor(python_pool(1));
  wait_ready(*warm, 1);
  std::vector<std::string> low;
  for (const auto& [file, value] : cpu_share_files())
    if (value == "16" || value == "1") low.push_back(file);
  ASSERT_EQ(low.size(), 1u) << "the prepared sandbox's cgroup";
  auto reply = std::async(std::launch::async, [&] {
    return warm->run({{"skill", "python"}, {"code", "import time\nprint('x', flush=True)\ntime.sleep(3)\n"}});
  });
  std::string during;
  for (int i = 0; i < 100 && during != "1024" && during != "100"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::ifstream in(low[0]);
    in >> during;
  }
  EXPECT_TRUE(during == "1024" || during == "100") << low[0] << ": " << during;
  json r = reply.get();
  EXPECT_TRUE(pooled(r)) << r;
}

// The wall deadline starts at the hand-over, not when the sandbox was prepared.
TEST(PoolE2E, LimitsCountFromTheHandOver) {
  auto warm = executor(python_pool(1));
  wait_ready(*warm, 1);
  std::this_thread::sleep_for(std::chrono::seconds(3));
  json r = warm->run({{"skill", "python"}, {"code", "import time\ntime.sleep(1)\nprint('done')\n"}, {"timeout", 2}});
  ASSERT_TRUE(pooled(r)) << r;
  EXPECT_EQ(r["status"], "ok") << r;
  EXPECT_EQ(r["stdout"], "done\n");
  EXPECT_GE(r["report"]["pool_wait_ms"].get<uint64_t>(), 2000u);  // it waited, ready, that long
  EXPECT_LT(r["report"]["cpu_ms"].get<uint64_t>(), 1000u);  // not the interpreter's start and numpy's import
}

// What the pool cannot do exactly as cold runs cold, unchanged.
TEST(PoolE2E, RequestsAPreparedSandboxCannotServeRunCold) {
  auto warm = executor(python_pool(1));
  for (const json& request : {json{{"skill", "python"}, {"code", "import os\nprint(os.environ.get('A'))"}, {"env", {"A=1"}}},
                              json{{"skill", "python"}, {"code", "print(2)"}, {"memory", "256m"}},
                              json{{"skill", "py"}, {"code", "print(3)"}},
                              json{{"skill", "bash"}, {"code", "echo 4"}}}) {
    wait_ready(*warm, 1);
    json r = warm->run(request);
    EXPECT_EQ(r["status"], "ok") << r;
    EXPECT_FALSE(pooled(r)) << request;
  }
  EXPECT_EQ(warm->pool_ready("python"), 1u);  // none was used up
}

// --pool-memory below what one python sandbox holds: the first starts (no estimate yet) and says
// its memory; no second starts beside it, however long the pool waits, and once that one is
// taken none replaces it (its estimate alone passes the bound): requests run cold and the pool's
// memory stays at zero. A pool cannot be drained into more memory than it is given.
TEST(PoolE2E, ThePoolMemoryBoundCapsThePreparedSandboxes) {
  auto warm = executor({.sizes = {{"python", 4}}, .memory_bytes = 1, .idle = std::chrono::seconds(600)});
  wait_ready(*warm, 1);
  for (int i = 0; i < 6; ++i) {  // several start times (one start at a time, ~0.5-2 s each)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(warm->pool_ready("python"), 1u);
    EXPECT_EQ(children_of(getpid()).size(), 1u) << "a second prepared sandbox started";
  }
  json first = warm->run({{"skill", "python"}, {"code", "print(1)"}});
  EXPECT_TRUE(pooled(first)) << first;
  for (int i = 0; i < 2; ++i) {
    json r = warm->run({{"skill", "python"}, {"code", "print(2)"}});
    EXPECT_EQ(r["status"], "ok") << r;
    EXPECT_FALSE(pooled(r)) << "a sandbox was prepared past the memory bound: " << r;
  }
  for (int i = 0; i < 100 && !children_of(getpid()).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_TRUE(children_of(getpid()).empty()) << "a prepared sandbox past the bound";
  EXPECT_EQ(warm->pool_ready("python"), 0u);
}

TEST(PoolE2E, WithoutPoolNothingIsPreparedAndTheRecordIsUnchanged) {
  auto cold = executor({});
  json r = cold->run({{"skill", "python"}, {"code", "print(1)"}});
  EXPECT_EQ(r["status"], "ok");
  EXPECT_FALSE(r["report"].contains("pooled"));
  EXPECT_EQ(cold->pool_ready("python"), 0u);
  EXPECT_TRUE(children_of(getpid()).empty());
}

std::vector<std::string> sandcell_cgroups() {
  std::vector<std::string> found;
  std::error_code ec;
  for (const char* root : {"/sys/fs/cgroup/sandcell", "/sys/fs/cgroup/memory/sandcell", "/sys/fs/cgroup/pids/sandcell",
                           "/sys/fs/cgroup/unified/sandcell"})
    for (const auto& e : fs::directory_iterator(root, ec))
      if (e.is_directory()) found.push_back(e.path().string());
  return found;
}

std::vector<std::string> code_run_dirs() {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(skill_store() + "/code-runs", ec)) found.push_back(e.path().string());
  return found;
}

// SIGKILL the server with prepared sandboxes: they cancel (their stdin closes) or, killed too,
// leave what `sandcell gc` removes.
TEST(PoolE2E, AKilledServerLeavesNothingGcDoesNotRemove) {
  const int port = free_tcp_port();
  std::vector<std::string> argv{sandcell_bin(), "--root",   skill_store(),
                                "serve",        "--listen", "127.0.0.1:" + std::to_string(port),
                                "--token",      "t",        "--pool",
                                "python=2"};
  if (zygote_mode()) argv.push_back("--pool-zygote");  // the zygote is one of the server's children
  auto server = std::make_unique<Background>(argv);
  httplib::Client client("127.0.0.1", port);
  client.set_bearer_token_auth("t");
  client.set_read_timeout(120, 0);
  bool was_pooled = false;
  for (int i = 0; i < 200 && !was_pooled; ++i) {
    auto res = client.Post("/v1/run", json{{"skill", "python"}, {"code", "print(1)"}}.dump(), "application/json");
    if (res && res->status == 200) was_pooled = pooled(json::parse(res->body));
    if (!was_pooled) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(was_pooled) << server->stderr_text();
  for (int i = 0; i < 100 && children_of(server->pid()).size() < 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<pid_t> members = children_of(server->pid());
  ASSERT_FALSE(members.empty());
  server->signal_and_wait(SIGKILL);
  // Orphaned members: their stdin is closed, they cancel and exit; bounded wait.
  for (int i = 0; i < 300; ++i) {
    bool any = false;
    for (pid_t m : members) any = any || kill(m, 0) == 0;
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (pid_t m : members) EXPECT_NE(kill(m, 0), 0) << "member " << m << " still running";
  Finished gc = run_sandcell_with_store({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  // Runs are named <supervisor pid>-<id>: the members' (other sandboxes on the host are not ours).
  for (const std::string& cgroup : sandcell_cgroups())
    for (pid_t m : members)
      EXPECT_NE(fs::path(cgroup).filename().string().rfind(std::to_string(m) + "-", 0), 0u) << "left behind: " << cgroup;
  for (const std::string& dir : code_run_dirs()) {
    pid_t owner = static_cast<pid_t>(std::atol(fs::path(dir).filename().c_str()));
    EXPECT_FALSE(owner > 0 && kill(owner, 0) != 0) << "left behind: " << dir;
  }
  // A zygote's supervisor, orphaned too, ends its zygote and removes its directory.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(skill_store() + "/zygotes", ec))
    ADD_FAILURE() << "left behind: " << entry.path();
}

}  // namespace
}  // namespace sandcell::test
