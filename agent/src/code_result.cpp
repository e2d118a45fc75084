// CodeResult → the JSON other tools read (agent/README.md), and base64 through OpenSSL.
#include "sandcell/agent/code_result.hpp"

#include <openssl/evp.h>

#include <nlohmann/json.hpp>

#include "sandcell/base/error.hpp"

namespace sandcell::agent {
namespace {

using nlohmann::json;

json error_info_json(const ErrorInfo& e) {
  json j = {{"class", e.kind}, {"message", e.message}, {"file", nullptr}, {"line", nullptr}};
  if (e.file) j["file"] = *e.file;
  if (e.line) j["line"] = *e.line;
  if (e.module) j["module"] = *e.module;
  if (e.exception) j["exception"] = *e.exception;
  if (e.frame) j["frame"] = *e.frame;
  return j;
}

json file_json(const WorkspaceFile& f, bool with_mime) {
  json j = {{"path", f.path}, {"size", f.size}, {"base64", nullptr}};
  if (with_mime) j["mime"] = f.mime;
  if (f.content) j["base64"] = base64_encode(*f.content);
  if (!f.note.empty()) j["note"] = f.note;
  return j;
}

json phase_json(const PhaseResult& p) {
  return {{"name", p.name},
          {"status", runtime::to_string(p.result.status)},
          {"exit_code", runtime::exit_code_for(p.result)},
          {"wall_ms", p.result.wall_ms}};
}

}  // namespace

json to_json(const CodeResult& r) {
  const PhaseResult& last = r.phases.back();
  json report = runtime::to_json(last.result);
  report.erase("stdout");
  report.erase("stderr");
  json j = {{"skill", r.skill},
            {"session", r.session ? json(*r.session) : json(nullptr)},
            {"status", runtime::to_string(last.result.status)},
            {"exit_code", runtime::exit_code_for(last.result)},
            {"phase", last.name},
            {"stdout", last.stdout_text},
            {"stderr", last.stderr_text},
            {"error", r.error ? error_info_json(*r.error) : json(nullptr)},
            {"usage",
             {{"wall_ms", last.result.wall_ms},
              {"cpu_ms", last.result.cpu_ms},
              {"peak_memory_bytes", last.result.peak_memory_bytes},
              {"disk_bytes", last.result.disk_usage_bytes ? json(*last.result.disk_usage_bytes)
                                                          : json(nullptr)}}},
            {"report", report},
            {"phases", json::array()},
            {"artifacts", json::array()},
            {"files", json::array()}};
  for (const PhaseResult& p : r.phases) j["phases"].push_back(phase_json(p));
  for (const WorkspaceFile& f : r.artifacts) j["artifacts"].push_back(file_json(f, true));
  for (const WorkspaceFile& f : r.files) j["files"].push_back(file_json(f, false));
  if (r.session) j["lost_variables"] = r.lost_variables;
  return j;
}

json error_json(const std::string& message) { return {{"error", {{"class", "sandcell"}, {"message", message}}}}; }

int exit_code_for(const CodeResult& r) { return runtime::exit_code_for(r.phases.back().result); }

std::string base64_encode(std::string_view bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text, const std::string& what) {
  // EVP_DecodeBlock wants whole quanta and counts '=' padding as zero bytes: strip them after.
  if (text.size() % 4 != 0) throw Error::invalid(what + " is not base64 (length not a multiple of 4)");
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw Error::invalid(what + " is not base64");
  size_t pad = 0;
  for (size_t i = text.size(); i > 0 && text[i - 1] == '=' && pad < 2; --i) ++pad;
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

}  // namespace sandcell::agent
