#pragma once
// The endpoints of the HTTP API (see README "Python over HTTP").
#include <httplib.h>

#include "http/admission_gate.hpp"
#include "sandcell/agent_service/http_api.hpp"

namespace sandcell::agent_service {

void add_routes(httplib::Server& server, Executor& executor, AdmissionGate& gate, const HttpApiOptions& options);

}  // namespace sandcell::agent_service
