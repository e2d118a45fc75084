#pragma once
// Moving files into and out of a session's /workspace. The runner's contract has no separate
// file verb: a request's "files" are written before its code runs and its "get" paths come back
// in "files", so a transfer is a request whose code does nothing.
#include <optional>
#include <string>
#include <string_view>

#include "sandcell/agent_service/executor.hpp"

namespace sandcell::agent_service {

struct WorkspaceTarget {
  std::string skill;    // whose sandbox does the transfer (a session belongs to one skill)
  std::string session{};  // empty: a throwaway workspace
};

// Returns the runner's result; its "error" says what went wrong.
Json put_workspace_file(Executor& executor, const WorkspaceTarget& target, const std::string& path,
                        std::string_view bytes);

struct FetchedFile {
  std::optional<std::string> bytes{};  // nullopt: not found or refused
  Json result{};                        // the runner's result
};
FetchedFile get_workspace_file(Executor& executor, const WorkspaceTarget& target, const std::string& path);

}  // namespace sandcell::agent_service
