#pragma once
// Turns a failed phase (its status, exit code and stderr) into an ErrorInfo, per language: the
// skill's "errors" field names the classifier (python, node, bash, gcc, generic).
#include <optional>
#include <string>

#include "sandcell/agent/code_result.hpp"

namespace sandcell::agent {

// nullopt when the phase succeeded.
std::optional<ErrorInfo> classify_failure(const std::string& classifier, const PhaseResult& phase);

}  // namespace sandcell::agent
