#pragma once
// CVE-2019-5736: a container process must find no writable path back to the runtime binary.
// Every process sandcell-oci puts into a container is a clone of sandcell-oci until its execve,
// so /proc/<pid>/exe of such a process names our executable. Before create/run/exec we re-exec
// from a sealed memfd copy: /proc/<pid>/exe is then that memfd, and F_SEAL_WRITE makes every
// open for writing fail, now and after we exit (the O_PATH-then-reopen trick of the original
// exploit included). The host file is never mapped by a process a container can see.
namespace sandcell::oci {

// Returns if /proc/self/exe is already a sealed memfd; otherwise copies it into one, seals it
// and fexecve()s it with the same argv and environment (does not return then). Throws Error.
void reexec_from_sealed_copy(char** argv, char** envp);

// Adds F_SEAL_SEAL|SHRINK|GROW|WRITE to the memfd `fd`, trying again for a while when the kernel
// answers EBUSY (a page still referenced, a writable shared mapping). Throws Error.
void seal_against_writes(int fd);

// True when /proc/self/exe carries F_SEAL_WRITE.
bool running_from_sealed_copy();

}  // namespace sandcell::oci
