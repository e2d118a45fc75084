// The real executor: one `sandcell code --request-json -` process per execution.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "executor/child_process.hpp"
#include "executor/warm_pool.hpp"
#include "sandcell/agent_service/executor.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

// The runner's stderr, reduced to its message for an error line.
std::string first_line(const std::string& text) {
  auto end = text.find('\n');
  std::string line = text.substr(0, end);
  const std::string prefix = "sandcell: ";
  return line.rfind(prefix, 0) == 0 ? line.substr(prefix.size()) : line;
}

Json parse_json_answer(const std::string& text, const ChildOutcome& outcome, const std::string& what) {
  Json parsed = parse_bounded_json_or_discarded(text);
  if (!parsed.is_discarded() && parsed.is_object()) return parsed;
  if (outcome.exit_code == 125 || outcome.exit_code != 0) {
    return Json{{"error", {{"class", "sandcell"},
                           {"message", outcome.stderr_text.empty() ? what + " failed with exit code " +
                                                                         std::to_string(outcome.exit_code)
                                                                   : first_line(outcome.stderr_text)}}}};
  }
  throw Error(EPROTO, what + " printed no JSON object (exit " + std::to_string(outcome.exit_code) + ")");
}

// What only a cold run can do as asked (docs/architecture.md, "The warm pool"): a session, packages,
// a network or environment of its own, memory, pids, cpus or disk limits of its own. The member
// checks again, exactly, and refuses what this lets through by mistake.
const std::set<std::string> kPoolableFields = {"skill", "language", "code", "timeout", "cpu_time",
                                               "output_limit", "stdin", "files", "get", "session"};

std::optional<std::string> pooled_skill(const Json& request) {
  if (!request.is_object()) return std::nullopt;
  for (const auto& [key, value] : request.items())
    if (!kPoolableFields.count(key) || (key == "session" && !value.is_null())) return std::nullopt;
  const Json& skill = request.contains("skill") ? request["skill"] : request.value("language", Json());
  if (!skill.is_string()) return std::nullopt;
  return skill.get<std::string>();
}

// A member's answer that nothing ran: the request goes cold.
bool pool_declined(const Json& answer) {
  return answer.is_object() && (answer.contains("pool_refused") || answer.contains("pool_failed"));
}

class SubprocessExecutor final : public Executor {
 public:
  explicit SubprocessExecutor(SubprocessExecutorOptions options) : options_(std::move(options)) {
    if (!options_.pool.sizes.empty())
      pool_.emplace(
          options_.pool,
          [this](const std::string& skill, const std::string& zygote) {
            std::vector<std::string> args = argv({"code", "--pool-member", skill});
            if (!zygote.empty()) args.insert(args.end(), {"--zygote", zygote});
            args.insert(args.end(), options_.code_flags.begin(), options_.code_flags.end());
            return args;
          },
          [this](const std::string& skill, uint32_t slots) {
            std::vector<std::string> args =
                argv({"code", "--pool-zygote", skill, "--zygote-slots", std::to_string(slots)});
            args.insert(args.end(), options_.code_flags.begin(), options_.code_flags.end());
            return args;
          });
  }

  Json run(const Json& asked, std::stop_token stop) override {
    const Json request = with_defaults(asked);
    std::optional<WarmPool::ColdRun> cold_run;
    if (std::optional<StartedChild> member = take_member(request, cold_run)) {
      std::string out;
      Json answer;
      const LeaveExit leave{.answered = [&] {
                              answer = parse_bounded_json_or_discarded(out);
                              return answer.is_object();
                            },
                            .reap = leave_to_pool()};
      ChildOutcome outcome = finish_child(std::move(*member), Json{{"request", request}, {"stream", false}}.dump(),
                                          [&](std::string_view chunk) { out.append(chunk); }, stop, leave);
      if (answer.is_null()) answer = parse_bounded_json_or_discarded(out);
      // Only a request the member says it did not run goes cold: it may not run twice.
      if (!pool_declined(answer)) return parse_json_answer(out, outcome, "sandcell code --pool-member");
      if (stop.stop_requested()) return interrupted();
    }
    std::string out;
    ChildOutcome outcome = run_child(code_argv(false), request.dump(),
                                     [&](std::string_view chunk) { out.append(chunk); }, stop);
    return parse_json_answer(out, outcome, "sandcell code");
  }

  Json run_streaming(const Json& asked, const OutputSink& sink, std::stop_token stop) override {
    const Json request = with_defaults(asked);
    std::optional<WarmPool::ColdRun> cold_run;
    if (std::optional<StartedChild> member = take_member(request, cold_run)) {
      bool declined = false;
      Json end = stream_from(
          [&](const std::function<void(std::string_view)>& on_stdout, const std::function<bool()>& answered) {
            return finish_child(std::move(*member), Json{{"request", request}, {"stream", true}}.dump(), on_stdout,
                                stop, {.answered = answered, .reap = leave_to_pool()});
          },
          sink, &declined);
      if (!declined) return end;
      if (stop.stop_requested()) return interrupted();
    }
    return stream_from(
        [&](const std::function<void(std::string_view)>& on_stdout, const std::function<bool()>&) {
          return run_child(code_argv(true), request.dump(), on_stdout, stop);
        },
        sink, nullptr);
  }

  // The events of a `code --stream` (or a member's): output to `sink`, the "end" result returned.
  // `declined`: set when a member answered that nothing ran (then nothing reached the sink).
  // `run` gets the output's consumer and whether the answer is whole (its "end" event seen).
  Json stream_from(const std::function<ChildOutcome(const std::function<void(std::string_view)>&,
                                                    const std::function<bool()>&)>& run,
                   const OutputSink& sink, bool* declined) {
    std::string pending;
    Json end;
    auto on_line = [&](const std::string& line) {
      Json event = parse_bounded_json_or_discarded(line);
      if (event.is_discarded() || !event.is_object()) return;
      if (declined && pool_declined(event)) *declined = true;
      std::string type = event.value("type", "");
      if (type == "end") end = event.value("result", Json::object());
      else if ((type == "stdout" || type == "stderr") && event.contains("data"))
        sink(type, event["data"].get<std::string>());
    };
    ChildOutcome outcome = run(
        [&](std::string_view chunk) {
          pending.append(chunk);
          for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
            on_line(pending.substr(0, nl));
            pending.erase(0, nl + 1);
          }
        },
        [&] { return end.is_object() && pending.empty(); });
    if (!pending.empty()) {
      // A runner that refused the request prints a single JSON object, not events.
      on_line(pending);
      if (end.is_null()) end = parse_bounded_json_or_discarded(pending);
    }
    if (declined && *declined) return {};
    if (end.is_object()) return end;
    return parse_json_answer("", outcome, "sandcell code --stream");
  }

  Json list_skills() override { return listing({"skills", "list", "--json"}); }
  Json list_sessions() override { return listing({"sessions", "list", "--json"}); }

  void remove_session(const std::string& id) override {
    ChildOutcome outcome = run_child(argv({"sessions", "rm", "--", id}), "", [](std::string_view) {});
    if (outcome.exit_code != 0)
      throw Error::invalid("remove session " + id + ": " + first_line(outcome.stderr_text));
  }

  size_t pool_ready(const std::string& skill) const override { return pool_ ? pool_->ready_count(skill) : 0; }

 private:
  // A request that names no disk bound gets the operator's --disk (`sandcell code` checks it
  // against --max-disk like any other). Before the pool is asked: a prepared sandbox has the
  // skill's own bound, so such a request runs cold (a member would refuse it anyway).
  Json with_defaults(const Json& request) const {
    if (!options_.default_disk || !request.is_object() ||
        (request.contains("disk") && !request["disk"].is_null()))
      return request;
    Json r = request;
    r["disk"] = *options_.default_disk;
    return r;
  }

  // A ready member of the request's skill; when its pool has none, `cold_run` holds the pool's
  // refill until the request's cold run is over (WarmPool::ColdRun).
  std::optional<StartedChild> take_member(const Json& request, std::optional<WarmPool::ColdRun>& cold_run) {
    if (!pool_) return std::nullopt;
    std::optional<std::string> skill = pooled_skill(request);
    if (!skill || !pool_->pools(*skill)) return std::nullopt;
    std::optional<StartedChild> member = pool_->take(*skill);
    if (!member) cold_run.emplace(*pool_);
    return member;
  }

  // A member that answered tears its sandbox down on its own time; the pool reaps it.
  std::function<void(StartedChild)> leave_to_pool() {
    return [this](StartedChild member) { pool_->reap_when_exited(std::move(member)); };
  }

  static Json interrupted() {
    return Json{{"error", {{"class", "sandcell"}, {"message", "interrupted before the run"}}}};
  }

  std::vector<std::string> argv(std::initializer_list<std::string> verb) const {
    std::vector<std::string> args{options_.sandcell_bin};
    if (!options_.root.empty()) args.insert(args.end(), {"--root", options_.root});
    args.insert(args.end(), verb);
    return args;
  }

  std::vector<std::string> code_argv(bool stream) const {
    std::vector<std::string> args = argv({"code", "--request-json", "-"});
    if (stream) args.push_back("--stream");
    args.insert(args.end(), options_.code_flags.begin(), options_.code_flags.end());
    return args;
  }

  Json listing(std::initializer_list<std::string> verb) {
    std::string out;
    ChildOutcome outcome = run_child(argv(verb), "", [&](std::string_view chunk) { out.append(chunk); });
    if (outcome.exit_code != 0)
      throw Error::invalid("sandcell " + *verb.begin() + " list: " + first_line(outcome.stderr_text));
    Json parsed = parse_bounded_json_or_discarded(out);
    if (parsed.is_discarded()) throw Error(EPROTO, "sandcell " + *verb.begin() + " list printed no JSON");
    return parsed;
  }

  SubprocessExecutorOptions options_;
  std::optional<WarmPool> pool_;  // last: its members are cancelled first
};

}  // namespace

std::string sandcell_bin_in(const std::filesystem::path& dir) {
  const auto images = dir / "sandcell-images";
  if (access(images.c_str(), X_OK) == 0) return images.string();
  return (dir / "sandcell").string();
}

std::string default_sandcell_bin() {
  if (const char* env = std::getenv("SANDCELL_BIN"); env && *env) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error(ec.value(), "readlink /proc/self/exe");
  return sandcell_bin_in(self.parent_path());
}

std::unique_ptr<Executor> make_subprocess_executor(SubprocessExecutorOptions options) {
  if (options.sandcell_bin.empty()) options.sandcell_bin = default_sandcell_bin();
  if (access(options.sandcell_bin.c_str(), X_OK) != 0)
    throw Error(errno, "sandcell executable " + options.sandcell_bin);
  return std::make_unique<SubprocessExecutor>(std::move(options));
}

bool is_request_error(const Json& result) {
  return result.contains("error") && result["error"].is_object() &&
         result["error"].value("class", "") == "sandcell" && !result.contains("status");
}

}  // namespace sandcell::agent_service
