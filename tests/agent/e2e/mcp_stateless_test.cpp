// `sandcell mcp` with raw JSON-RPC lines, the 2026-07-28 way: no initialize; server/discover,
// then requests carrying the protocol version and client capabilities in _meta, a refused
// version (-32022), and a tools/call that runs in a real sandbox.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "e2e_support.hpp"

namespace sandcell::test {
namespace {

using nlohmann::json;

json meta(const std::string& version) {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "raw-jsonrpc"}, {"version", "1.0"}}}};
}

// Sends the lines, closes stdin (the server answers everything, then exits) and indexes the
// answers by id.
std::map<int, json> converse(const std::vector<json>& messages, Finished& r,
                             const std::vector<std::string>& flags = {}) {
  std::string input;
  for (const json& m : messages) input += m.dump() + "\n";
  std::vector<std::string> args{"mcp"};
  args.insert(args.end(), flags.begin(), flags.end());
  r = run_sandcell_with_store(args, input);
  std::map<int, json> answers;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    json answer = json::parse(line);  // stdout carries only JSON-RPC: a log line would throw here
    answers[answer["id"].get<int>()] = answer;
  }
  return answers;
}

TEST(McpStateless, DiscoverThenVersionedRequestsRunCodeInASandbox) {
  Finished r;
  auto answers = converse({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "server/discover"}, {"params", {{"_meta", meta("2026-07-28")}}}},
                           {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "tools/list"}, {"params", {{"_meta", meta("2026-07-28")}}}},
                           {{"jsonrpc", "2.0"}, {"id", 3}, {"method", "tools/list"}, {"params", {{"_meta", meta("2030-01-01")}}}},
                           {{"jsonrpc", "2.0"},
                            {"id", 4},
                            {"method", "tools/call"},
                            {"params", {{"_meta", meta("2026-07-28")},
                                        {"name", "run_code"},
                                        {"arguments", {{"language", "python"}, {"code", "import sys; print(sys.version_info[0] * 14)"}}}}}}},
                          r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json& discovered = answers.at(1)["result"];
  EXPECT_EQ(discovered["supportedVersions"][0], "2026-07-28");
  EXPECT_EQ(discovered["resultType"], "complete");
  EXPECT_TRUE(discovered["capabilities"].contains("tools"));

  const json& tools = answers.at(2)["result"];
  EXPECT_EQ(tools["resultType"], "complete");
  EXPECT_EQ(tools["tools"][0]["name"], "run_code");

  const json& refused = answers.at(3)["error"];
  EXPECT_EQ(refused["code"], -32022);
  EXPECT_EQ(refused["data"]["requested"], "2030-01-01");
  EXPECT_EQ(refused["data"]["supported"], discovered["supportedVersions"]);

  const json& called = answers.at(4)["result"];
  EXPECT_EQ(called["resultType"], "complete");
  EXPECT_EQ(called["isError"], false) << called;
  EXPECT_EQ(called["content"][0]["text"], "stdout:\n42\n") << called;
  EXPECT_NE(r.err.find("serving on stdio"), std::string::npos);  // logs go to stderr
}

TEST(McpStateless, HandshakeClientsStillGetTheirVersion) {
  Finished r;
  auto answers = converse({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"},
                            {"params", {{"protocolVersion", "2025-03-26"}, {"capabilities", json::object()},
                                        {"clientInfo", {{"name", "old"}, {"version", "1"}}}}}},
                           {{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}},
                           {{"jsonrpc", "2.0"}, {"id", 2}, {"method", "ping"}}},
                          r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(answers.at(1)["result"]["protocolVersion"], "2025-03-26");
  EXPECT_EQ(answers.at(2)["result"], json::object());
  EXPECT_EQ(answers.size(), 2u);
}

// The operator's --allowed-net is what run_code's schema offers as `net`, and a call asking
// for more is refused by name before any sandbox starts.
TEST(McpStateless, RunCodeNetIsOfferedAndHeldToTheOperatorsLimit) {
  Finished r;
  auto answers = converse({{{"jsonrpc", "2.0"}, {"id", 1}, {"method", "tools/list"}, {"params", {{"_meta", meta("2026-07-28")}}}},
                           {{"jsonrpc", "2.0"},
                            {"id", 2},
                            {"method", "tools/call"},
                            {"params", {{"_meta", meta("2026-07-28")},
                                        {"name", "run_code"},
                                        {"arguments", {{"language", "python"}, {"code", "print(1)"}, {"net", "full"}}}}}}},
                          r, {"--allowed-net", "allow:pypi.org"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json net = answers.at(1)["result"]["tools"][0]["inputSchema"]["properties"]["net"];
  EXPECT_NE(net.value("description", "").find("pypi.org"), std::string::npos) << net;
  const json& refused = answers.at(2)["result"];
  EXPECT_EQ(refused["isError"], true) << refused;
  EXPECT_NE(refused.dump().find("net full is over the operator's limit (--allowed-net allow:pypi.org)"), std::string::npos)
      << refused;
}

json run_code_call(int id, const json& arguments) {
  return {{"jsonrpc", "2.0"},
          {"id", id},
          {"method", "tools/call"},
          {"params", {{"_meta", meta("2026-07-28")}, {"name", "run_code"}, {"arguments", arguments}}}};
}

// The MiB of /workspace's filesystem a run_code answer printed ("stdout:\nN\n").
int workspace_mib(const json& answer) {
  const std::string text = answer["result"]["content"][0].value("text", "");
  return text.rfind("stdout:\n", 0) == 0 ? std::atoi(text.c_str() + 8) : -1;
}

// The server's workspace flags reach every run: --disk bounds a call that asks for no disk, a
// call's own "disk" is kept within --max-disk, and --sessions-max holds across calls (a second
// session removes the idle first one). README "Disk limits".
TEST(McpStateless, DiskAndSessionBoundsReachEveryRun) {
  char dir[] = "/tmp/sc-mcp-sessions-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  setenv("SANDCELL_SESSIONS", dir, 1);
  const std::string size = "import os; s = os.statvfs('/workspace'); print(s.f_blocks * s.f_frsize >> 20)";
  Finished r;
  auto answers = converse({run_code_call(1, {{"language", "python"}, {"code", size}}),
                           run_code_call(2, {{"language", "python"}, {"code", size}, {"disk", "24m"}}),
                           run_code_call(3, {{"language", "python"}, {"code", size}, {"disk", "64m"}}),
                           run_code_call(4, {{"language", "python"}, {"code", "x = 1"}, {"session", "first"}}),
                           run_code_call(5, {{"language", "python"}, {"code", "x = 2"}, {"session", "second"}})},
                          r, {"--disk", "16m", "--max-disk", "32m", "--sessions-max", "1", "--max-parallel", "1"});
  unsetenv("SANDCELL_SESSIONS");
  std::vector<std::string> sessions;
  for (const auto& e : std::filesystem::directory_iterator(dir)) sessions.push_back(e.path().filename());
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GE(workspace_mib(answers.at(1)), 12) << answers.at(1);  // ext4's own metadata takes some
  EXPECT_LE(workspace_mib(answers.at(1)), 16) << answers.at(1);
  EXPECT_GE(workspace_mib(answers.at(2)), 20) << answers.at(2);
  EXPECT_LE(workspace_mib(answers.at(2)), 24) << answers.at(2);
  EXPECT_NE(answers.at(3).dump().find("over the operator's limit (--max-disk 32m)"), std::string::npos)
      << answers.at(3);
  EXPECT_EQ(answers.at(4)["result"]["isError"], false) << answers.at(4);
  EXPECT_EQ(answers.at(5)["result"]["isError"], false) << answers.at(5);
  EXPECT_EQ(sessions, std::vector<std::string>{"second"});
}

// A --disk no request could be given (over --max-disk) fails at start, not at every call.
TEST(McpStateless, ADiskDefaultOverTheCeilingIsRefusedAtStart) {
  Finished r = run_sandcell_with_store({"mcp", "--disk", "64m", "--max-disk", "32m"}, "");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--disk 64m is over --max-disk 32m"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandcell::test
