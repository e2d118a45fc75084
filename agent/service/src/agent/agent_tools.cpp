#include "agent/agent_tools.hpp"

#include "agent/compact_result.hpp"
#include "executor/workspace_files.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent_service {
namespace {

Json string_property(const char* description) { return {{"type", "string"}, {"description", description}}; }

ToolOutcome error_outcome(const std::string& message) { return {Json{{"error", message}}.dump(), true, std::nullopt}; }

std::string required_string(const Json& args, const char* key) {
  if (!args.contains(key) || !args[key].is_string())
    throw Error::invalid(std::string("missing string argument '") + key + "'");
  return args[key];
}

// A result counts as failed for the model when the program did not end with status ok.
bool failed(const Json& result) { return result.value("status", Json("")) != "ok"; }

}  // namespace

std::vector<ToolSpec> AgentTools::specs() {
  return {
      {"run_code",
       "Run a program in a fresh isolated sandbox sharing this task's /workspace (files persist between calls). "
       "Returns status, exit_code, error (class, message, file, line), stdout/stderr (long output is cut in the "
       "middle) and artifacts (files written under /workspace/out).",
       {{"type", "object"},
        {"properties", {{"language", string_property("python, node, bash, c or cpp")},
                        {"code", string_property("the complete program")}}},
        {"required", {"language", "code"}}}},
      {"write_file", "Write a text file into /workspace (path relative to /workspace).",
       {{"type", "object"},
        {"properties", {{"path", string_property("path under /workspace")}, {"content", string_property("file content")}}},
        {"required", {"path", "content"}}}},
      {"read_file", "Read a text file from /workspace (path relative to /workspace).",
       {{"type", "object"}, {"properties", {{"path", string_property("path under /workspace")}}}, {"required", {"path"}}}},
      {"list_skills", "List the languages (skills) code can run in.", {{"type", "object"}, {"properties", Json::object()}}},
  };
}

ToolOutcome AgentTools::call(const std::string& name, const std::string& arguments) {
  Json args = arguments.empty() ? Json::object() : parse_bounded_json_or_discarded(arguments);
  if (args.is_discarded() || !args.is_object())
    return error_outcome("the arguments of " + name + " are not a valid JSON object: " + arguments.substr(0, 200) +
                         " -- call the tool again with a JSON object matching its schema");
  std::optional<std::function<ToolOutcome()>> work;
  try {
    work = tool_work(name, args);
  } catch (const Error& e) {
    return error_outcome(name + ": " + e.what());  // bad arguments: the model can fix them
  }
  if (!work)
    return error_outcome("unknown tool '" + name +
                         "' (tools: run_code, write_file, read_file, list_skills)");
  try {
    return (*work)();
  } catch (const std::exception& e) {
    // The runner could not be started or answered garbage: the model cannot fix that, but
    // the run should end with an answer saying so rather than abort.
    return error_outcome(name + " failed in sandcell: " + e.what());
  }
}

std::optional<std::function<ToolOutcome()>> AgentTools::tool_work(const std::string& name,
                                                                  const Json& args) {
  if (name == "run_code") {
    std::string language = args.contains("language") && args["language"].is_string()
                               ? args["language"].get<std::string>()
                               : settings_.skill;
    return
        [this, language, code = required_string(args, "code")] { return run_code(language, code); };
  }
  if (name == "write_file") {
    std::string path = required_string(args, "path");
    return [this, path, content = required_string(args, "content")] {
      return write_file(path, content);
    };
  }
  if (name == "read_file")
    return [this, path = required_string(args, "path")] { return read_file(path); };
  if (name == "list_skills") return [this] { return list_skills(); };
  return std::nullopt;
}

ToolOutcome AgentTools::run_code(const std::string& language, const std::string& code) {
  Json request{{"language", language}, {"code", code}, {"session", settings_.session}};
  if (!settings_.net.empty()) request["net"] = settings_.net;
  if (settings_.timeout_s > 0) request["timeout"] = settings_.timeout_s;
  Json result = executor_.run(request);
  return {compact_result(result).dump(), failed(result), result};
}

ToolOutcome AgentTools::write_file(const std::string& path, const std::string& content) {
  Json result = put_workspace_file(executor_, {settings_.skill, settings_.session}, path, content);
  if (failed(result)) return {compact_result(result).dump(), true, result};
  return {Json{{"written", path}}.dump(), false, result};
}

ToolOutcome AgentTools::read_file(const std::string& path) {
  FetchedFile file = get_workspace_file(executor_, {settings_.skill, settings_.session}, path);
  if (!file.bytes) {
    Json out = compact_result(file.result);
    out["error"] = file.result.contains("error") ? file.result["error"] : Json("no such file: " + path);
    return {out.dump(), true, file.result};
  }
  return {Json{{"path", path}, {"content", head_and_tail(*file.bytes, 20000)}}.dump(-1, ' ', false, Json::error_handler_t::replace),
          false, file.result};
}

ToolOutcome AgentTools::list_skills() {
  return {executor_.list_skills().dump(), false, std::nullopt};
}

}  // namespace sandcell::agent_service
