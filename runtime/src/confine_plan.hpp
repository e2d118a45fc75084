#pragma once
// The plan sandcell_confine() runs (runtime/confine/sandcell_confine.h) for a program that
// comes from outside its sandbox (RunOptions::outside_program): the confinement a cold run's
// program takes in run_child() after "go", from the same ChildPlan, flattened into one buffer.
#include <sys/types.h>

#include <vector>

#include "child_plan.hpp"

namespace sandcell::runtime {

// `program`: Spec::seccomp's program (nullptr: none), filter 0, with its flags (a listener, if
// it reports denials); the plan's seccomp layers follow it. `umask`: the one a cold program
// inherits (the supervisor's). Throws Error when the plan holds more than the format takes.
std::vector<unsigned char> confine_plan_for(const ChildPlan& plan, const SeccompProgram* program,
                                            mode_t umask);

// The CLONE_NEW* flags of the namespaces such a program joins: those the sandbox's init made.
uint32_t confine_namespaces(const ChildPlan& plan);

// The process's umask, read without changing it (/proc/self/status); 022 if it cannot be read.
mode_t current_umask();

}  // namespace sandcell::runtime
