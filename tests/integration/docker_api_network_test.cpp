// The Docker API's network policies beyond none and bridge (docs/docker-api.md, "Network"): the
// label `sandcell.net=allow:HOSTS` runs a bridge container under sandcell's allowlist proxy (the
// policy of `sandcell run --net allow:`), checked against the test's own internet
// (tests/support/test_internet.hpp: nothing leaves the machine); bad labels and contradicting
// NetworkModes are 400s naming the label. NetworkMode host only from a server started with
// --docker-allow-host-network, and then the rest of the sandbox stays.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <set>

#include "docker_api_fixture.hpp"
#include "test_internet.hpp"

// A namespace of its own: unity builds put several test files in one translation unit.
namespace sandcell::test::docker_api_network_tests {
namespace {

namespace ti = test_internet;

class DockerApiNetwork : public DockerApi {
 protected:
  nlohmann::json record_of(const std::string& container) { return inspect(container)["Sandcell"]; }

  // `docker run` with the label; the CLI's error output when refused.
  CliRun run_labelled(const std::string& value, const std::vector<std::string>& flags = {}) {
    std::vector<std::string> args{"run", "--rm", "--label", "sandcell.net=" + value};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"bb:1", "true"});
    return docker(args);
  }
};

// The allowed address through the proxy (the program's http_proxy, also in an exec), the other
// one refused by it, no direct route at all; the record says allow and counts both.
TEST_F(DockerApiNetwork, AllowlistLabelRunsTheContainerBehindSandcellsProxy) {
  ti::TestInternet internet;
  const std::string label = std::string("sandcell.net=allow:") + ti::kAllowedIp;
  const std::string script = std::string("echo $http_proxy; wget -q -O- http://") + ti::kAllowedIp + "/; echo allowed=$?; " +
                             "wget -q -O- http://" + ti::kDeniedIp + "/ 2>&1 | grep -c 403; " +
                             "nc -w 1 " + ti::kAllowedIp + " 80 </dev/null; echo direct=$?; ip -o link | cut -d: -f2";
  CliRun r = docker({"run", "--name", "allowlisted", "--label", label, "bb:1", "sh", "-c", script});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "http://127.0.0.1:3128\nallowed-ok\nallowed=0\n1\ndirect=1\n lo\n") << r.err;
  nlohmann::json container = inspect("allowlisted");
  EXPECT_EQ(container["HostConfig"]["NetworkMode"], "bridge");
  EXPECT_EQ(container["HostConfig"]["SandcellNetworkAllow"], nlohmann::json({ti::kAllowedIp}));
  const nlohmann::json& record = container["Sandcell"];
  ASSERT_TRUE(record.is_object()) << container;
  EXPECT_EQ(record["isolation"]["network"], "allow") << record;
  EXPECT_EQ(record["isolation"]["network_transport"], "socket") << record;
  EXPECT_GE(record["events"]["allowed_connections"].get<int>(), 1) << record;
  bool denied_recorded = false;
  for (const auto& b : record["events"]["blocked_connections"]) denied_recorded |= b.value("host", "") == ti::kDeniedIp;
  EXPECT_TRUE(denied_recorded) << record["events"];
  ASSERT_EQ(docker({"rm", "allowlisted"}).exit_code, 0);

  // docker exec in a running one goes through the same proxy.
  ASSERT_EQ(docker({"run", "-d", "--name", "long", "--label", label, "bb:1", "sleep", "60"}).exit_code, 0);
  CliRun exec = docker({"exec", "long", "sh", "-c", std::string("wget -q -O- http://") + ti::kAllowedIp + "/"});
  EXPECT_EQ(exec.out, "allowed-ok\n") << exec.err;
  CliRun denied = docker({"exec", "long", "sh", "-c", std::string("wget -q -O- http://") + ti::kDeniedIp + "/"});
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_EQ(denied.out, "");
  EXPECT_EQ(docker({"rm", "-f", "long"}).exit_code, 0);

  // docker-py: labels= in containers.run.
  std::string py = R"(
import docker, sys
client = docker.DockerClient(base_url=sys.argv[1], version="auto")
out = client.containers.run("bb:1", ["wget", "-q", "-O-", "http://" + sys.argv[2] + "/"],
                            labels={"sandcell.net": "allow:" + sys.argv[2]}, remove=True)
print(out.decode(), end="")
)";
  CliRun docker_py = run_program({"/usr/bin/python3", "-c", py, "unix://" + socket_path(), ti::kAllowedIp});
  EXPECT_EQ(docker_py.out, "allowed-ok\n") << docker_py.err;
}

TEST_F(DockerApiNetwork, AllowlistLabelNamesTheHostsAsSandcellRunCanonicalisesThem) {
  ASSERT_EQ(docker({"create", "--name", "pypi", "--label", "sandcell.net=allow:PyPI.org, files.pythonhosted.org",
                    "bb:1", "true"}).exit_code, 0);
  EXPECT_EQ(inspect("pypi")["HostConfig"]["SandcellNetworkAllow"], nlohmann::json({"files.pythonhosted.org", "pypi.org"}));
  EXPECT_EQ(inspect("pypi")["Config"]["Labels"]["sandcell.net"], "allow:PyPI.org, files.pythonhosted.org");
  // Other labels leave the bridge policy alone.
  ASSERT_EQ(docker({"create", "--name", "plain", "--label", "sandcell.other=allow:x.org", "bb:1", "true"}).exit_code, 0);
  EXPECT_FALSE(inspect("plain")["HostConfig"].contains("SandcellNetworkAllow"));
}

TEST_F(DockerApiNetwork, BadSandcellNetLabelsAreRefusedNamingTheLabel) {
  for (const char* value : {"allow:", "allow:,", "allow:pypi.org,,x.org", "allow:not a host",
                                   "allow:http://pypi.org/", "full", "none", "allow", "deny:pypi.org", ""}) {
    CliRun r = run_labelled(value);
    EXPECT_EQ(r.exit_code, 125) << value;
    EXPECT_NE(r.err.find("Config.Labels sandcell.net"), std::string::npos) << value << ": " << r.err;
  }
  CliRun none = run_labelled("allow:pypi.org", {"--network", "none"});
  EXPECT_EQ(none.exit_code, 125);
  EXPECT_NE(none.err.find("conflicts with NetworkMode none"), std::string::npos) << none.err;
  auto [status, body] = request("POST", "/containers/create",
                                R"({"Image":"bb:1","NetworkDisabled":true,"Labels":{"sandcell.net":"allow:pypi.org"}})");
  EXPECT_EQ(status, 400);
  EXPECT_NE(body.value("message", "").find("sandcell.net"), std::string::npos) << body;
  auto not_string = request("POST", "/containers/create", R"({"Image":"bb:1","Labels":{"sandcell.net":["allow:pypi.org"]}})");
  EXPECT_EQ(not_string.first, 400) << not_string.second;
  // A hostile length: refused, named, and the server stays.
  CliRun huge = run_labelled("allow:" + std::string(5000, 'a') + ".org");
  EXPECT_EQ(huge.exit_code, 125);
  EXPECT_NE(huge.err.find("sandcell.net"), std::string::npos) << huge.err.substr(0, 400);
  EXPECT_EQ(containers_on_disk(), 0u);
  EXPECT_EQ(request("GET", "/_ping").first, 200);
}

// A loopback listener of the test's own, answering one connection with a line.
class LoopbackListener {
 public:
  LoopbackListener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {htonl(INADDR_LOOPBACK)}, .sin_zero = {}};
    socklen_t len = sizeof sin;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0 || listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&sin), &len) != 0)
      throw std::runtime_error("loopback listener");
    port_ = ntohs(sin.sin_port);
    thread_ = std::thread([this] {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      if (poll(&p, 1, 30000) != 1) return;
      int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) return;
      const char line[] = "host-loopback-ok\n";
      (void)!write(client, line, sizeof line - 1);
      close(client);
    });
  }
  ~LoopbackListener() {
    shutdown(fd_, SHUT_RDWR);
    thread_.join();
    close(fd_);
  }
  uint16_t port() const { return port_; }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

std::string host_netns() { return fs::read_symlink("/proc/self/ns/net").string(); }

TEST_F(DockerApiNetwork, HostNetworkOnlyWithTheServerFlagAndTheRestStays) {
  CliRun refused = docker({"run", "--rm", "--network", "host", "bb:1", "true"});
  EXPECT_EQ(refused.exit_code, 125);
  EXPECT_NE(refused.err.find("--docker-allow-host-network"), std::string::npos) << refused.err;

  stop_server();
  start_server({"--docker-allow-host-network"});
  LoopbackListener listener;
  const std::string script = "readlink /proc/self/ns/net; nc 127.0.0.1 " + std::to_string(listener.port()) +
                             " </dev/null; ip -o link | cut -d: -f2 | tr -d ' '";
  CliRun host = docker({"run", "--name", "onhost", "--network", "host", "bb:1", "sh", "-c", script});
  ASSERT_EQ(host.exit_code, 0) << host.err;
  std::vector<std::string> out = lines(host.out);
  ASSERT_GE(out.size(), 3u) << host.out;
  EXPECT_EQ(out[0], host_netns());
  EXPECT_EQ(out[1], "host-loopback-ok");
  // The host's interfaces, as the test sees them (sandcell's and the network tests' own veths
  // of parallel runs come and go: not compared).
  std::set<std::string> inside(out.begin() + 2, out.end());
  for (const std::string& name : lines(run_program({"/bin/sh", "-c", "ip -o link | cut -d: -f2 | tr -d ' '"}).out))
    if (!name.starts_with("sc")) {
      EXPECT_TRUE(inside.contains(name)) << name << " not seen inside:\n" << host.out;
    }

  // Everything else as another container's (NetworkMode none here): namespaces but the network
  // one, cgroup, seccomp, LSM, capabilities, no_new_privs.
  ASSERT_EQ(docker({"run", "--name", "onbridge", "--network", "none", "bb:1", "true"}).exit_code, 0);
  nlohmann::json on_host = record_of("onhost")["isolation"], on_bridge = record_of("onbridge")["isolation"];
  ASSERT_TRUE(on_host.is_object() && on_bridge.is_object());
  EXPECT_EQ(on_host["network"], "host");
  std::vector<std::string> host_ns = on_host["namespaces"], bridge_ns = on_bridge["namespaces"];
  std::erase(bridge_ns, "network");
  EXPECT_EQ(host_ns, bridge_ns);
  for (const char* same : {"cgroup", "seccomp", "lsm", "capabilities", "no_new_privs", "userns"})
    EXPECT_EQ(on_host[same], on_bridge[same]) << same;
  EXPECT_NE(on_host["seccomp"], "unconfined");
  // Another container does not share it.
  CliRun bridge = docker({"run", "--rm", "--network", "none", "bb:1", "readlink", "/proc/self/ns/net"});
  EXPECT_NE(lines(bridge.out), std::vector<std::string>{host_netns()}) << bridge.err;

  // Made under a server that allowed it; the next one does not: no start.
  stop_server();
  start_server();
  CliRun again = docker({"start", "onhost"});
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find("--docker-allow-host-network"), std::string::npos) << again.err;
  EXPECT_EQ(docker({"restart", "onhost"}).exit_code, 1);
  EXPECT_EQ(inspect("onhost")["State"]["Status"], "exited");
}

}  // namespace
}  // namespace sandcell::test::docker_api_network_tests
