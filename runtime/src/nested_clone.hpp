#pragma once
// RunOptions::nest_under (Design B step 3, docs/architecture.md): the sandbox's init cloned with
// its user and pid namespaces nested under a zygote's, and its id maps written from there.
#include <sys/types.h>

#include <cstdint>

#include "child_plan.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "unique_fd.hpp"

namespace sandcell::runtime {

// Clones the init (run_child(plan)) with `flags` (the namespace flags, CLONE_NEWUSER among them)
// as a child of the caller, its user namespace a child of nest.userns_fd and its pid namespace
// of nest.pidns_fd, and writes its uid and gid maps (0 → nest.base, nest.size ids) in the
// zygote's ids. Returns its pid and sets `pidfd`. Throws Error naming the step that failed.
pid_t clone_nested(const ChildPlan& plan, uint64_t flags, const Nesting& nest, UniqueFd& pidfd);

}  // namespace sandcell::runtime
