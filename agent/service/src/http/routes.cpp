#include "http/routes.hpp"

#include <openssl/crypto.h>

#include <stop_token>

#include "executor/workspace_files.hpp"
#include "http/guarded_server.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::agent_service {
namespace {

void send_json(httplib::Response& res, int status, const Json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

void send_error(httplib::Response& res, int status, const std::string& message) {
  send_json(res, status, {{"error", {{"class", "request"}, {"message", message}}}});
}

// Takes a running slot or answers 429; the slot is released when the returned ticket dies.
std::shared_ptr<AdmissionGate::Ticket> admit(AdmissionGate& gate, httplib::Response& res) {
  std::shared_ptr<AdmissionGate::Ticket> ticket = gate.enter();
  if (!ticket) {
    res.set_header("Retry-After", "1");
    send_error(res, 429, "too many executions running and queued; retry later");
  }
  return ticket;
}

bool token_matches(const std::string& header, const std::string& token) {
  const std::string expected = "Bearer " + token;
  // Constant time: the comparison must not tell an attacker how many bytes were right.
  return header.size() == expected.size() && CRYPTO_memcmp(header.data(), expected.data(), header.size()) == 0;
}

std::string ndjson(const Json& event) { return event.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

void run_streaming(httplib::Response& res, Executor& executor, Json request, std::shared_ptr<AdmissionGate::Ticket> ticket) {
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [&executor, request = std::move(request), ticket](size_t, httplib::DataSink& sink) {
        // A client that went away stops the run at its next output: the sandbox and everything
        // in it is killed rather than left running for nobody.
        std::stop_source stop;
        auto write = [&sink, &stop](const std::string& line) {
          if (!sink.is_writable() || !sink.write(line.data(), line.size())) stop.request_stop();
        };
        Json result;
        try {
          result = executor.run_streaming(request, [&](std::string_view stream, std::string_view data) {
            write(ndjson({{"type", stream}, {"data", data}}));
          }, stop.get_token());
        } catch (const std::exception& e) {
          result = {{"error", {{"class", "sandcell"}, {"message", e.what()}}}};
        }
        write(ndjson({{"type", "end"}, {"result", result}}));
        sink.done();
        return true;
      });
}

void send_too_large(httplib::Response& res) {
  res.status = 413;
  res.set_header("Connection", "close");
  res.set_content(R"({"error":{"class":"request","message":"request body too large"}})" "\n", "application/json");
  GuardedServer::close_after_answer();
}

// A chunked body is bounded on the wire by GuardedServer (a little above the limit, for the
// chunk framing); the decoded body is held to the limit exactly here.
bool body_within_limit(const httplib::Request& req, httplib::Response& res, const HttpApiOptions& options) {
  if (req.body.size() <= options.max_body_bytes) return true;
  send_too_large(res);
  return false;
}

void handle_run(const httplib::Request& req, httplib::Response& res, Executor& executor, AdmissionGate& gate,
                const HttpApiOptions& options) {
  if (!body_within_limit(req, res, options)) return;
  Json request = parse_bounded_json_or_discarded(req.body);
  if (request.is_discarded() || !request.is_object()) return send_error(res, 400, "the body must be a JSON object");
  const Json stream = request.value("stream", Json(false));
  if (!stream.is_boolean()) return send_error(res, 400, "\"stream\" must be true or false");
  request.erase("stream");
  auto ticket = admit(gate, res);
  if (!ticket) return;
  if (stream.get<bool>()) return run_streaming(res, executor, std::move(request), std::move(ticket));
  Json result = executor.run(request);
  send_json(res, is_request_error(result) ? 400 : 200, result);
}

void add_session_routes(httplib::Server& server, Executor& executor, AdmissionGate& gate, const HttpApiOptions& options) {
  server.Get("/v1/sessions", [&](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, executor.list_sessions());
  });
  server.Delete(R"(/v1/sessions/([A-Za-z0-9_][A-Za-z0-9_.-]*))", [&](const httplib::Request& req, httplib::Response& res) {
    executor.remove_session(req.matches[1]);
    send_json(res, 200, {{"removed", std::string(req.matches[1])}});
  });
  auto target = [&options](const httplib::Request& req) {
    std::string skill = req.has_param("skill") ? req.get_param_value("skill") : options.default_skill;
    return WorkspaceTarget{skill, req.matches[1]};
  };
  const char* file_route = R"(/v1/sessions/([A-Za-z0-9_][A-Za-z0-9_.-]*)/files/(.+))";
  server.Put(file_route, [&, target](const httplib::Request& req, httplib::Response& res) {
    if (!body_within_limit(req, res, options)) return;
    auto ticket = admit(gate, res);
    if (!ticket) return;
    Json result = put_workspace_file(executor, target(req), req.matches[2], req.body);
    if (result.value("status", Json("")) != "ok") return send_json(res, 400, result);
    send_json(res, 200, {{"path", std::string(req.matches[2])}, {"size", req.body.size()}});
  });
  server.Get(file_route, [&, target](const httplib::Request& req, httplib::Response& res) {
    auto ticket = admit(gate, res);
    if (!ticket) return;
    FetchedFile file = get_workspace_file(executor, target(req), req.matches[2]);
    if (!file.bytes) return send_json(res, 404, {{"error", {{"class", "not_found"}, {"message", "no such file: " + std::string(req.matches[2])}}}, {"result", file.result}});
    res.set_content(*file.bytes, "application/octet-stream");
  });
}

// A request that carries a body, by either framing.
bool carries_body(const httplib::Request& req) {
  return req.has_header("Transfer-Encoding") || req.get_header_value<uint64_t>("Content-Length") > 0;
}

}  // namespace

void add_request_guards(httplib::Server& server, const HttpApiOptions& options, bool tcp) {
  // Runs before httplib reads the body: a client without the token, or with a body over the
  // limit, is answered without us reading what it sends, and the connection is closed after
  // the answer: the unread body must never be read as the next request (smuggling). Without
  // the token a client gets /v1/health, bodiless, and one answer per connection: nothing it
  // sends or fails to read can keep a worker thread (a body trickled in, or pipelined answers
  // it never reads until the socket buffer blocks the writer).
  server.set_pre_routing_handler([&options, tcp](const httplib::Request& req, httplib::Response& res) {
    const bool authenticated = !tcp || token_matches(req.get_header_value("Authorization"), options.token);
    if (!authenticated && (req.path != "/v1/health" || carries_body(req))) {
      res.status = 401;
      res.set_header("WWW-Authenticate", "Bearer");
      res.set_header("Connection", "close");
      res.set_content(R"({"error":{"class":"auth","message":"missing or wrong bearer token"}})" "\n", "application/json");
      GuardedServer::close_after_answer();
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!authenticated) {
      res.set_header("Connection", "close");
      GuardedServer::close_after_answer();
    }
    if (req.get_header_value<uint64_t>("Content-Length") > options.max_body_bytes) {
      send_too_large(res);
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // A body cut off on the wire (GuardedServer) reaches here as httplib's 400: it is a 413.
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!GuardedServer::body_over_limit()) return httplib::Server::HandlerResponse::Unhandled;
    send_too_large(res);
    return httplib::Server::HandlerResponse::Handled;
  }));
}

void add_routes(httplib::Server& server, Executor& executor, AdmissionGate& gate, const HttpApiOptions& options) {
  server.Get("/v1/health", [&](const httplib::Request&, httplib::Response& res) {
    send_json(res, 200, {{"status", "ok"}, {"running", gate.running()}, {"queued", gate.queued()},
                         {"max_running", options.max_running}, {"max_queued", options.max_queued}});
  });
  server.Post("/v1/run", [&](const httplib::Request& req, httplib::Response& res) { handle_run(req, res, executor, gate, options); });
  server.Get("/v1/skills", [&](const httplib::Request&, httplib::Response& res) { send_json(res, 200, executor.list_skills()); });
  add_session_routes(server, executor, gate, options);
  server.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      send_json(res, 500, {{"error", {{"class", "sandcell"}, {"message", e.what()}}}});
    } catch (...) {
      send_json(res, 500, {{"error", {{"class", "sandcell"}, {"message", "unknown error"}}}});
    }
  });
}

}  // namespace sandcell::agent_service
