#pragma once
// Every JSON document sandcell reads from outside (HTTP and MCP requests, request files, OCI
// configs, image configs and manifests, seccomp profiles, registry answers) is parsed here, with
// its nesting depth bounded while it is parsed. nlohmann's parser itself is iterative, but what
// is done with a value later (dump, comparisons, copies) recurses once per level: 200,000 nested
// brackets (400 KB) overflowed the stack of `serve` and `mcp` in dump(). No legitimate input of
// ours comes near kMaxJsonDepth.
#include <istream>
#include <nlohmann/json.hpp>
#include <string_view>

namespace sandcell {

inline constexpr int kMaxJsonDepth = 128;

// As nlohmann::json::parse: throws nlohmann::json::parse_error for bad JSON, and for JSON nested
// deeper than max_depth ("nested deeper than 128 levels").
nlohmann::json parse_bounded_json(std::string_view text, int max_depth = kMaxJsonDepth);
nlohmann::json parse_bounded_json(std::istream& in, int max_depth = kMaxJsonDepth);

// The same without exceptions: a discarded value (is_discarded()) for bad or too deep JSON.
nlohmann::json parse_bounded_json_or_discarded(std::string_view text,
                                               int max_depth = kMaxJsonDepth);
nlohmann::json parse_bounded_json_or_discarded(std::istream& in, int max_depth = kMaxJsonDepth);

}  // namespace sandcell
