#include "sandcell/oci/sealed_exe.hpp"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::oci {

namespace {

// How much of the executable the kernel and ld.so read: the ELF header, the program headers and
// every segment's bytes in the file. What follows (debug info, the symbol and section tables) is
// for debuggers; in a RelWithDebInfo build it is 93% of the file (37.6 MB, of which the loader
// maps 2.3 MB), and copying it made every create and exec ~10 ms slower. 0 when the file is not a
// 64-bit ELF this function understands, and then the whole file is copied.
off_t loaded_size(int fd, off_t file_size) {
  Elf64_Ehdr header{};
  if (pread(fd, &header, sizeof header, 0) != sizeof header) return 0;
  if (memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 || header.e_ident[EI_CLASS] != ELFCLASS64 ||
      header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0 || header.e_phnum >= PN_XNUM)
    return 0;
  uint64_t end = header.e_phoff + uint64_t{header.e_phnum} * sizeof(Elf64_Phdr);
  for (unsigned i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment{};
    off_t at = static_cast<off_t>(header.e_phoff + i * sizeof segment);
    if (pread(fd, &segment, sizeof segment, at) != sizeof segment) return 0;
    end = std::max<uint64_t>(end, segment.p_offset + segment.p_filesz);
  }
  return end <= static_cast<uint64_t>(file_size) ? static_cast<off_t>(end) : 0;
}

// The copy ends before the section header table: say it has none (readelf and gdb then see a
// well-formed file with program headers only, as for any stripped-of-sections executable).
void drop_section_headers(int fd) {
  Elf64_Ehdr header{};
  if (pread(fd, &header, sizeof header, 0) != sizeof header)
    throw Error(errno, "read the copy's ELF header");
  header.e_shoff = 0;
  header.e_shnum = 0;
  header.e_shstrndx = SHN_UNDEF;
  if (pwrite(fd, &header, sizeof header, 0) != sizeof header)
    throw Error(errno, "write the copy's ELF header");
}

}  // namespace

void seal_against_writes(int fd) {
  // F_SEAL_WRITE fails with EBUSY while a page of the file has a reference the kernel cannot
  // account for (memfd_wait_for_pins gives up after ~150 ms) or while a writable shared mapping
  // exists. Ours has neither for long: the pages were just written. CI's sanitizer stage once saw
  // the EBUSY anyway (a loaded 2-core VM, a 10x larger ASan executable), and the container's
  // create failed with it; a few more tries ride over it. Other errors are final.
  constexpr int tries = 5;
  for (int attempt = 1;; ++attempt) {
    constexpr int seals = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    if (fcntl(fd, F_ADD_SEALS, seals) == 0) return;
    if (errno != EBUSY || attempt == tries) throw Error(errno, "seal the runtime copy");
    usleep(20'000u << attempt);  // 40, 80, 160, 320 ms: ~2 s in all with the kernel's own waits
  }
}

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
  const off_t loaded = loaded_size(self.get(), st.st_size);
  const off_t size = loaded > 0 ? loaded : st.st_size;
  off_t offset = 0;
  while (offset < size) {
    ssize_t n = sendfile(copy.get(), self.get(), &offset, static_cast<size_t>(size - offset));
    if (n <= 0) throw Error(n < 0 ? errno : EIO, "copy the runtime into a memfd");
  }
  if (loaded > 0 && loaded < st.st_size) drop_section_headers(copy.get());
  seal_against_writes(copy.get());
  fexecve(copy.get(), argv, envp);
  throw Error(errno, "fexecve the sealed runtime copy");
}

}  // namespace sandcell::oci
