#pragma once
// The endpoints of the HTTP API (see README "Python over HTTP").
#include <httplib.h>

#include "http/admission_gate.hpp"
#include "sandcell/agent_service/http_api.hpp"

namespace sandcell::agent_service {

// The bearer token (on TCP, every path but /v1/health) and the body limit, checked before
// httplib reads a body.
void add_request_guards(httplib::Server& server, const HttpApiOptions& options, bool tcp);
void add_routes(httplib::Server& server, Executor& executor, AdmissionGate& gate, const HttpApiOptions& options);

}  // namespace sandcell::agent_service
