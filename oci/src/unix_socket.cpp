#include "unix_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>

#include "sandcell/base/error.hpp"

namespace sandcell::oci {
namespace {

using runtime::UniqueFd;

// Returns the address and keeps the directory fd open in `dir` for as long as it is needed.
sockaddr_un address_of(const std::string& path, UniqueFd& dir) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::string name = path;
  if (path.size() >= sizeof address.sun_path) {
    std::filesystem::path p(path);
    dir.reset(open(p.parent_path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!dir) throw Error(errno, "open the directory of " + path);
    name = "/proc/self/fd/" + std::to_string(dir.get()) + "/" + p.filename().string();
    if (name.size() >= sizeof address.sun_path) throw Error::invalid("socket name too long: " + path);
  }
  memcpy(address.sun_path, name.c_str(), name.size() + 1);
  return address;
}

}  // namespace

UniqueFd listen_unix(const std::string& path) {
  UniqueFd dir;
  sockaddr_un address = address_of(path, dir);
  UniqueFd fd(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd) throw Error(errno, "socket");
  check(bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), "bind " + path);
  check(listen(fd.get(), 1), "listen on " + path);
  return fd;
}

UniqueFd connect_unix(const std::string& path, int type) {
  UniqueFd dir;
  sockaddr_un address = address_of(path, dir);
  UniqueFd fd(socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
  if (!fd) throw Error(errno, "socket");
  check(connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), "connect to " + path);
  return fd;
}

}  // namespace sandcell::oci
