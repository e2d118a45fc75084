#pragma once
// Runs OCI hooks: each program gets the container state JSON on stdin, its own args and env,
// and is killed after its timeout. A failing hook throws Error naming it.
#include <string>
#include <vector>

#include "sandcell/oci/config.hpp"

namespace sandcell::oci {

void run_hooks(const std::vector<Hook>& hooks, const std::string& phase, const std::string& state_json);
// poststop's rule: a failing hook is a warning on stderr and the next one still runs.
void run_hooks_warning_on_failure(const std::vector<Hook>& hooks, const std::string& phase,
                                  const std::string& state_json);

}  // namespace sandcell::oci
