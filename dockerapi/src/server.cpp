// `serve --docker-api unix:PATH`: the socket (0660, root-owned or --docker-api-group), the HTTP
// server, and serving until SIGINT/SIGTERM. Containers' supervisors are not ours: they keep
// running when the server stops.
#include <grp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "container_io.hpp"
#include "container_wake.hpp"
#include "http_server.hpp"
#include "routes.hpp"
#include "sandcell/dockerapi/server.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/unique_fd.hpp"

namespace sandcell::dockerapi {
namespace {

using runtime::UniqueFd;
constexpr size_t kMaxBodyBytes = 4 << 20;

gid_t group_id(const std::string& name) {
  if (name.empty()) return 0;
  group* g = getgrnam(name.c_str());
  if (g == nullptr) throw Error::invalid("--docker-api-group: no group named '" + name + "'");
  return g->gr_gid;
}

// A path where a server already listens is refused; a stale socket file is replaced.
void clear_stale_socket(const std::string& path, const sockaddr_un& address) {
  struct stat st {};
  if (lstat(path.c_str(), &st) < 0) return;
  if (!S_ISSOCK(st.st_mode)) throw Error::invalid("--docker-api " + path + " exists and is not a socket");
  UniqueFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0)
    throw Error::invalid("--docker-api " + path + ": a server already listens there");
  check(unlink(path.c_str()), "unlink stale socket " + path);
}

UniqueFd listen_on(const std::string& listen, const std::string& group) {
  if (!listen.starts_with("unix:"))
    throw Error::invalid("--docker-api: only unix:PATH is supported yet (tcp needs --token or TLS, not implemented)");
  std::string path = listen.substr(5);
  sockaddr_un address{.sun_family = AF_UNIX, .sun_path = {}};
  if (path.empty() || path.size() >= sizeof address.sun_path)
    throw Error::invalid("--docker-api unix:PATH: the path must be 1 to 107 bytes");
  memcpy(address.sun_path, path.c_str(), path.size());
  gid_t gid = group_id(group);
  clear_stale_socket(path, address);
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw Error(errno, "socket");
  mode_t old = umask(0177);  // no moment where others could connect
  int bound = bind(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  umask(old);
  check(bound, "bind " + path);
  check(chown(path.c_str(), 0, gid), "chown " + path);
  check(chmod(path.c_str(), 0660), "chmod " + path);
  check(::listen(fd.get(), 128), "listen on " + path);
  return fd;
}

}  // namespace

int serve_docker_api_until_signal(const DockerApiOptions& options) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  check(pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr), "block SIGINT/SIGTERM");  // the server's threads inherit it
  signal(SIGPIPE, SIG_IGN);
  UniqueFd listener = listen_on(options.listen, options.group);
  ApiContext api{.store_root = options.store_root,
                 .supervisor_exe = options.supervisor_exe.empty() ? "/proc/self/exe" : options.supervisor_exe,
                 .containers = ContainerStore(options.store_root + "/docker/containers"),
                 .volumes = VolumeStore(options.store_root + "/docker/volumes"),
                 .max_load_bytes = options.max_load_bytes,
                 .disk = {.default_bytes = options.default_disk_bytes, .max_bytes = options.max_disk_bytes},
                 .log = {.default_size = options.log_max_size,
                         .default_files = options.log_max_file,
                         .max_total = options.max_log_bytes},
                 .network = {.allow_host = options.allow_host_network}};
  if (api.supervisor_exe == "/proc/self/exe") {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) api.supervisor_exe.assign(exe, static_cast<size_t>(n));
  }
  server_stopping_fd();  // made now: no descriptor appears later (tests count the server's)
  {
    HttpServer server(
        listener.get(), kMaxBodyBytes, [&api](const HttpRequest& request) { return route(api, request); },
        [&api](const HttpRequest& request) { return body_spool(api, request); });
    SupervisorWatch watch(api);
    fprintf(stderr, "sandcell: Docker API on %s\n", options.listen.c_str());
    int sig = 0;
    sigwait(&stop_signals, &sig);
    end_all_streams();
  }
  unlink(options.listen.substr(5).c_str());
  return 0;
}

}  // namespace sandcell::dockerapi
