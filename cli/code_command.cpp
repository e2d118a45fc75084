// `sandcell code`: run a snippet with a skill and return output, report, artifacts, error class.
// Three outputs: plain (the program's output passed through, a summary on stderr), --json (one
// result document) and --request-json (the agent contract, agent/README.md; --stream for events).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "code_output.hpp"
#include "commands.hpp"
#include "limit_flags.hpp"
#include "request_ceiling_flags.hpp"
#include "sandcell/agent/code_runner.hpp"
#include "sandcell/agent/sessions.hpp"
#include "sandcell/agent/zygote.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"
#include "spec_terms.hpp"

namespace sandcell::cli {
namespace {

using nlohmann::json;

struct CodeFlags {
  std::string skill, file, session, packages, request_json, stdin_file, report, skills_dir, sessions_dir;
  std::string seccomp = "code", artifacts_dir;
  std::string pool_member;  // the warm pool's prepared sandbox of this skill (hidden)
  std::string zygote;       // with pool_member: the skill's zygote's directory (hidden)
  std::string pool_zygote;  // the warm pool's zygote of this skill (hidden)
  uint32_t zygote_slots = 8;
  std::optional<std::string> net, userns;
  std::optional<double> session_ttl;
  std::optional<std::string> sessions_max, sessions_max_bytes;
  std::vector<std::string> puts, gets, env;
  agent::LimitArgs limits;
  agent::RequestCeilings ceilings;
  agent::NetworkArgs network;
  bool json = false, stream = false, artifacts_dotfiles = false;
};

constexpr uint64_t kMaxLocalFile = 64ull << 20;

std::string read_local(const std::string& path, const std::string& what) {
  if (path == "-") {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    return ss.str();
  }
  struct stat st;
  if (stat(path.c_str(), &st) != 0) throw Error::invalid(what + " " + path + ": " + strerror(errno));
  if (!S_ISREG(st.st_mode)) throw Error::invalid(what + " " + path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) > kMaxLocalFile)
    throw Error::invalid(what + " " + path + " is " + std::to_string(st.st_size) + " bytes; the limit is " +
                         std::to_string(kMaxLocalFile));
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string part; std::getline(ss, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

// "--get out/x.csv[:LOCAL]" → the workspace path.
std::string get_path(const std::string& spec) { return spec.substr(0, spec.find(':')); }

agent::CodeRequest request_from_flags(const CodeFlags& f) {
  if (f.skill.empty()) throw Error::invalid("code needs --skill NAME (see sandcell skills list)");
  agent::CodeRequest r{.skill = f.skill, .code = read_local(f.file.empty() ? "-" : f.file, "code file")};
  if (!f.session.empty()) r.session = f.session;
  r.limits = f.limits;
  r.packages = split_commas(f.packages);
  r.net = f.net;
  r.env = f.env;
  if (!f.stdin_file.empty()) r.stdin_data = read_local(f.stdin_file, "--stdin");
  for (const std::string& put : f.puts) {
    auto colon = put.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == put.size())
      throw Error::invalid("--put expects LOCAL:PATH, got '" + put + "'");
    r.files.push_back({put.substr(colon + 1), read_local(put.substr(0, colon), "--put")});
  }
  for (const std::string& get : f.gets) r.get.push_back(get_path(get));
  return r;
}

agent::CodeRequest request_from_json(const CodeFlags& f) {
  if (!f.skill.empty() || !f.file.empty() || !f.session.empty() || !f.puts.empty() || !f.gets.empty() ||
      !f.packages.empty() || f.net || !f.env.empty() || !f.stdin_file.empty())
    throw Error::invalid("with --request-json, give skill, code, session, files, get, packages, net, env and "
                         "stdin in the request");
  std::string text = read_local(f.request_json, "--request-json");
  json j;
  try {
    j = parse_bounded_json(text);
  } catch (const json::parse_error& e) {
    throw Error::invalid(std::string("request is not valid JSON: ") + e.what());
  }
  agent::CodeRequest r = agent::parse_code_request(j);
  r.limits = agent::merge(r.limits, f.limits);  // the operator's limits win
  return r;
}

agent::RunnerContext runner_context(const CodeFlags& f, const GlobalOptions& g) {
  agent::RunnerContext ctx;
  ctx.store_root = g.store_root();
  ctx.sessions_dir = agent::resolve_sessions_dir(f.sessions_dir, ctx.store_root);
  ctx.session_ttl = agent::resolve_session_ttl(f.session_ttl);
  if (f.sessions_max)
    ctx.session_bounds.max_sessions =
        static_cast<size_t>(runtime::parse_positive_number(*f.sessions_max, "--sessions-max"));
  if (f.sessions_max_bytes)
    ctx.session_bounds.max_total_bytes =
        runtime::parse_size(*f.sessions_max_bytes, "--sessions-max-bytes");
  ctx.network = f.network;
  ctx.seccomp = f.seccomp;
  agent::check_ceilings(f.ceilings);
  ctx.ceilings = f.ceilings;
  if (f.userns == "auto") ctx.user_namespace = runtime::UserNamespace::Auto;
  if (f.userns == "host") ctx.user_namespace = runtime::UserNamespace::Host;
  return ctx;
}

int code(const CodeFlags& f, const GlobalOptions& g) {
  bool contract = !f.request_json.empty();
  if (f.stream && !contract) throw Error::invalid("--stream needs --request-json");
  agent::CodeRequest request = contract ? request_from_json(f) : request_from_flags(f);
  const agent::SkillCatalog catalog =
      agent::SkillCatalog::for_skill(agent::resolve_skills_dir(f.skills_dir), request.skill);
  agent::RunnerContext ctx = runner_context(f, g);
  CodeOutput out(contract ? (f.stream ? CodeOutput::Mode::Stream : CodeOutput::Mode::Contract)
                          : (f.json ? CodeOutput::Mode::Json : CodeOutput::Mode::Plain));
  ctx.on_output = out.sink();
  ctx.on_warning = [](const std::string& warning) { std::cerr << "sandcell: warning: " << warning << "\n"; };
  agent::CodeResult result = agent::run_code(catalog, request, ctx);
  if (!f.report.empty()) write_report(f.report, agent::to_json(result));
  return out.finish(result, f.gets, {f.artifacts_dir, catalog.find(request.skill).artifacts, f.artifacts_dotfiles});
}

// `code --pool-member SKILL`, started by a server's warm pool (docs/architecture.md, "The warm
// pool"): stdout says {"ready": true, "memory_bytes": N} once the interpreter waits, then what
// `code --request-json [--stream]` prints for the one request stdin brings, or {"pool_refused"}
// / {"pool_failed"} when nothing of it ran (the server then runs it cold).
int pool_member(const CodeFlags& f, const GlobalOptions& g) {
  const agent::SkillCatalog catalog =
      agent::SkillCatalog::for_skill(agent::resolve_skills_dir(f.skills_dir), f.pool_member);
  agent::RunnerContext ctx = runner_context(f, g);
  std::optional<CodeOutput> out;  // the request says which: contract or stream
  runtime::OutputSink sink;
  ctx.on_output = [&](runtime::Stream s, std::span<const char> data) {
    if (sink) sink(s, data);
  };
  ctx.on_warning = [](const std::string& warning) { std::cerr << "sandcell: warning: " << warning << "\n"; };
  agent::PoolMemberHooks hooks{
      .on_ready = [](uint64_t memory_bytes) {
        std::cout << json{{"ready", true}, {"memory_bytes", memory_bytes}}.dump() << std::endl;
      },
      .on_request = [&](bool stream) {
        out.emplace(stream ? CodeOutput::Mode::Stream : CodeOutput::Mode::Contract);
        sink = out->sink();
      },
      // The answer before the teardown; then stdout and stderr end, so the server has it all
      // (its pipes at EOF) while this process unmounts the workspace and removes the rest.
      .on_result = [&](const agent::CodeResult& result) {
        out->finish(result, {}, {"", catalog.find(f.pool_member).artifacts, false});
        std::cout.flush();
        std::cerr.flush();
        runtime::UniqueFd null(open("/dev/null", O_WRONLY | O_CLOEXEC));
        if (null) {
          dup2(null.get(), STDOUT_FILENO);
          dup2(null.get(), STDERR_FILENO);
        }
      }};
  agent::PoolMemberOutcome outcome =
      agent::run_pool_member(catalog, f.pool_member, ctx, STDIN_FILENO, hooks, f.zygote);
  if (outcome.answered) return 0;
  if (outcome.result && out)
    return out->finish(*outcome.result, {}, {"", catalog.find(f.pool_member).artifacts, false});
  json answer = outcome.refused.empty() ? json{{"pool_failed", in_flag_terms(outcome.failed)}}
                                        : json{{"pool_refused", in_flag_terms(outcome.refused)}};
  std::cout << answer.dump(-1, ' ', false, json::error_handler_t::replace) << std::endl;
  return 0;
}

// `code --pool-zygote SKILL`, started by a server's warm pool (sandcell/agent/zygote.hpp): stdout
// says {"ready": true, "zygote": DIR} once the zygote waits for its members' requests; it runs
// until stdin closes, then prints how the zygote's run ended ({"ended": ...}).
int pool_zygote(const CodeFlags& f, const GlobalOptions& g) {
  const agent::SkillCatalog catalog =
      agent::SkillCatalog::for_skill(agent::resolve_skills_dir(f.skills_dir), f.pool_zygote);
  agent::RunnerContext ctx = runner_context(f, g);
  ctx.on_warning = [](const std::string& warning) {
    std::cerr << "sandcell: warning: " << warning << "\n";
  };
  const runtime::Result result =
      agent::run_zygote(catalog, f.pool_zygote, ctx, f.zygote_slots, STDIN_FILENO,
                        {.on_ready = [](const std::string& dir) {
                          std::cout << json{{"ready", true}, {"zygote", dir}}.dump() << std::endl;
                        }});
  const std::string how = result.error.empty() ? runtime::to_string(result.status) : result.error;
  std::cout << json{{"ended", how}}.dump(-1, ' ', false, json::error_handler_t::replace)
            << std::endl;
  return 0;
}

int code_or_error(const CodeFlags& f, const GlobalOptions& g) {
  if (!f.pool_zygote.empty()) return pool_zygote(f, g);
  if (!f.pool_member.empty()) return pool_member(f, g);
  if (f.request_json.empty()) return code(f, g);
  try {
    return code(f, g);
  } catch (const std::exception& e) {  // the contract: a bad request is JSON on stdout too
    const std::string message = in_flag_terms(e.what());
    std::cout << agent::error_json(message).dump(-1, ' ', false, json::error_handler_t::replace)
              << std::endl;
    std::cerr << "sandcell: " << message << "\n";
    return 125;
  }
}

// The limits and the network apply to the install and the run phase alike, the timeout to each.
void add_code_limit_flags(CLI::App* cmd, CodeFlags& f) {
  using Optional = std::optional<std::string>;
  add_limit_flags(
      cmd,
      LimitFlagTargets<Optional, Optional>{
          f.limits.memory, f.limits.pids, f.limits.cpus, f.limits.timeout, f.limits.cpu_time,
          f.limits.output_limit, f.limits.disk, f.net, f.network.allow_file, f.network.hosts_file,
          f.network.allow_cidrs, f.seccomp, f.userns},
      {.memory = "the skill's",
       .pids = "the skill's",
       .cpus = "1",
       .timeout = "the skill's, per phase",
       .cpu_time = "none",
       .output_limit = "1m",
       .disk = "1g, an ext4 image per workspace",
       .net = "the skill's: none",
       .seccomp = "code",
       .userns = "auto as root, host rootless"});
}

}  // namespace

void add_code_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<CodeFlags>();
  auto* cmd = app.add_subcommand("code", "Run a code snippet with a skill (python, node, bash, c, cpp...) and "
                                         "return its output, report, artifacts and error class");
  cmd->add_option("--skill,--language", f->skill, "Skill name or language alias (py, js, sh, c++...)");
  cmd->add_option("file", f->file, "Source file, or - for stdin [-]");
  cmd->add_option("--session", f->session, "Keep /workspace (and python variables) across calls with this ID");
  cmd->add_option("--put", f->puts, "Copy LOCAL:PATH into /workspace before the run (repeatable)")->allow_extra_args(false);
  cmd->add_option("--get", f->gets, "Return PATH[:LOCAL] from /workspace after the run; saved to LOCAL "
                                    "(default: its file name here) (repeatable)")->allow_extra_args(false);
  cmd->add_option("--packages", f->packages, "Install these packages first (a,b), with the skill's installer, "
                                             "under the run's network policy");
  cmd->add_option("--env", f->env, "Environment K=V for install and run (repeatable)")->allow_extra_args(false);
  cmd->add_option("--stdin", f->stdin_file, "File given to the program as stdin [none]");
  add_code_limit_flags(cmd, *f);
  add_ceiling_flags(cmd, f->ceilings, false);
  cmd->add_flag("--json", f->json, "Print the result as one JSON document");
  cmd->add_option("--report", f->report, "Write the result JSON to FILE");
  cmd->add_option("--artifacts-dir", f->artifacts_dir, "Save the artifacts (files written under /workspace/out) here, keeping their tree; never overwrites");
  cmd->add_flag("--artifacts-dotfiles", f->artifacts_dotfiles, "With --artifacts-dir: save names starting with '.' too");
  cmd->add_option("--request-json", f->request_json, "Read one JSON request (FILE or -) and print one JSON result "
                                                     "(the agent contract; agent/README.md)");
  cmd->add_option("--pool-member", f->pool_member, "")->group("");  // a server's warm pool starts it
  cmd->add_option("--zygote", f->zygote, "")->group("");            // with --pool-member
  cmd->add_option("--pool-zygote", f->pool_zygote, "")
      ->group("");  // a server's warm pool starts it
  cmd->add_option("--zygote-slots", f->zygote_slots, "")->group("")->check(CLI::Range(1u, 128u));
  cmd->add_flag("--stream", f->stream, "With --request-json: newline-delimited JSON events as output arrives");
  cmd->add_option("--skills-dir", f->skills_dir, "Skills directory [$SANDCELL_SKILLS, the source tree, /usr/share/sandcell/skills]");
  cmd->add_option("--sessions-dir", f->sessions_dir, "Sessions directory [$SANDCELL_SESSIONS, ROOT/sessions]");
  cmd->add_option("--session-ttl", f->session_ttl, "Remove sessions idle this many seconds [$SANDCELL_SESSION_TTL, 3600]");
  cmd->add_option("--sessions-max", f->sessions_max,
                  "At most this many sessions; a new one removes the least "
                  "recently used idle ones, or is refused [64]");
  cmd->add_option("--sessions-max-bytes", f->sessions_max_bytes,
                  "The sessions' disk bounds (--disk each) together "
                  "at most this (k/m/g); as --sessions-max [16g]");
  cmd->footer(
      "Examples:\n"
      "  echo 'print(6*7)' | sandcell code --skill python\n"
      "  sandcell code --skill c hello.c --timeout 5 --json\n"
      "  sandcell code --skill py plot.py --artifacts-dir ./out       (plt.show() → out/figure-1.png)\n"
      "  sandcell code --skill python --session s1 - <<< 'x = 41'; sandcell code --skill python --session s1 - <<< 'print(x+1)'\n"
      "  sandcell code --skill python --put data.csv:data.csv --get out/result.csv x.py\n"
      "  echo '{\"language\":\"js\",\"code\":\"console.log(1)\"}' | sandcell code --request-json - --stream\n"
      "Exit code: the program's (compile errors: the compiler's); 125 when sandcell failed or the input was\n"
      "invalid. With --request-json: 0 whenever a result was printed.");
  cmd->callback([&action, f, globals] { action = [f, globals] { return code_or_error(*f, *globals); }; });
}

}  // namespace sandcell::cli
