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
#include "request_ceiling_flags.hpp"
#include "sandcell/agent_service/http_api.hpp"

namespace sandcell::cli {

void add_serve_command(CLI::App& app, Action& action, const Globals& globals) {
  auto* cmd = app.add_subcommand("serve", "Serve the code runner over HTTP (JSON, NDJSON streaming)");
  auto options = std::make_shared<agent_service::HttpApiOptions>();
  auto bin = std::make_shared<std::string>();
  auto ceilings = std::make_shared<agent::RequestCeilings>();
  auto max_body_mb = std::make_shared<size_t>(32);
  options->max_running = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  cmd->add_option("--listen", options->listen, "HOST:PORT or unix:PATH")->required();
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
  cmd->add_option(
      "--sandcell-bin", *bin,
      "The sandcell executable that runs code [$SANDCELL_BIN, sandcell-images next to this one]");
  cmd->footer(
      "Examples:\n"
      "  SANDCELL_TOKEN=secret sandcell serve --listen 127.0.0.1:8765\n"
      "  sandcell serve --listen unix:/run/sandcell.sock\n"
      "  curl -H 'Authorization: Bearer secret' -d '{\"skill\":\"python\",\"code\":\"print(1)\"}' http://127.0.0.1:8765/v1/run\n"
      "SIGTERM/SIGINT stop accepting and finish the requests already running.");
  cmd->callback([&action, options, bin, ceilings, max_body_mb, globals] {
#if SANDCELL_SERVES_HTTP
    action = [options, bin, ceilings, max_body_mb, globals] {
      if (options->token.empty() && std::getenv("SANDCELL_TOKEN")) options->token = std::getenv("SANDCELL_TOKEN");
      options->max_body_bytes = *max_body_mb << 20;
      agent::check_ceilings(*ceilings);  // a bad one fails here, not at the first request
      auto executor = agent_service::make_subprocess_executor({*bin, globals->root, ceiling_args(*ceilings)});
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
