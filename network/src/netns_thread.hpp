#pragma once
// Work inside a sandbox's network namespace without moving the caller: a short-lived thread
// setns(CLONE_NEWNET)s into /proc/<pid>/ns/net (a thread's netns is its own; the caller's other
// threads stay put) and runs one step there.
#include <sys/types.h>

#include <functional>

namespace sandcell::network {

// Runs `step` on a thread in the network namespace of `pid` and waits for it; rethrows what it
// threw. Needs CAP_SYS_ADMIN over that namespace (root, or the user namespace that owns it).
void run_in_netns_of(pid_t pid, const std::function<void()>& step);
// The same for a netns already open (an fd of /proc/<pid>/ns/net, which keeps the netns alive).
void run_in_netns(int netns_fd, const std::function<void()>& step);

}  // namespace sandcell::network
