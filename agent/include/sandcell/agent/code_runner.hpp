#pragma once
// run_code(): writes the code into /workspace, installs packages, compiles and runs it, each in
// its own sandbox of the skill's image with the workspace bind-mounted, then collects output,
// artifacts and the error class. docs/architecture.md, "Data flow": skill.json + request →
// runtime::Spec.
#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "sandcell/agent/code_request.hpp"
#include "sandcell/agent/code_result.hpp"
#include "sandcell/agent/limit_args.hpp"
#include "sandcell/agent/request_ceilings.hpp"
#include "sandcell/agent/sessions.hpp"
#include "sandcell/agent/skill.hpp"
#include "sandcell/runtime/sandbox.hpp"

namespace sandcell::agent {

struct RunnerContext {
  std::string store_root;       // the image store with the skill images
  std::string sessions_dir;     // see sessions.hpp
  std::chrono::seconds session_ttl{3600};
  SessionBounds session_bounds;  // how many sessions, and their bytes together
  NetworkArgs network;          // operator side: allow file, hosts file, CIDRs (net comes from the request)
  std::string seccomp = "code"; // profile name or file, as `--seccomp`
  std::string seccomp_cache_dir;
  std::string state_root;       // runtime state; empty: /run/sandcell
  // Each phase's user namespace; unset: Auto as root (the sandbox's root is an unprivileged host
  // id; /workspace is bound idmapped, so its files keep their ids across phases, calls and the
  // ranges they get), Host rootless (sandcell's own user namespace is the confinement there).
  // Where the kernel refuses root a user namespace (a chroot, an outer container's seccomp
  // filter), unset means Host, with a warning through on_warning and in each phase's record.
  std::optional<runtime::UserNamespace> user_namespace;
  // A run weaker than the defaults promise, said once per call (the CLI prints it on stderr).
  std::function<void(const std::string&)> on_warning;
  // Output of the compile and run phases as it arrives (`--stream`); optional.
  runtime::OutputSink on_output;
  // Progress lines ("installing 2 packages"); optional.
  std::function<void(const std::string&)> on_progress;
  CollectBounds bounds;
  // What a request may ask for at most (request_ceilings.hpp); unset fields: no ceiling.
  RequestCeilings ceilings;
};

// Throws Error::invalid for requests that cannot run (unknown skill, skill not built, empty or
// binary code, bad limits); a program that fails is a result, not an exception.
CodeResult run_code(const SkillCatalog& catalog, const CodeRequest& request, const RunnerContext& context);

// The warm pool's prepared sandbox (docs/architecture.md, "The warm pool"): `sandcell code
// --pool-member SKILL`. Prepares the skill's run phase with its defaults and nothing of a
// request, starts pool_run in it, and hands it the one request read from `request_fd` (until EOF:
// {"request": {...}, "stream": bool}); EOF without one cancels.
struct PoolMemberHooks {
  // Once, when the interpreter is ready (supervisor thread): the sandbox's memory then, 0 unknown.
  std::function<void(uint64_t memory_bytes)> on_ready;
  // The request arrived and will run (reader thread, before the program goes).
  std::function<void(bool stream)> on_request;
  // The request's result, as soon as it is complete: before the sandbox's and the workspace's
  // teardown, which run_pool_member then does before it returns (supervisor thread). Unset: the
  // outcome carries it.
  std::function<void(const CodeResult&)> on_result;
};
struct PoolMemberOutcome {
  std::optional<CodeResult> result;  // the request ran (its run phase says pooled); not when on_result had it
  bool answered = false;             // on_result had the result
  std::string refused;  // the request was not run (run it cold): why
  std::string failed;   // no request ran: the prepared sandbox ended or was cancelled first
};
// `zygote_dir`: the skill's zygote (sandcell/agent/zygote.hpp) whose fork the program is; empty:
// the pool command starts the interpreter in the sandbox.
PoolMemberOutcome run_pool_member(const SkillCatalog& catalog, const std::string& skill,
                                  const RunnerContext& context, int request_fd,
                                  const PoolMemberHooks& hooks, const std::string& zygote_dir = "");

}  // namespace sandcell::agent
