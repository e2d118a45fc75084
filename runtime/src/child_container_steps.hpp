#pragma once
// Steps a container's init and an exec'd process share (child_container_steps.cpp).
#include "child_plan.hpp"

namespace sandcell::runtime {

void join_namespaces(const ChildPlan& plan);         // setns() each planned join, user first
void set_process_attributes(const ChildPlan& plan);  // personality, umask
// process.terminal: a new session with a pty from the container's devpts as its controlling
// terminal on 0-2; the master goes to --console-socket over SCM_RIGHTS, as runc does. The
// container's init (`console`) also bind-mounts the pty on /dev/console (runtime-spec
// config.md, "process": MUST), before the root turns read-only; an exec'd process does not.
void attach_terminal(const ChildPlan& plan, bool console);

}  // namespace sandcell::runtime
