#pragma once
// What each fuzz target does with one input, shared by the libFuzzer executables (fuzz_*.cpp)
// and the unit test that replays the seed corpora and every crash found so far
// (tests/unit/fuzz_replay_test.cpp). Each function returns normally for an input sandcell
// accepts or refuses with sandcell::Error; it throws std::logic_error when a property is
// violated; anything else escaping (another exception, a sanitizer report) is a finding too.
#include <filesystem>
#include <string_view>
#include <vector>

namespace sandcell::fuzz {

void dockerfile(std::string_view input);
void seccomp_profile(std::string_view input);
void proxy_request(std::string_view input);  // the first byte picks where the input is split
void host_name(std::string_view input);
void allowlist(std::string_view input);      // `--net allow:` text, entries with ports
void image_json(std::string_view input);     // the first byte picks the reader
void code_request(std::string_view input);   // `sandcell code --request-json`, an agent's request
void oci_config(std::string_view input);     // a bundle's config.json → runtime::Spec
void mcp_request(std::string_view input);    // lines of `sandcell mcp`'s stdin (service_targets.cpp)
void http_request(std::string_view input);   // one connection to `sandcell serve` (service_targets.cpp)
// Extracts the input as a layer into scratch/root; throws std::logic_error if anything appeared
// in or vanished from `watched` (directories around the root) other than scratch/root and
// scratch/layer.tar, or if the root is no longer a directory of mode 0755.
void layer_extract(std::string_view input, const std::filesystem::path& scratch,
                   const std::vector<std::filesystem::path>& watched);

}  // namespace sandcell::fuzz
