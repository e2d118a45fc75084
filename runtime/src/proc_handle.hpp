#pragma once
// Writes into /proc that a container cannot redirect (CVE-2025-52881 class). A path like
// "/proc/sys/net/ipv4/ip_forward" is only procfs if nothing was mounted or linked over it; an
// image symlink plus a volume turned runc's sysctl write into a write of a host-global file.
// So every /proc file the runtime writes is opened beneath a procfs handle with
// RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV (no symlink, no other mount on the
// way) and its filesystem is checked to be procfs before a byte goes in.
#include <string>

#include "unique_fd.hpp"

namespace sandcell::runtime {

// The child's side: no allocation, errno set on failure (-1).
// A procfs of our own: a fresh detached proc mount (fsopen/fsmount) nobody else can reach, or,
// where the kernel refuses one (a user namespace without a fully visible /proc), a non-recursive
// clone of the /proc mount we see (open_tree), which drops whatever was mounted over its files.
// Either way checked with fstatfs to be procfs.
int open_private_procfs();
// `relative` beneath `proc` ("sys/net/ipv4/ip_forward", "self/..." is not allowed: "self" and
// "thread-self" are symlinks); checked to be on procfs.
int open_proc_file(int proc, const char* relative, int flags);
// "thread-self" of `proc` as a directory: the one symlink we follow, inside a procfs nobody can
// have placed a symlink in, and never across a mount or through a magic link.
int open_proc_thread_self(int proc);

// The supervisor's side: the host's /proc, checked, then the file as above. Throws Error.
UniqueFd open_host_proc_file(const std::string& relative, int flags);
void write_host_proc_file(const std::string& relative, const std::string& text);

}  // namespace sandcell::runtime
