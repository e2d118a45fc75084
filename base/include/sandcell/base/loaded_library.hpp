#pragma once
// A C library opened with dlopen on first use instead of linked, so a command that never calls
// it does not pay for mapping it (and what it links) at every start. Used for the network's
// libraries (network/src/dynamic_libs.cpp) and for libcurl and libarchive in the image commands
// (base/src/loaded_libs.cpp).
//
// The pattern: a struct of function pointers typed by the real header (decltype), filled once
// by a function-local static, so a call reads like the C API behind an accessor:
// libcurl().easy_init() for curl_easy_init(). SANDCELL_FUNCTION takes the symbol's name and its
// type from the same token, so they cannot disagree.
#include <dlfcn.h>
#include <sys/auxv.h>

#include <cerrno>
#include <string>

#include "sandcell/base/error.hpp"

namespace sandcell::runtime {

struct LibraryName {
  const char* soname;
  const char* package;    // Debian's
  const char* needed_by;  // what needs it, of what the user asked for
};

// A library opened for the rest of the process: never closed, because the function pointers
// taken from it live in function-local statics until exit. Throws Error(ELIBACC) naming the
// library, the package to install and what needs it when the library or a symbol is missing.
class LoadedLibrary {
 public:
  explicit LoadedLibrary(const LibraryName& name) : name_(name), handle_(open(name)) {
    if (handle_ == nullptr) fail();
  }

  template <typename Function>
  Function function(const char* symbol) const {
    void* address = dlsym(handle_, symbol);
    if (address == nullptr) fail();
    return reinterpret_cast<Function>(address);
  }

 private:
  static void* open(const LibraryName& name) {
    // A static executable has no dynamic loader (AT_BASE 0): glibc's dlopen there would map a
    // second libc beside the built-in one. The static `sandcell` hands such runs to sandcell-net
    // before they get here (cli/forward.cpp); this is the line behind that.
    if (getauxval(AT_BASE) == 0)
      throw Error(ELIBACC, std::string("load ") + name.soname + " for " + name.needed_by +
                               ": this executable is linked statically and cannot load shared "
                               "libraries (run it through sandcell-net)");
    return dlopen(name.soname, RTLD_NOW | RTLD_LOCAL);
  }

  [[noreturn]] void fail() const {
    const char* why = dlerror();
    throw Error(ELIBACC, std::string("load ") + name_.soname + " for " + name_.needed_by +
                             " (apt-get install " + name_.package +
                             "): " + (why != nullptr ? why : "unknown dlerror"));
  }

  const LibraryName& name_;
  void* handle_;
};

}  // namespace sandcell::runtime

#define SANDCELL_FUNCTION(library, symbol) (library).function<decltype(&symbol)>(#symbol)
