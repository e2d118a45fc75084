#pragma once
// `--seccomp default|code|FILE` compiled once, not on every run: parsing Docker's JSON and
// compiling ~400 rules with libseccomp took ~2.7 ms of each `sandcell run`. The compiled program
// and its notify plan are kept in <cache_dir>/<hash>.bin together with everything they were
// compiled from (the profile's bytes, the capabilities, the options, the kernel and libseccomp
// versions); a cache entry is used only when all of it matches exactly, and only from a directory
// that no other user can write (the directory and each ancestor owned by root or by us, not group-
// or world-writable unless sticky) and a file of ours: the entry is the sandbox's filter.
#include <optional>
#include <string>

#include "sandcell/seccomp/program.hpp"
#include "sandcell/seccomp/docker_profile.hpp"
#include "sandcell/seccomp/profile.hpp"

namespace sandcell::seccomp {

// load_profile_arg + compile, through the cache for JSON profiles (`builtin` is compiled each
// time: it is code, not a file). nullopt for `unconfined`. An unusable cache directory only
// costs the speed-up, never the run.
std::optional<Program> compile_profile_arg(const std::string& arg, const ProfileContext& context,
                                                          const CompileOptions& options,
                                                          const std::string& cache_dir);

// compile_profile_arg as a sandbox's Source: compiled (through the cache in `cache_dir`, or
// default_cache_dir() when it is empty) when the sandbox needs its program, which is named `arg`.
// What `sandcell run --seccomp`, `sandcell code`, image builds and the Docker API give their Spec.
Source cached_profile(std::string arg, ProfileContext context, CompileOptions options,
                      std::string cache_dir = "");

// Where compiled profiles are kept: /var/cache/sandcell/seccomp as root, else
// $XDG_CACHE_HOME/sandcell/seccomp (~/.cache/sandcell/seccomp); "" (no cache) for a user with
// neither, rather than a directory in a shared /tmp.
std::string default_cache_dir();

}  // namespace sandcell::seccomp
