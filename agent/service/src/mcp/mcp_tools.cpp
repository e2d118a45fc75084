#include "mcp/mcp_tools.hpp"

#include <functional>
#include <optional>

#include "agent/compact_result.hpp"
#include "executor/base64.hpp"
#include "executor/workspace_files.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::agent_service::mcp {
namespace {

Json prop(const char* type, const char* description) { return {{"type", type}, {"description", description}}; }

Json schema(Json properties, Json required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)}};
}

Json text_content(const std::string& text) { return {{"type", "text"}, {"text", text}}; }

Json tool_result(Json content, bool is_error) { return {{"content", std::move(content)}, {"isError", is_error}}; }

Json error_result(const std::string& message) { return tool_result(Json::array({text_content(message)}), true); }

std::string string_arg(const Json& args, const char* key, bool required = true) {
  if (args.contains(key) && args[key].is_string()) return args[key];
  if (required) throw Error::invalid(std::string("argument '") + key + "' (a string) is required");
  return "";
}

// stdout and stderr in full (up to a cap), then the compact summary for the agent.
Json run_code_result(const Json& result) {
  Json content = Json::array();
  for (const char* stream : {"stdout", "stderr"})
    if (result.contains(stream) && result[stream].is_string() && !result[stream].get<std::string>().empty())
      content.push_back(text_content(std::string(stream) + ":\n" + head_and_tail(result[stream].get<std::string>(), 60000)));
  Json summary = compact_result(result, 0);
  summary.erase("stdout");
  summary.erase("stderr");
  content.push_back(text_content(summary.dump(-1, ' ', false, Json::error_handler_t::replace)));
  if (result.contains("artifacts") && result["artifacts"].is_array())
    for (const Json& a : result["artifacts"])
      if (a.is_object() && a.value("mime", "") == "image/png" && a.contains("base64") && a["base64"].is_string())
        content.push_back({{"type", "image"}, {"data", a["base64"]}, {"mimeType", "image/png"}});
  return tool_result(content, result.value("status", Json("")) != "ok");
}

// Each tool in two phases: its arguments read and checked here (Error::invalid: the client's to
// fix), then the work, returned to run (its failures are not).
using ToolWork = std::function<Json()>;

ToolWork run_code(Executor& executor, const std::string& default_skill, const Json& args,
                  std::stop_token stop) {
  Json request{{"code", string_arg(args, "code")}};
  std::string language = string_arg(args, "language", false);
  request["language"] = language.empty() ? default_skill : language;
  if (args.contains("timeout")) {
    if (!args["timeout"].is_number() || args["timeout"].get<double>() <= 0)
      throw Error::invalid("argument 'timeout' must be a positive number of seconds");
    request["timeout"] = args["timeout"];
  }
  for (const char* key : {"session", "net", "stdin", "disk"})
    if (args.contains(key)) request[key] = string_arg(args, key);
  if (args.contains("packages")) request["packages"] = args["packages"];
  return [&executor, request, stop] {
    Json result = executor.run(request, stop);
    if (is_request_error(result))
      return error_result(result["error"].value("message", "the request was refused"));
    return run_code_result(result);
  };
}

ToolWork upload_file(Executor& executor, const std::string& default_skill, const Json& args) {
  std::string path = string_arg(args, "path");
  std::optional<std::string> bytes;
  if (args.contains("content_base64")) {
    bytes = base64_decode(string_arg(args, "content_base64"));
    if (!bytes) throw Error::invalid("argument 'content_base64' is not valid base64");
  } else {
    bytes = string_arg(args, "content");
  }
  std::string skill = string_arg(args, "skill", false);
  WorkspaceTarget where{skill.empty() ? default_skill : skill, string_arg(args, "session")};
  return [&executor, where, path, bytes = std::move(*bytes)] {
    Json result = put_workspace_file(executor, where, path, bytes);
    if (is_request_error(result))
      return error_result("upload refused: " + result["error"].value("message", ""));
    if (result.value("status", Json("")) != "ok")
      return error_result("upload failed: " + compact_result(result).dump());
    return tool_result(Json::array({text_content("wrote " + std::to_string(bytes.size()) +
                                                 " bytes to /workspace/" + path)}),
                       false);
  };
}

bool looks_like_text(const std::string& bytes) { return bytes.find('\0') == std::string::npos; }

// download_file's answer: the file as an image, text or a binary blob.
Json downloaded(const FetchedFile& file, const std::string& path) {
  if (is_request_error(file.result)) return error_result("download refused: " + file.result["error"].value("message", ""));
  if (!file.bytes) return error_result("no such file in the session: " + path + " " + compact_result(file.result).dump());
  const std::string& bytes = *file.bytes;
  if (bytes.starts_with("\x89PNG\r\n\x1a\n"))
    return tool_result(Json::array({{{"type", "image"}, {"data", base64_encode(bytes)}, {"mimeType", "image/png"}}}), false);
  if (looks_like_text(bytes))
    return tool_result(Json::array({text_content(bytes)}), false);  // invalid UTF-8 is replaced when sent
  return tool_result(Json::array({{{"type", "resource"},
                                   {"resource", {{"uri", "file:///workspace/" + path},
                                                 {"mimeType", "application/octet-stream"},
                                                 {"blob", base64_encode(bytes)}}}}}),
                     false);
}

ToolWork download_file(Executor& executor, const std::string& default_skill, const Json& args) {
  std::string path = string_arg(args, "path");
  std::string skill = string_arg(args, "skill", false);
  WorkspaceTarget where{skill.empty() ? default_skill : skill, string_arg(args, "session")};
  return [&executor, where, path] {
    return downloaded(get_workspace_file(executor, where, path), path);
  };
}

// run_code's `net`, as wide as the operator allows.
Json net_property(const std::string& allowed_net) {
  if (allowed_net == "full")
    return prop("string", "network: none, allow:HOST[,HOST...] (only those hosts, DNS-checked) or full; "
                          "default: the language's own");
  if (allowed_net.starts_with("allow:"))
    return {{"type", "string"},
            {"examples", Json::array({"none", allowed_net})},
            {"description", "network: none, or allow: with hosts among " + allowed_net.substr(6) +
                                " (the operator's limit: --allowed-net " + allowed_net + "); default: the language's own within it"}};
  return {{"type", "string"}, {"enum", Json::array({"none"})}, {"description", "network: none (the operator allows no network)"}};
}

// The work of tool `name` with its arguments checked; nullopt: no such tool.
std::optional<ToolWork> tool_work(Executor& executor, const std::string& default_skill,
                                  const std::string& name, const Json& args, std::stop_token stop) {
  if (name == "run_code") return run_code(executor, default_skill, args, stop);
  if (name == "list_skills")
    return [&executor] {
      return tool_result(Json::array({text_content(executor.list_skills().dump(2))}), false);
    };
  if (name == "list_sessions")
    return [&executor] {
      return tool_result(Json::array({text_content(executor.list_sessions().dump(2))}), false);
    };
  if (name == "remove_session") {
    return [&executor, session = string_arg(args, "session")] {
      executor.remove_session(session);
      return tool_result(Json::array({text_content("removed session " + session)}), false);
    };
  }
  if (name == "upload_file") return upload_file(executor, default_skill, args);
  if (name == "download_file") return download_file(executor, default_skill, args);
  return std::nullopt;
}

}  // namespace

Json tool_list(const std::string& allowed_net) {
  Json session = prop("string", "session id: files (and, for python, variables) persist across calls with the same id");
  Json skill = prop("string", "the skill whose sandbox moves the file (default python)");
  return Json::array({
      {{"name", "run_code"},
       {"description",
        "Run code in an isolated sandcell sandbox (no network unless allowed) and return its "
        "stdout, "
        "stderr, status, error class and artifacts (PNG figures as images)."},
       {"inputSchema",
        schema({{"language", prop("string", "python, node, bash, c, cpp (see list_skills)")},
                {"code", prop("string", "the program")},
                {"timeout", prop("number", "wall-clock limit in seconds")},
                {"session", session},
                {"disk", prop("string",
                              "most the workspace may hold, e.g. 256m (default 1g, at most "
                              "the operator's --max-disk); past it writes fail with ENOSPC")},
                {"net", net_property(allowed_net)}},
               {"language", "code"})}},
      {{"name", "list_skills"},
       {"description", "List the languages code can run in."},
       {"inputSchema", schema(Json::object(), Json::array())}},
      {{"name", "list_sessions"},
       {"description", "List the live sessions."},
       {"inputSchema", schema(Json::object(), Json::array())}},
      {{"name", "remove_session"},
       {"description", "Remove a session and its files."},
       {"inputSchema", schema({{"session", session}}, {"session"})}},
      {{"name", "upload_file"},
       {"description",
        "Write a file into a session's /workspace (text as content, binary as content_base64)."},
       {"inputSchema", schema({{"session", session},
                               {"path", prop("string", "path under /workspace")},
                               {"content", prop("string", "text content")},
                               {"content_base64", prop("string", "binary content, base64")},
                               {"skill", skill}},
                              {"session", "path"})}},
      {{"name", "download_file"},
       {"description",
        "Read a file from a session's /workspace (text, PNG image, or binary as a resource blob)."},
       {"inputSchema", schema({{"session", session},
                               {"path", prop("string", "path under /workspace")},
                               {"skill", skill}},
                              {"session", "path"})}},
  });
}

std::optional<Json> call_tool(Executor& executor, const std::string& default_skill,
                              const std::string& name, const Json& arguments,
                              std::stop_token stop) {
  const Json args = arguments.is_object() ? arguments : Json::object();
  std::optional<ToolWork> work;
  try {
    work = tool_work(executor, default_skill, name, args, stop);
  } catch (const Error& e) {
    return error_result(name + ": " + e.what());  // bad arguments: the client can fix them
  }
  if (!work) return std::nullopt;
  try {
    return (*work)();
  } catch (const std::exception& e) {
    return error_result(name + " failed: " + e.what());
  }
}

}  // namespace sandcell::agent_service::mcp
