#pragma once
// A code result reduced to what a model needs to fix its code: status, exit code, error class
// with file:line, stdout/stderr cut to head and tail, artifacts listed without their bytes.
#include <cstddef>
#include <string>
#include <string_view>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

// Keeps the first and last `keep / 2` bytes and says how much was cut in between.
std::string head_and_tail(std::string_view text, size_t keep);

Json compact_result(const Json& result, size_t keep_output = 4000);

// The result with every base64 payload replaced by its length: for transcripts.
Json without_payloads(Json result);

}  // namespace sandcell::agent_service
