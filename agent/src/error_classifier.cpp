// Failure → ErrorInfo. Limits first (the status says it), then the language's own messages in
// stderr (python tracebacks, node's error header, bash's "line N:", gcc's file:line:col), then
// what is left: a signal or a nonzero exit with the last line of stderr.
#include "sandcell/agent/error_classifier.hpp"
#include "sandcell/base/number.hpp"

#include <csignal>
#include <cstring>
#include <regex>
#include <sstream>

namespace sandcell::agent {
namespace {

using runtime::Status;

// A line number from a compiler or interpreter message; nothing when it does not fit in an int.
std::optional<int> line_number(const std::string& digits) { return parse_number<int>(digits); }

// Lines of the sandbox's stderr, each cut to kMaxLine bytes: libstdc++'s std::regex matcher
// recurses once per character, and a program printing one 900 KB exception line overflowed the
// stack of `sandcell code` (SIGSEGV, no result record). A real error header is far shorter; the
// whole stderr is in the result anyway.
constexpr size_t kMaxLine = 2048;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.size() > kMaxLine) line.resize(kMaxLine);
    lines.push_back(line);
  }
  return lines;
}

std::string last_nonempty_line(const std::string& text) {
  auto lines = lines_of(text);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it)
    if (it->find_first_not_of(" \t") != std::string::npos) return *it;
  return {};
}

std::optional<ErrorInfo> from_status(const PhaseResult& p) {
  const runtime::Result& r = p.result;
  auto limit = [&](const char* kind, std::string message) { return ErrorInfo{.kind = kind, .message = std::move(message)}; };
  switch (r.status) {
    case Status::TimeoutWall:
      return limit("timeout", "stopped after the wall-clock limit of " + std::to_string(r.limits.wall_s.value_or(0)) + " s");
    case Status::TimeoutCpu:
      return limit("timeout", "stopped after the CPU-time limit of " + std::to_string(r.limits.cpu_s.value_or(0)) + " s");
    case Status::Oom:
      return limit("memory_limit", "killed: out of memory (limit " + std::to_string(r.limits.memory_bytes.value_or(0)) + " bytes)");
    case Status::OutputLimit:
      return limit("output_limit", "stopped: wrote more than " + std::to_string(r.limits.output_bytes.value_or(0)) +
                                       " bytes to one stream");
    case Status::DiskLimit:
      return limit("disk_limit", "stopped: /workspace is full (limit " +
                                     std::to_string(r.limits.disk_bytes.value_or(0)) +
                                     " bytes, or its files)");
    case Status::PidsLimit:
      return limit("process_limit", "stopped: more than " + std::to_string(r.limits.pids.value_or(0)) + " processes/threads");
    case Status::RuntimeError:
      return limit("sandcell", r.error);
    default:
      return std::nullopt;
  }
}

// python: the exception line is the first unindented line after the last `  File "…", line N`.
std::optional<ErrorInfo> python_error(const std::string& err) {
  static const std::regex frame(R"re(^  File "([^"]+)", line (\d+)(?:, in (.+))?$)re");
  static const std::regex exc(R"(^([A-Za-z_][\w.]*)(?:: (.*))?$)");
  auto lines = lines_of(err);
  std::optional<size_t> last_frame;
  std::smatch m;
  for (size_t i = 0; i < lines.size(); ++i)
    if (std::regex_match(lines[i], m, frame)) last_frame = i;
  if (!last_frame) return std::nullopt;
  std::regex_match(lines[*last_frame], m, frame);
  std::string file = m[1], func = m[3];
  std::string line_text = m[2];
  std::optional<int> line = line_number(line_text);
  for (size_t i = *last_frame + 1; i < lines.size(); ++i) {
    if (lines[i].empty() || lines[i][0] == ' ' || !std::regex_match(lines[i], m, exc)) continue;
    std::string name = m[1], message = m[2];
    ErrorInfo e{.kind = "runtime_exception", .message = message, .file = file, .line = line, .exception = name};
    if (name == "SyntaxError" || name == "IndentationError" || name == "TabError") {
      e.kind = "syntax_error";
    } else if (name == "ModuleNotFoundError") {
      e.kind = "missing_module";
      static const std::regex mod(R"(No module named '([^']+)')");
      if (std::smatch mm; std::regex_search(message, mm, mod)) e.module = mm[1];
    } else {
      e.frame = file + ":" + line_text + (func.empty() ? "" : " in " + func);
    }
    return e;
  }
  return std::nullopt;
}

// node: "/workspace/main.js:3" heads the report, "TypeError: …" follows, then "    at f (file:line:col)".
std::optional<ErrorInfo> node_error(const std::string& err) {
  static const std::regex header(R"(^(/[^:]+):(\d+)$)");
  static const std::regex exc(R"(^(?:Uncaught )?([A-Za-z_$][\w$]*(?:Error|Exception)|Error): ?(.*)$)");
  static const std::regex at(R"(^\s+at (?:(.+?) \()?(/workspace/[^:()]+):(\d+):\d+\)?$)");
  static const std::regex missing(R"(Cannot find module '([^']+)')");
  auto lines = lines_of(err);
  ErrorInfo e{.kind = "runtime_exception"};
  std::smatch m;
  for (const std::string& l : lines) {
    if (!e.file && std::regex_match(l, m, header)) {
      e.file = m[1];
      e.line = line_number(m[2].str());
    } else if (!e.exception && std::regex_match(l, m, exc)) {
      e.exception = m[1];
      e.message = m[2];
    } else if (e.exception && !e.frame && std::regex_match(l, m, at)) {
      e.file = m[2];
      e.line = line_number(m[3].str());
      e.frame = std::string(m[2]) + ":" + std::string(m[3]) + (m[1].matched ? " in " + std::string(m[1]) : "");
    }
  }
  if (!e.exception && !e.file) return std::nullopt;
  if (!e.exception) e.message = last_nonempty_line(err);  // `throw "text"`: no Error object
  if (e.exception == "SyntaxError") {
    e.kind = "syntax_error";
    e.frame.reset();
  } else if (std::regex_search(e.message, m, missing)) {
    e.kind = "missing_module";
    e.module = m[1];
    e.frame.reset();
  }
  return e;
}

std::optional<ErrorInfo> bash_error(const std::string& err) {
  static const std::regex line_msg(R"(^(/[^:]+): line (\d+): (.*)$)");
  static const std::regex not_found(R"(^(.+): command not found$)");
  std::optional<ErrorInfo> found;
  std::smatch m;
  for (const std::string& l : lines_of(err)) {
    if (!std::regex_match(l, m, line_msg)) continue;
    ErrorInfo e{.kind = "nonzero_exit", .message = m[3], .file = m[1], .line = line_number(m[2].str())};
    std::string msg = m[3];
    if (msg.rfind("syntax error", 0) == 0) {
      e.kind = "syntax_error";
      return e;  // bash stops at the first
    }
    if (std::regex_match(msg, m, not_found)) {
      e.kind = "command_not_found";
      e.module = m[1];
    }
    if (!found || found->kind == "nonzero_exit") found = e;
  }
  return found;
}

// gcc/g++ diagnostics, and the C++ runtime's report of an uncaught exception.
std::optional<ErrorInfo> gcc_error(const std::string& err) {
  static const std::regex diag(R"(^(/?[^:\s]+):(\d+):(?:\d+:)? (fatal error|error): (.*)$)");
  static const std::regex header(R"(^([^:]+\.h(?:pp)?): No such file or directory$)");
  static const std::regex link(R"(undefined reference to [`']([^']+)')");
  static const std::regex terminate(R"(^terminate called after throwing an instance of '([^']+)'$)");
  auto lines = lines_of(err);
  std::smatch m;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (std::regex_match(l, m, diag)) {
      ErrorInfo e{.kind = "compile_error", .message = m[4], .file = m[1], .line = line_number(m[2].str())};
      std::string msg = m[4];
      if (std::regex_match(msg, m, header)) {
        e.kind = "missing_module";
        e.module = m[1];
      }
      return e;
    }
    if (std::regex_search(l, m, link)) return ErrorInfo{.kind = "compile_error", .message = "undefined reference to " + std::string(m[1])};
    if (std::regex_match(l, m, terminate)) {
      ErrorInfo e{.kind = "runtime_exception", .exception = std::string(m[1])};
      if (i + 1 < lines.size() && lines[i + 1].find("what():") != std::string::npos)
        e.message = lines[i + 1].substr(lines[i + 1].find("what():") + 7);
      e.message.erase(0, e.message.find_first_not_of(' '));
      return e;
    }
  }
  return std::nullopt;
}

std::optional<ErrorInfo> language_error(const std::string& classifier, const std::string& err) {
  if (classifier == "python") return python_error(err);
  if (classifier == "node") return node_error(err);
  if (classifier == "bash") return bash_error(err);
  if (classifier == "gcc") return gcc_error(err);
  return std::nullopt;
}

}  // namespace

std::optional<ErrorInfo> classify_failure(const std::string& classifier, const PhaseResult& p) {
  if (p.result.status == Status::Ok) return std::nullopt;
  if (auto e = from_status(p)) return e;
  if (p.name == "install") {
    std::string why = last_nonempty_line(p.stderr_text);  // pip and npm end with their verdict there
    return ErrorInfo{.kind = "install_error", .message = why.empty() ? last_nonempty_line(p.stdout_text) : why};
  }
  if (auto e = language_error(classifier, p.stderr_text)) {
    if (p.name == "compile" && e->kind == "runtime_exception") e->kind = "compile_error";
    return e;
  }
  if (p.name == "compile") return ErrorInfo{.kind = "compile_error", .message = last_nonempty_line(p.stderr_text)};
  if (p.result.status == Status::Signaled && p.result.signal) {
    const char* name = sigabbrev_np(*p.result.signal);
    return ErrorInfo{.kind = "signaled", .message = std::string("killed by SIG") + (name ? name : "?") + " (" +
                                                   strsignal(*p.result.signal) + ")"};
  }
  return ErrorInfo{.kind = "nonzero_exit", .message = last_nonempty_line(p.stderr_text)};
}

}  // namespace sandcell::agent
