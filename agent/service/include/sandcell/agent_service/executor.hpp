#pragma once
// The seam between the agent layer and the code runner. One call runs one code request of the
// `sandcell code --request-json` contract and returns its result object; the real executor
// spawns that command per call, tests substitute their own.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

namespace sandcell::agent_service {

using Json = nlohmann::json;

// Called with "stdout" or "stderr" and a chunk of that stream while a streamed run is going.
using OutputSink = std::function<void(std::string_view stream, std::string_view data)>;

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one request ({"skill"|"language", "code", "session", "timeout", "files", "get", ...})
  // and returns the result ({"stdout", "stderr", "exit_code", "status", "report", "artifacts",
  // "error", "files"}). A request the runner refused comes back as
  // {"error": {"class": "sandcell", "message": ...}}; throws only when the runner itself could
  // not be started or answered garbage.
  // `stop` cancels the run: the runner is interrupted, which kills the sandbox and everything in
  // it, and the result says it was interrupted.
  virtual Json run(const Json& request, std::stop_token stop = {}) = 0;
  // The same, passing output to `sink` as it is produced.
  virtual Json run_streaming(const Json& request, const OutputSink& sink, std::stop_token stop = {}) = 0;
  virtual Json list_skills() = 0;
  virtual Json list_sessions() = 0;
  virtual void remove_session(const std::string& id) = 0;
  // The warm pool's prepared sandboxes of `skill` ready now (0 without a pool).
  virtual size_t pool_ready(const std::string& skill) const {
    (void)skill;
    return 0;
  }
};

// The warm pool (docs/architecture.md, "The warm pool"); no sizes: off, every request cold.
struct PoolOptions {
  std::map<std::string, int> sizes{};  // skill, as requests name it → prepared sandboxes
  uint64_t memory_bytes = 1ull << 30;  // the prepared sandboxes' memory together
  std::chrono::seconds idle{600};      // one prepared longer ago is replaced
  // The skills whose members are forks of the skill's zygote (sandcell/agent/zygote.hpp): one
  // interpreter per skill with the preloads imported, started before the members; the others
  // start an interpreter per member.
  std::set<std::string> zygotes{};
};
// "python=4,node=1" (`--pool`); throws Error::invalid.
std::map<std::string, int> parse_pool_sizes(const std::string& text);

struct SubprocessExecutorOptions {
  std::string sandcell_bin{};  // the `sandcell` executable to spawn
  std::string root{};          // passed as `--root` when not empty
  // After `code --request-json -`: the operator's ceilings (`--max-memory 2g`...), which no
  // request can lift, and the bounds on sessions (`--sessions-max 64`...).
  std::vector<std::string> code_flags{};
  // The operator's `--disk`: the workspace bound of a request that asks for none ("disk").
  std::optional<std::string> default_disk{};
  PoolOptions pool{};
};

// $SANDCELL_BIN, else sandcell_bin_in() the running executable's directory.
std::string default_sandcell_bin();
// DIR/sandcell-images when it is executable, else DIR/sandcell. Every verb an executor runs
// (code, skills, sessions) lives in sandcell-images; asked through the lean `sandcell`, each
// execution would pay one more exec (a static glibc start, ~1 ms here) to be handed to it.
std::string sandcell_bin_in(const std::filesystem::path& dir);

std::unique_ptr<Executor> make_subprocess_executor(SubprocessExecutorOptions options);

// True when a result is the runner's refusal of the request itself (class "sandcell").
bool is_request_error(const Json& result);

}  // namespace sandcell::agent_service
