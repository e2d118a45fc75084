#pragma once
// What a code run gives back (field names other tools read; agent/README.md):
//   stdout stderr exit_code status phase error{class,message,file,line,...} usage report
//   artifacts[{path,mime,size,base64}] files[{path,size,base64}] phases[...]
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/agent/workspace.hpp"
#include "sandcell/runtime/result.hpp"

namespace sandcell::agent {

// What kind of failure, so an agent can fix its code without parsing tracebacks.
struct ErrorInfo {
  std::string kind{};  // syntax_error compile_error missing_module runtime_exception timeout
                       // memory_limit output_limit process_limit disk_limit signaled nonzero_exit
                       // install_error command_not_found sandcell
  std::string message{};
  std::optional<std::string> file{};
  std::optional<int> line{};
  std::optional<std::string> module{};     // missing_module: its name
  std::optional<std::string> exception{};  // runtime_exception: "ZeroDivisionError"
  std::optional<std::string> frame{};      // runtime_exception: the last frame, "main.py:3 in f"
};

// One sandbox run of the call: install, compile or run.
struct PhaseResult {
  std::string name{};
  runtime::Result result{};
  std::string stdout_text{}, stderr_text{};
};

struct CodeResult {
  std::string skill{};
  std::optional<std::string> session{};
  std::vector<PhaseResult> phases{};  // in order; the last one decided the result
  std::optional<ErrorInfo> error{};
  std::vector<WorkspaceFile> artifacts{};
  std::vector<WorkspaceFile> files{};        // what the request's "get" asked for
  std::vector<std::string> lost_variables{}; // python sessions: globals that could not be kept
};

nlohmann::json to_json(const CodeResult& result);
// The answer to a bad request: {"error": {"class": "sandcell", "message": ...}}.
nlohmann::json error_json(const std::string& message);
// The exit code a CLI run without --request-json uses: the program's own (compile failures: the
// compiler's), 128+N for a signal, 125 when sandcell failed.
int exit_code_for(const CodeResult& result);

std::string base64_encode(std::string_view bytes);
// Throws Error::invalid naming `what` on anything that is not base64.
std::string base64_decode(std::string_view text, const std::string& what);

}  // namespace sandcell::agent
