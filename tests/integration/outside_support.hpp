#pragma once
// What the tests of a program from outside its sandbox share (outside_program_test.cpp,
// nested_sandbox_test.cpp): the confinement library, loaded as a zygote's interpreter will load
// it, the spec, and the program that prints what it can see of its sandbox.
#include <dlfcn.h>

#include <string>

#include "sandcell/runtime/spec.hpp"
#include "sandcell/seccomp/profile.hpp"
#include "sandcell_confine.h"

namespace sandcell::test {

using ConfineFn = int (*)(const sandcell_confine_plan*, const sandcell_confine_fds*, const char**);

// libsandcell-confine.so's entry point (dlopen before any fork: the child only calls it), or
// null (dlerror() says why).
inline ConfineFn confine_function() {
  static ConfineFn fn = [] {
    void* library = dlopen(SANDCELL_CONFINE_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    return library ? reinterpret_cast<ConfineFn>(dlsym(library, "sandcell_confine")) : nullptr;
  }();
  return fn;
}

// The built-in profile, its denials reported: the program's own listener reaches the supervisor.
inline runtime::Spec spec_with_seccomp() {
  runtime::Spec spec = runtime::default_spec();
  spec.seccomp = seccomp::compile(seccomp::builtin_profile(), seccomp::CompileOptions{});
  return spec;
}

// A busybox sh script: what the program can see of who and where it is (its pid, ids,
// capabilities, no_new_privs, seccomp, umask, cwd, fds, cgroups, hostname, limits, where it may
// write), `extra`, then "ready", and it waits for a line on stdin before it ends.
inline std::string self_portrait(const std::string& extra = "") {
  return "echo pid $$; grep -E '^(Uid|Gid|Groups|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|"
         "Seccomp_filters):' /proc/self/status; echo umask $(umask); echo cwd $(pwd); "
         "ls /proc/self/fd | tr '\\n' ' '; echo; cat /proc/self/cgroup; hostname; ulimit -n; "
         "(echo x > /etc/probe) 2>&1; (echo x > /dev/shm/probe) 2>&1; " +
         extra + "echo ready; read line; echo after $line";
}

}  // namespace sandcell::test
