#include "executor/workspace_files.hpp"

#include <map>
#include <optional>

#include "executor/base64.hpp"

namespace sandcell::agent_service {
namespace {

// A program that does nothing, per skill of agent/skills/ (the runner rejects empty code).
std::string no_op_code(const std::string& skill) {
  static const std::map<std::string, std::string> programs = {
      {"python", "pass\n"}, {"node", ";\n"}, {"bash", ":\n"},
      {"c", "int main(void) { return 0; }\n"}, {"cpp", "int main() { return 0; }\n"}};
  auto it = programs.find(skill);
  return it == programs.end() ? ":\n" : it->second;
}

// A transfer without a session would go to a workspace thrown away when the call ends: the
// upload "succeeded" into nothing. Refused instead, as the runner refuses a bad request.
std::optional<Json> refuse_without_session(const WorkspaceTarget& target) {
  if (!target.session.empty()) return std::nullopt;
  return Json{{"error", {{"class", "sandcell"}, {"message", "a file transfer needs a session: without one the workspace is thrown away after the call"}}}};
}

Json transfer_request(const WorkspaceTarget& target) {
  Json request{{"skill", target.skill}, {"code", no_op_code(target.skill)}};
  if (!target.session.empty()) request["session"] = target.session;
  return request;
}

}  // namespace

Json put_workspace_file(Executor& executor, const WorkspaceTarget& target, const std::string& path,
                        std::string_view bytes) {
  if (auto refused = refuse_without_session(target)) return *refused;
  Json request = transfer_request(target);
  request["files"] = Json::array({{{"path", path}, {"content_base64", base64_encode(bytes)}}});
  return executor.run(request);
}

FetchedFile get_workspace_file(Executor& executor, const WorkspaceTarget& target, const std::string& path) {
  if (auto refused = refuse_without_session(target)) return {std::nullopt, *refused};
  Json request = transfer_request(target);
  request["get"] = Json::array({path});
  FetchedFile fetched{std::nullopt, executor.run(request)};
  const Json& files = fetched.result.contains("files") ? fetched.result["files"] : Json::array();
  for (const Json& f : files)
    if (f.is_object() && f.contains("base64") && f["base64"].is_string())
      fetched.bytes = base64_decode(f["base64"].get<std::string>());
  return fetched;
}

}  // namespace sandcell::agent_service
