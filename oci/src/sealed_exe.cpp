#include "sandcell/oci/sealed_exe.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandcell/runtime/error.hpp"
#include "sandcell/runtime/unique_fd.hpp"

namespace sandcell::oci {

bool running_from_sealed_copy() {
  runtime::UniqueFd self(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (!self) return false;
  int seals = fcntl(self.get(), F_GET_SEALS);
  return seals >= 0 && (seals & F_SEAL_WRITE) && (seals & F_SEAL_SEAL);
}

void reexec_from_sealed_copy(char** argv, char** envp) {
  if (running_from_sealed_copy()) return;
  runtime::UniqueFd self(open("/proc/self/exe", O_RDONLY | O_CLOEXEC));
  if (!self) throw Error(errno, "open /proc/self/exe");
  struct stat st {};
  check(fstat(self.get(), &st), "stat /proc/self/exe");
  // Not MFD_CLOEXEC: fexecve of a script would need the fd, and ours is an ELF that the
  // kernel has mapped before the fd could matter; close-on-exec is set right after anyway.
  runtime::UniqueFd copy(memfd_create("sandcell-oci", MFD_ALLOW_SEALING | MFD_CLOEXEC));
  if (!copy) throw Error(errno, "memfd_create for the sealed runtime copy");
  off_t offset = 0;
  while (offset < st.st_size) {
    ssize_t n = sendfile(copy.get(), self.get(), &offset, static_cast<size_t>(st.st_size - offset));
    if (n <= 0) throw Error(n < 0 ? errno : EIO, "copy the runtime into a memfd");
  }
  check(fcntl(copy.get(), F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE),
        "seal the runtime copy");
  fexecve(copy.get(), argv, envp);
  throw Error(errno, "fexecve the sealed runtime copy");
}

}  // namespace sandcell::oci
