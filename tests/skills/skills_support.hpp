#pragma once
// Runs `sandcell code` against the skill images the `skill_images` fixture built into the test
// store; each test gets its own sessions directory.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandcell_cli.hpp"
#include "temp_tree.hpp"

namespace sandcell::test {

inline std::string test_store() {
  const char* env = getenv("SANDCELL_TEST_STORE");
  return env && *env ? env : SANDCELL_TEST_STORE;
}

class Skills : public ::testing::Test {
 protected:
  TempTree dir_{"sc-skills"};
  std::string sessions() const { return (dir_.path / "sessions").string(); }

  // sandcell code --json --skill SKILL FLAGS... -  with the code on stdin.
  CliRun code(const std::string& skill, const std::string& source, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"--root", test_store(), "code", "--json", "--sessions-dir", sessions(),
                                     "--skill", skill};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("-");
    return run_sandcell(args, source);
  }
  // sandcell code --request-json - FLAGS...
  CliRun request(const nlohmann::json& req, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"--root", test_store(), "code", "--request-json", "-", "--sessions-dir", sessions()};
    args.insert(args.end(), flags.begin(), flags.end());
    return run_sandcell(args, req.dump());
  }
  std::string error_class(const CliRun& r) {
    return r.record.is_object() && r.record["error"].is_object() ? r.record["error"]["class"].get<std::string>() : "none";
  }
};

}  // namespace sandcell::test
