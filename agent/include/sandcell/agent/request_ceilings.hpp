#pragma once
// What the operator lets a request ask for. A request comes from whoever may call `serve`, `mcp`
// or `agent` (a model, a client with the token); it chooses memory, timeout, processes, CPUs,
// output, disk and network. The operator's ceilings (`--max-memory`, `--max-timeout`, `--max-pids`,
// `--max-cpus`, `--max-output`, `--max-disk`, `--allowed-net`) bound those choices: a request over
// one is refused with a message naming it, and a skill default over one is lowered to it.
#include <optional>
#include <string>

#include "sandcell/agent/code_request.hpp"
#include "sandcell/runtime/spec.hpp"

namespace sandcell::agent {

// As the flags write them ("2g", "300", "none", "allow:pypi.org,files.pythonhosted.org").
// Unset: no ceiling (`sandcell code` run by hand: its user is the operator).
struct RequestCeilings {
  std::optional<std::string> memory{}, timeout{}, pids{}, cpus{}, output{}, net{}, disk{};
};

// Throws Error::invalid on a bad ceiling ("--max-memory: ..."), naming the flag.
void check_ceilings(const RequestCeilings& ceilings);

// Throws Error::invalid when the request asks for more than a ceiling, e.g. "memory 64g is over
// the operator's limit (--max-memory 2g)".
void check_request_within(const RequestCeilings& ceilings, const CodeRequest& request);

// Lowers what the request left to the skill (its memory, timeout...) to the ceilings.
void clamp_to_ceilings(const RequestCeilings& ceilings, runtime::Limits& limits);
// The network a run gets: `net` if the ceiling allows it, else none (a skill default wider
// than the operator allows is narrowed, never widened to other hosts).
std::string clamp_net(const RequestCeilings& ceilings, const std::string& net);

}  // namespace sandcell::agent
