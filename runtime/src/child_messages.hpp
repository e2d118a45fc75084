#pragma once
// The parent's end of the sync socket: reads what the child reports between clone and execve.
#include <optional>
#include <vector>

#include "child_plan.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

struct ReceivedMessage {
  ChildMessage message;
  UniqueFd fd;  // for ChildMessage::SeccompListener and ChildMessage::ProxyListener
};

// One message, or nullopt at EOF (the child exec'd the program, or died). Throws Error if the
// socket fails.
std::optional<ReceivedMessage> receive_child_message(int sync_fd);

// One message of sandcell_confine()'s report socket (RunOptions::outside_program): 'L' comes as
// ChildMessage::SeccompListener with its fd, anything else as SetupFailed with the step; kind -1
// when nothing is queued; nullopt at EOF. Throws Error if the socket fails.
std::optional<ReceivedMessage> receive_outside_report(int report_fd);

// Socket transport, before "go": waits until the child sends its proxy listener and returns it.
// Returns an empty fd when the child failed or died first: its message stays in the socket for
// the supervisor loop to report. Throws Error if sandcell is interrupted (`signal_fd` readable).
UniqueFd wait_for_proxy_listener(int sync_fd, int signal_fd);
// ChildPlan::terminal, before "go": the same for the pty master the child opened.
UniqueFd wait_for_terminal(int sync_fd, int signal_fd);

// "Go", with the cgroup's `tasks` files when the child joins by itself (v1: writing "0" moves only
// the writer, without the RCU grace period a write of another pid waits for, ~12 ms here). A
// child that already failed and exited is no error: its message is in the socket. Throws Error
// otherwise.
// `program`: the process's seccomp program (Spec::seccomp), sent along (the child has no other);
// the kernel takes at most BPF_MAXINSNS instructions, so a longer one is an Error here.
// `parent_tasks`: the parents' `tasks` files, one per file of `cgroup_tasks` and in its order,
// for a sandbox's init to leave its cgroups with once the program runs in them
// (Cgroup::open_parent_attach_files); the tag byte says they follow the joining ones.
// `pids_max`: with `parent_tasks`, the run's `pids.max` (opened for reading and writing), whose
// limit counts the init until it leaves; the init lowers it by one first. Invalid: none.
void send_go(int sync_fd, const std::vector<UniqueFd>& cgroup_tasks,
             const SeccompProgram* program = nullptr,
             const std::vector<UniqueFd>& parent_tasks = {}, const UniqueFd& pids_max = {});

}  // namespace sandcell::runtime
