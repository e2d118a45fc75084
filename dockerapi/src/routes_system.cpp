// _ping, version, info: what clients ask first to negotiate and to describe the host.
#include <sys/statfs.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <linux/magic.h>

#include "routes.hpp"
#include "sandcell/rootfs_builder/store.hpp"

namespace sandcell::dockerapi {
namespace {

nlohmann::json uname_json() {
  utsname u{};
  uname(&u);
  return {{"kernel", u.release}, {"machine", u.machine}, {"node", u.nodename}};
}

std::string go_arch(const std::string& machine) {
  if (machine == "x86_64") return "amd64";
  if (machine == "aarch64") return "arm64";
  return machine;
}

std::string cgroup_version() {
  struct statfs fs {};
  if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return "2";
  return "1";
}

HttpReply ping(const HttpRequest& request) {
  HttpReply reply;
  reply.body = request.method == "HEAD" ? "" : "OK";
  reply.content_type = "text/plain; charset=utf-8";
  reply.headers = {{"Api-Version", kApiVersion}, {"OSType", "linux"}, {"Docker-Experimental", "false"},
                   {"Builder-Version", "1"}, {"Cache-Control", "no-cache, no-store, must-revalidate"},
                   {"Pragma", "no-cache"}};
  return reply;
}

HttpReply version() {
  nlohmann::json u = uname_json();
  nlohmann::json engine = {{"Version", "sandcell"}, {"ApiVersion", kApiVersion}, {"MinAPIVersion", kMinApiVersion},
                           {"Os", "linux"}, {"Arch", go_arch(u["machine"])}, {"KernelVersion", u["kernel"]},
                           {"GitCommit", ""}, {"GoVersion", ""}, {"BuildTime", ""}};
  nlohmann::json body = engine;  // Details: strings only (the CLI decodes a map of strings)
  body["Experimental"] = false;
  body["Platform"] = {{"Name", "sandcell"}};
  body["Components"] = nlohmann::json::array({{{"Name", "Engine"}, {"Version", "sandcell"}, {"Details", engine}}});
  return json_reply(200, body);
}

HttpReply info(const ApiContext& api) {
  int running = 0, paused = 0, stopped = 0, total = 0;
  for (const ContainerDir& c : api.containers.list()) {
    try {
      ContainerState state = c.state();
      const std::string& status = state.status;
      ++total;
      if (is_paused(state)) ++paused;
      else if (status == "running") ++running;
      else if (status == "exited") ++stopped;
    } catch (const std::exception&) {
    }
  }
  size_t images = 0;
  try {
    images = rootfs_builder::ImageStore(api.store_root).list().size();
  } catch (const std::exception&) {
  }
  struct sysinfo si {};
  sysinfo(&si);
  nlohmann::json u = uname_json();
  nlohmann::json security = {"name=seccomp,profile=builtin", "name=no-new-privileges", "name=landlock",
                             "name=cgroupns"};
  return json_reply(
      200, {{"ID", "sandcell"}, {"Name", u["node"]}, {"Containers", total}, {"ContainersRunning", running},
            {"ContainersPaused", paused}, {"ContainersStopped", stopped}, {"Images", images}, {"Driver", "overlay"},
            {"DriverStatus", nlohmann::json::array()}, {"DockerRootDir", api.store_root},
            {"MemoryLimit", true}, {"SwapLimit", false}, {"CpuCfsPeriod", true}, {"CpuCfsQuota", true},
            {"PidsLimit", true}, {"OomKillDisable", false}, {"KernelVersion", u["kernel"]},
            {"OperatingSystem", "sandcell"}, {"OSType", "linux"}, {"Architecture", u["machine"]},
            {"NCPU", sysconf(_SC_NPROCESSORS_ONLN)},
            {"MemTotal", static_cast<uint64_t>(si.totalram) * si.mem_unit}, {"ServerVersion", "sandcell"},
            {"CgroupDriver", "cgroupfs"}, {"CgroupVersion", cgroup_version()}, {"SecurityOptions", security},
            {"DefaultRuntime", "sandcell"}, {"Runtimes", {{"sandcell", {{"path", "sandcell"}}}}},
            {"LoggingDriver", "sandcell"}, {"Swarm", {{"LocalNodeState", "inactive"}}},
            {"Plugins", {{"Volume", nlohmann::json::array()}, {"Network", {"bridge", "none"}}, {"Log", nlohmann::json::array()}}},
            {"Warnings", nlohmann::json::array()}});
}

}  // namespace

std::optional<HttpReply> system_route(const ApiContext& api, const HttpRequest& request, const Segments& path) {
  if (path.size() != 1) return std::nullopt;
  if (path[0] == "_ping" && (request.method == "GET" || request.method == "HEAD")) return ping(request);
  if (path[0] == "version" && request.method == "GET") return version();
  if (path[0] == "info" && request.method == "GET") return info(api);
  return std::nullopt;
}

}  // namespace sandcell::dockerapi
