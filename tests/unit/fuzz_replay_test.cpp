// Every seed input of every fuzz target (tests/fuzz/corpus/<target>/) and every crash a fuzzer
// ever found (tests/fuzz/regressions/<target>/, named after what it broke) goes through the same
// checks as under libFuzzer (tests/fuzz/targets.cpp), in the ordinary and the ASan builds.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "targets.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// The inputs of one target; at least one seed must exist so a renamed folder cannot pass empty.
std::vector<fs::path> inputs_of(const std::string& target) {
  std::vector<fs::path> files;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = fs::path(SANDCELL_FUZZ_DIR) / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().filename() != "README.md") files.push_back(entry.path());
  }
  return files;
}

void replay(const std::string& target, const std::function<void(std::string_view)>& check) {
  auto files = inputs_of(target);
  ASSERT_FALSE(files.empty()) << "no inputs for fuzz target " << target;
  for (const fs::path& file : files) EXPECT_NO_THROW(check(read_text(file))) << file;
}

TEST(FuzzReplay, Dockerfile) { replay("dockerfile", fuzz::dockerfile); }
TEST(FuzzReplay, SeccompProfile) { replay("seccomp_profile", fuzz::seccomp_profile); }
TEST(FuzzReplay, ProxyRequest) { replay("proxy_request", fuzz::proxy_request); }
TEST(FuzzReplay, HostName) { replay("host_name", fuzz::host_name); }
TEST(FuzzReplay, Allowlist) { replay("allowlist", fuzz::allowlist); }
TEST(FuzzReplay, ImageJson) { replay("image_json", fuzz::image_json); }
TEST(FuzzReplay, CodeRequest) { replay("code_request", fuzz::code_request); }
TEST(FuzzReplay, OciConfig) { replay("oci_config", fuzz::oci_config); }
TEST(FuzzReplay, McpRequest) { replay("mcp_request", fuzz::mcp_request); }
TEST(FuzzReplay, HttpRequest) { replay("http_request", fuzz::http_request); }

TEST(FuzzReplay, LayerExtractWritesNothingOutsideItsRoot) {
  TempTree outer("sc-fuzz-replay");
  fs::path scratch = fs::path(outer.path) / "scratch";
  fs::create_directory(scratch);
  replay("layer_extract", [&](std::string_view input) {
    fuzz::layer_extract(input, scratch, {outer.path, scratch});
  });
}

}  // namespace
}  // namespace sandcell::test
