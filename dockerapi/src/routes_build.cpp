// docker build (the classic builder's `POST /build`): the context tar, spooled by the HTTP server
// to an unlinked file of the store (bounded like `docker load`), is extracted by the layer
// extractor into a job directory (hostile entries refused: a 400 before anything runs); then
// `sandcell-serve docker-build-job DIR` (build_job.cpp) runs sandcell's own builder in a process
// of its own, as `sandcell build` would, and writes Docker's JSON lines, which are relayed.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "api_error.hpp"
#include "container_archive.hpp"
#include "container_store.hpp"
#include "job_lines.hpp"
#include "routes.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/number.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/rootfs_builder/registry_config.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/runtime/owned_temp_dir.hpp"

extern char** environ;

namespace sandcell::dockerapi {

HttpReply build_from_context(const ApiContext& api, const HttpRequest& request);

namespace {

using nlohmann::json;

// A query parameter holding a JSON object of strings (buildargs, labels); null values (Docker's
// "take it from the daemon's environment") are left out.
std::map<std::string, std::string> string_map(const HttpRequest& request, const std::string& name) {
  std::map<std::string, std::string> out;
  std::string text = request.param(name).value_or("");
  if (text.empty() || text == "null") return out;
  json j = parse_bounded_json_or_discarded(text);
  if (!j.is_object()) throw bad_request(name + " must be a JSON object of strings");
  for (auto& [key, value] : j.items()) {
    if (value.is_null()) continue;
    if (!value.is_string()) throw bad_request(name + ": the value of " + key + " is not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// The build's own limits and namespaces are sandcell's: a parameter that asks for others is
// refused, never silently dropped. The CLI sends most of them with empty or zero values.
void refuse_unsupported(const HttpRequest& request) {
  for (const char* name : {"cpusetcpus", "cpusetmems", "cgroupparent", "extrahosts", "securityopt", "remote",
                           "isolation", "outputs"}) {
    std::string value = request.param(name).value_or("");
    if (!value.empty() && value != "[]" && value != "null" && value != "default")
      throw bad_request(std::string(name) + " is not supported by sandcell's builder");
  }
  for (const char* name : {"cpushares", "cpuquota", "cpuperiod", "shmsize"})
    if (std::string value = request.param(name).value_or("0"); !value.empty() && value != "0")
      throw bad_request(std::string(name) + " is not supported by sandcell's builder (RUN steps get one CPU's share)");
  if (request.flag("squash")) throw bad_request("squash is not supported by sandcell's builder");
  if (std::string ulimits = request.param("ulimits").value_or(""); !ulimits.empty() && ulimits != "null" && ulimits != "[]")
    throw bad_request("ulimits are not supported by sandcell's builder");
  if (request.param("version").value_or("1") == "2")
    throw bad_request("BuildKit (version=2) is not supported by sandcell: use the classic builder (DOCKER_BUILDKIT=0)");
  std::string network = request.param("networkmode").value_or("");
  if (!network.empty() && network != "default" && network != "none")
    throw bad_request("networkmode " + network + " is not supported: RUN steps of a Docker API build have no network");
  std::string platform = request.param("platform").value_or("");
  std::string own = "linux/" + rootfs_builder::host_architecture();
  if (!platform.empty() && platform != own)
    throw bad_request("platform " + platform + " is not supported: sandcell builds for " + own);
}

// The build request the job process reads (build_job.cpp).
json build_request(const HttpRequest& request) {
  refuse_unsupported(request);
  json tags = json::array();
  for (const std::string& tag : request.params("t")) {
    if (tag.empty()) continue;
    tags.push_back(rootfs_builder::parse_reference(tag).str());  // 400 for a bad one
  }
  std::string dockerfile = request.param("dockerfile").value_or("");
  if (dockerfile.empty()) dockerfile = "Dockerfile";
  int64_t memory = 0;
  if (auto text = request.param("memory"); text && !text->empty()) {
    auto parsed = parse_number<int64_t>(*text);
    if (!parsed || *parsed < 0) throw bad_request("invalid value for memory: " + *text);
    memory = *parsed;
  }
  if (auto swap = request.param("memswap"); swap && !swap->empty() && *swap != "0" && *swap != "-1" &&
                                            *swap != std::to_string(memory))
    throw bad_request("memswap: RUN steps never swap (give 0, -1 or the memory limit)");
  return {{"dockerfile", dockerfile}, {"tags", tags}, {"buildargs", string_map(request, "buildargs")},
          {"labels", string_map(request, "labels")}, {"target", request.param("target").value_or("")},
          {"nocache", request.flag("nocache")}, {"quiet", request.flag("q")}, {"memory", memory}};
}

// The context tar into <job>/context: every entry resolved inside it, links out, device nodes and
// ".." refused (400 naming the entry), setuid bits dropped, the unpacked size bounded.
void extract_context(const ApiContext& api, const HttpRequest& request, const std::string& context) {
  if (!request.body_file || request.body_bytes == 0) throw bad_request("the request body must be the build context (a tar)");
  rootfs_builder::ExtractStats stats;
  try {
    stats = rootfs_builder::extract_layer("/proc/self/fd/" + std::to_string(request.body_file->get()), context,
                                          {.whiteouts = rootfs_builder::WhiteoutHandling::Keep,
                                           .preserve_owner = false,
                                           .opaque_xattr = std::nullopt,
                                           .max_bytes = std::min(api.max_load_bytes, UINT64_MAX / 4) * 4,
                                           .drop_setid_bits = true});
  } catch (const Error& e) {
    std::string message = e.what();
    std::string body_path = "/proc/self/fd/" + std::to_string(request.body_file->get());
    for (size_t at; (at = message.find(body_path)) != std::string::npos;) message.replace(at, body_path.size(), "context");
    throw bad_request("build context: " + message);
  }
  refuse_rejected_entries(stats);
}

// X-Registry-Config (what `docker build` sends: the client's logins by registry) as the job
// reads it on its stdin: {"REGISTRY": {"username", "password"}}. A header that is not Docker's
// shape, or carries identity tokens: 400 naming it (rootfs_builder::parse_registry_config_header).
json registry_logins(const HttpRequest& request) {
  json out = json::object();
  auto header = request.headers.find("x-registry-config");
  if (header == request.headers.end()) return out;
  for (const auto& [registry, login] : rootfs_builder::parse_registry_config_header(header->second))
    out[registry] = {{"username", login.username}, {"password", login.password}};
  return out;
}

// `supervisor_exe --root STORE docker-build-job DIR` with its stdout into a pipe; returns the read
// end. The logins go to its stdin through a pipe (never into a file of the store).
runtime::UniqueFd spawn_build_job(const ApiContext& api, const std::string& job_dir, const json& logins, pid_t& pid) {
  int fds[2];
  check(pipe2(fds, O_CLOEXEC), "pipe");
  runtime::UniqueFd read_end(fds[0]), write_end(fds[1]);
  check(pipe2(fds, O_CLOEXEC), "pipe");
  runtime::UniqueFd logins_read(fds[0]), logins_write(fds[1]);
  std::vector<std::string> words = {api.supervisor_exe, "--root", api.store_root, "docker-build-job", job_dir};
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, logins_read.get(), STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), STDOUT_FILENO);
  int err = posix_spawn(&pid, api.supervisor_exe.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(err, "spawn the build process " + api.supervisor_exe);
  logins_read.reset();
  // Header-sized (the HTTP server bounds headers): it fits the pipe, the write does not block.
  const std::string text = logins.dump() + "\n";
  for (size_t done = 0; done < text.size();) {
    ssize_t n = write(logins_write.get(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the job is gone already: its own error says why
    done += static_cast<size_t>(n);
  }
  return read_end;
}

// The job's lines, relayed as they come; an error line before any other is the HTTP error.
void relay_build(JobLines& lines, runtime::UniqueFd output, pid_t pid) {
  bool ended = false;
  {
    FILE* in = fdopen(output.release(), "r");
    char* line = nullptr;
    size_t capacity = 0;
    while (getline(&line, &capacity, in) > 0) {
      json j = parse_bounded_json_or_discarded(line);
      if (!j.is_object()) continue;
      if (j.contains("errorDetail")) {
        std::string message = j["errorDetail"].value("message", "build failed");
        lines.fail(j["errorDetail"].value("code", 500), message);
        ended = true;
        continue;
      }
      lines.write(j);
    }
    free(line);
    fclose(in);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ended && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    throw ApiError{500, "the build process ended without a result (" +
                            (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                                 : "exit " + std::to_string(WEXITSTATUS(status))) + ")"};
}

}  // namespace

HttpReply build_from_context(const ApiContext& api, const HttpRequest& request) {
  json job = build_request(request);
  json logins = registry_logins(request);
  rootfs_builder::ImageStore store(api.store_root);
  // Owned (flock) while the server extracts into it and until the job has ended, so a prune
  // meanwhile does not take it for a killed builder's leftovers; the job holds a store lease
  // of its own. Removed when the job ends, whichever way.
  auto job_dir = std::make_shared<runtime::OwnedTempDir>(store.tmp_dir(), "docker-build-");
  check(mkdir((job_dir->path() + "/context").c_str(), 0700), "mkdir " + job_dir->path() + "/context");
  extract_context(api, request, job_dir->path() + "/context");
  write_json_atomically(job_dir->path() + "/request.json", job);
  pid_t pid = -1;
  auto output = std::make_shared<runtime::UniqueFd>(spawn_build_job(api, job_dir->path(), logins, pid));
  return run_job([output, pid, job_dir](JobLines& lines) { relay_build(lines, std::move(*output), pid); });
}

}  // namespace sandcell::dockerapi
