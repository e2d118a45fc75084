// `sandcell serve`: the HTTP API (agent/service/http_api).
//
// Compiled twice (cli/CMakeLists.txt). In sandcell-images, SANDCELL_SERVES_HTTP is 0: the
// command is parsed there (so `sandcell --help` and bad options read as for any command) and then
// handed, on the same command line, to sandcell-serve, the same program linked with cpp-httplib.
// Loading cpp-httplib and what it needs (libstdc++, libssl, zlib, brotli) cost every start of
// sandcell-images, i.e. every `sandcell code` an agent makes, for a server that starts once.
#include <unistd.h>

#include <cstdlib>

#include "commands.hpp"
#include "pool_flags.hpp"
#include "request_ceiling_flags.hpp"
#include "sandcell/agent_service/http_api.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/spec.hpp"
#if SANDCELL_SERVES_HTTP
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/dockerapi/server.hpp"
#endif

namespace sandcell::cli {
namespace {

// The --docker-api flags, as given (sandcell-images parses them too, without the library).
struct DockerApiFlags {
  std::string listen, group;
  std::string max_load = "4g";
  // A container's log (docs/docker-api.md, "Log: bounded and rotated").
  std::string log_max_size = "20m", max_log = "1g";
  uint32_t log_max_file = 5;
  bool allow_host_network = false;
};

// A process the Docker API server starts as `NAME DIR` (run(DIR, store root) in sandcell-serve):
// not a command for people, hence no group (hidden).
using DockerApiProcess = int (*)(const std::string& dir, const std::string& store_root);
void add_docker_api_process(CLI::App& app, Action& action, [[maybe_unused]] const Globals& globals, const char* name,
                            [[maybe_unused]] DockerApiProcess run) {
  auto* cmd = app.add_subcommand(name, "")->group("");
  auto dir = std::make_shared<std::string>();
  cmd->add_option("dir", *dir)->required();
#if SANDCELL_SERVES_HTTP
  cmd->callback([&action, dir, globals, run] {
    action = [dir, globals, run] { return run(*dir, globals->store_root()); };
  });
#else
  cmd->callback([&action] {
    action = []() -> int { hand_over_to("sandcell-serve", "the Docker API lives in sandcell-serve"); };
  });
#endif
}

}  // namespace

void add_serve_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* cmd = app.add_subcommand("serve", "Serve the code runner over HTTP (JSON, NDJSON streaming)");
  auto options = std::make_shared<agent_service::HttpApiOptions>();
  auto bin = std::make_shared<std::string>();
  auto ceilings = std::make_shared<agent::RequestCeilings>();
  auto workspace = std::make_shared<WorkspaceFlags>();
  auto max_body_mb = std::make_shared<size_t>(32);
  options->max_running = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  auto docker = std::make_shared<DockerApiFlags>();
  cmd->add_option("--listen", options->listen, "HOST:PORT or unix:PATH");
  cmd->add_option("--docker-api", docker->listen,
                  "Serve the Docker Engine API instead, on unix:PATH (docker CLI, docker-py: DOCKER_HOST=unix://PATH)");
  cmd->add_option("--docker-api-group", docker->group, "Group that may use the --docker-api socket (0660) [root]");
  cmd->add_option("--docker-api-max-load", docker->max_load,
                  "Largest image archive `docker load` may send (bytes, k/m/g); more gets 413")
      ->capture_default_str();
  cmd->add_option("--docker-api-log-max-size", docker->log_max_size,
                  "A container's log without LogConfig max-size (`docker run --log-opt max-size=`): past it the "
                  "log rotates, as Docker's json-file and local drivers do; the default is Docker's local driver's (k/m/g)")
      ->capture_default_str();
  cmd->add_option("--docker-api-log-max-file", docker->log_max_file,
                  "A container's log without LogConfig max-file: how many files (the current and the rotated "
                  "ones) are kept: a container's log takes at most max-size x max-file of disk, 100 MB by default (1 to 100)")
      ->capture_default_str()->check(CLI::Range(1, 100));
  cmd->add_option("--docker-api-max-log", docker->max_log,
                  "Most disk a container's log may ask for (max-size x max-file); more gets 400 (k/m/g)")
      ->capture_default_str();
  cmd->add_flag("--docker-allow-host-network", docker->allow_host_network,
               "Let Docker API containers use NetworkMode host (the host's network namespace; the rest of the "
               "sandbox stays): only for trusted callers. Without it, refused");
  cmd->add_option("--token", options->token, "Bearer token clients must send on TCP [$SANDCELL_TOKEN]");
  cmd->add_option("--max-running", options->max_running, "Executions at once [CPU count]")->check(CLI::PositiveNumber);
  cmd->add_option("--max-queued", options->max_queued, "Executions waiting; more get 429")->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--max-body-mb", *max_body_mb, "Largest request body in MiB; more get 413")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--header-timeout", options->head_timeout_seconds,
                  "Seconds a client has to send a request's whole head; slower ones are closed")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-connections-per-client", options->max_connections_per_client,
                  "Connections of one client address that may wait for a request head (slow ones); beyond it 1 s each, from 4x on 429")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--skill", options->default_skill, "Skill for file transfers without ?skill=")->capture_default_str();
  add_ceiling_flags(cmd, *ceilings, true);
  add_workspace_flags(cmd, *workspace);
  auto pool = std::make_shared<PoolFlags>();
  add_pool_flags(cmd, *pool);
  cmd->add_option(
      "--sandcell-bin", *bin,
      "The sandcell executable that runs code [$SANDCELL_BIN, sandcell-images next to this one]");
  cmd->footer(
      "Examples:\n"
      "  SANDCELL_TOKEN=secret sandcell serve --listen 127.0.0.1:8765\n"
      "  sandcell serve --listen unix:/run/sandcell.sock\n"
      "  sandcell serve --docker-api unix:/run/sandcell/docker.sock   # then DOCKER_HOST=unix:///run/sandcell/docker.sock docker run ...\n"
      "  curl -H 'Authorization: Bearer secret' -d '{\"skill\":\"python\",\"code\":\"print(1)\"}' http://127.0.0.1:8765/v1/run\n"
      "SIGTERM/SIGINT stop accepting and finish the requests already running.");
  // The Docker API's own processes: the supervisor of one container (dockerapi/src/supervisor.cpp)
  // and the process behind `POST /build` (dockerapi/src/build_job.cpp).
#if SANDCELL_SERVES_HTTP
  add_docker_api_process(app, action, globals, "docker-container-supervisor", dockerapi::supervise_container);
  add_docker_api_process(app, action, globals, "docker-build-job", dockerapi::run_build_job);
#else
  add_docker_api_process(app, action, globals, "docker-container-supervisor", nullptr);
  add_docker_api_process(app, action, globals, "docker-build-job", nullptr);
#endif
  cmd->callback([&action, options, bin, ceilings, workspace, max_body_mb, globals, docker, pool] {
    if (options->listen.empty() == docker->listen.empty())
      throw CLI::ValidationError("serve", "give one of --listen (sandcell's API) or --docker-api (Docker's)");
#if SANDCELL_SERVES_HTTP
    if (!docker->listen.empty()) {
      action = [docker, globals, ceilings, workspace] {
        uint64_t max_load = runtime::parse_size(docker->max_load, "--docker-api-max-load");
        check_workspace_flags(*workspace, *ceilings);
        // --disk and --max-disk bound each container's writable layer (StorageOpt size).
        std::optional<uint64_t> max_disk;
        if (ceilings->disk) max_disk = runtime::parse_size(*ceilings->disk, "--max-disk");
        uint64_t disk = workspace->disk ? runtime::parse_size(*workspace->disk, "--disk")
                                        : std::min<uint64_t>(1ull << 30, max_disk.value_or(UINT64_MAX));
        if (disk < kMinDiskBytes) throw Error::invalid("--disk " + std::to_string(disk) + " is too small (at least 8m)");
        uint64_t log_size = runtime::parse_size(docker->log_max_size, "--docker-api-log-max-size");
        uint64_t max_log = runtime::parse_size(docker->max_log, "--docker-api-max-log");
        if (log_size < 1024) throw Error::invalid("--docker-api-log-max-size " + docker->log_max_size + " is too small (at least 1k)");
        if (static_cast<long double>(log_size) * docker->log_max_file > static_cast<long double>(max_log))
          throw Error::invalid("--docker-api-log-max-size x --docker-api-log-max-file is over --docker-api-max-log " +
                               docker->max_log);
        return dockerapi::serve_docker_api_until_signal({.listen = docker->listen,
                                                         .group = docker->group,
                                                         .store_root = globals->store_root(),
                                                         .supervisor_exe = {},
                                                         .max_load_bytes = max_load,
                                                         .default_disk_bytes = disk,
                                                         .max_disk_bytes = max_disk,
                                                         .log_max_size = log_size,
                                                         .log_max_file = docker->log_max_file,
                                                         .max_log_bytes = max_log,
                                                         .allow_host_network = docker->allow_host_network});
      };
      return;
    }
    action = [options, bin, ceilings, workspace, max_body_mb, globals, pool] {
      if (options->token.empty() && std::getenv("SANDCELL_TOKEN")) options->token = std::getenv("SANDCELL_TOKEN");
      options->max_body_bytes = *max_body_mb << 20;
      agent::check_ceilings(*ceilings);  // a bad one fails here, not at the first request
      check_workspace_flags(*workspace, *ceilings);
      auto executor = agent_service::make_subprocess_executor(
          executor_options(*bin, globals->root, *ceilings, *workspace, pool_options(*pool)));
      return agent_service::serve_http_until_signal(*executor, *options);
    };
#else
    action = []() -> int {
      hand_over_to("sandcell-serve",
                   "the HTTP API lives in sandcell-serve, installed next to sandcell");
    };
#endif
  });
}

}  // namespace sandcell::cli
