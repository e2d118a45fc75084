// `sandcell run --net allow:... / --net full` end to end (docs/architecture.md, "Network
// policy"), as root on the real kernel. The test builds its own "internet": a network namespace
// joined to the host by a veth in 198.51.100.0/24 (TEST-NET-2), with busybox httpd servers standing
// for allowed.test, denied.test, a metadata service (169.254.169.254) and an internal host
// (10.0.0.1). Only those two /32s get host routes, towards the test namespace, and only for the
// test's lifetime, so the proxy WOULD reach them if it did not refuse them. Names reach the proxy
// through --net-hosts: nothing resolves through real DNS and nothing is ever sent to the machine's
// uplink. A resolver (tests/fixtures/dns-server.py) at 10.0.0.53 stands for the host's DNS server
// in full mode. Allow-mode tests run once per transport (socket, veth). The slirp4netns transport
// connects from the supervisor's own network namespace, so its tests run sandcell itself inside a
// "host" namespace of the test's own (SlirpHost), in front of the test internet, where no route
// leads anywhere else. The NAT tests (`full` over veth) run sandcell in such a host too, with IPv4
// forwarding on in that namespace only: they never depend on the machine's own setting (off on a
// fresh Debian VM, and sandcell never turns it on), and its veths and nft table live and go there.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "sandcell_cli.hpp"
#include "test_internet.hpp"

// A namespace of its own: unity builds put several test files in one translation unit.
namespace sandcell::test::network_policy_tests {
namespace {

namespace fs = std::filesystem;

// TestInternet, its addresses and helpers (declarations, not a using-directive: they hide the
// same names of other test files that unity builds put in one translation unit).
using test_internet::kHostSide;
using test_internet::kInternetSide;
using test_internet::kAllowedIp;
using test_internet::kDeniedIp;
using test_internet::kMetadataIp;
using test_internet::kInternalIp;
using test_internet::kResolverIp;
using test_internet::kWebName;
using test_internet::kAllowlist;
using test_internet::random_suffix;
using test_internet::shell_output;
using test_internet::sh;
using test_internet::contains;
using test_internet::host_reaches;
using test_internet::TestInternet;

// The slirp tests' host (SlirpHost): its link to the test internet (TEST-NET-1), an address of its
// own in a blocked range, and the port of its own service.
constexpr const char* kSlirpHostIp = "192.0.2.1";
constexpr const char* kSlirpHostGateway = "192.0.2.2";
constexpr const char* kSlirpHostPrivateIp = "10.1.0.1";
constexpr uint16_t kSlirpHostServicePort = 8081;

// The machine slirp4netns runs on, for the slirp transport's tests, and the NAT tests' machine
// (with forwarding()): a network namespace of the test's own in front of the test internet (a veth
// in 192.0.2.0/24, and routes to the internet's servers through it), with a web service of the
// "host" on every address (0.0.0.0) of it. sandcell runs inside it (nsenter --net), so its
// addresses are the host's own: the service must stay out of the sandbox's reach, while the servers
// behind it stay reachable.
class SlirpHost {
 public:
  explicit SlirpHost(const TestInternet& internet) : internet_netns_(internet.netns()) {
    try {
      build(internet);
    } catch (...) {
      teardown();
      throw;
    }
  }
  ~SlirpHost() { teardown(); }
  SlirpHost(const SlirpHost&) = delete;
  SlirpHost& operator=(const SlirpHost&) = delete;

  const std::string& netns() const { return netns_; }
  // IPv4 forwarding on in this namespace (a per-namespace setting; the machine's is untouched):
  // what `--net full` over veth needs of the host it runs on.
  void forwarding() const { sh("ip netns exec " + netns_ + " sysctl -qw net.ipv4.ip_forward=1"); }
  // What the host itself gets from its service (on any of its addresses).
  std::string fetch_here(const char* address) const {
    return shell_output("ip netns exec " + netns_ + " curl -s -m 2 http://" + address + ":" +
                        std::to_string(kSlirpHostServicePort) + "/");
  }

 private:
  void build(const TestInternet& internet) {
    sh("ip netns add " + netns_);
    const std::string in_host = "ip -n " + netns_ + " ";
    const std::string in_internet = "ip -n " + internet_netns_ + " ";
    sh(in_host + "link set lo up && " + in_host + "addr add " + kSlirpHostPrivateIp + "/32 dev lo");
    sh(in_host + "link add " + host_link_ + " type veth peer name " + internet_link_ + " netns " +
       internet_netns_);
    sh(in_host + "addr add " + kSlirpHostIp + "/24 dev " + host_link_ + " && " + in_host +
       "link set " + host_link_ + " up");
    sh(in_internet + "addr add " + kSlirpHostGateway + "/24 dev " + internet_link_ + " && " +
       in_internet + "link set " + internet_link_ + " up");
    for (const char* to : {"198.51.100.0/24", "169.254.169.254/32", "10.0.0.1/32", "10.0.0.53/32"})
      sh(in_host + "route add " + to + " via " + kSlirpHostGateway);
    const fs::path www = internet.dir() / "slirp-host";
    fs::create_directories(www);
    std::ofstream(www / "index.html") << "host-service-ok\n";
    const std::string port = std::to_string(kSlirpHostServicePort);  // every address: 0.0.0.0
    service_ = fork();
    if (service_ == 0) {
      execlp("ip", "ip", "netns", "exec", netns_.c_str(), "busybox", "httpd", "-f", "-p",
             port.c_str(), "-h", www.c_str(), nullptr);
      _exit(127);
    }
    if (service_ < 0) throw std::runtime_error("fork the host's service");
    for (int i = 0; i < 100; ++i) {
      if (fetch_here(kSlirpHostIp) == "host-service-ok\n") return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("the slirp host's service did not come up");
  }

  void teardown() {
    if (service_ > 0) {
      kill(service_, SIGKILL);
      waitpid(service_, nullptr, 0);
      service_ = -1;
    }
    std::system(("ip netns del " + netns_ + " 2>/dev/null").c_str());  // the veth goes with it
  }

  std::string internet_netns_;
  std::string suffix_ = random_suffix();
  std::string netns_ = "sctest-h" + suffix_;
  std::string host_link_ = "scth" + suffix_ + "a";
  std::string internet_link_ = "scth" + suffix_ + "b";
  pid_t service_ = -1;
};

// Inside the sandbox: $h and $port are the proxy's address and port, from http_proxy.
const std::string kProxyVars = "p=${http_proxy#http://}; h=${p%:*}; port=${p##*:}; ";

// A raw request to the proxy with busybox nc; prints the proxy's status line.
std::string raw_request(const std::string& request_line) {
  return "printf '" + request_line + "\\r\\n\\r\\n' | nc $h $port | head -n 1; ";
}

bool blocked(const CliRun& run, const std::string& host) {
  for (const auto& b : run.record["events"]["blocked_connections"])
    if (contains(b["host"].get<std::string>(), host)) return true;
  return false;
}

// The reason the record gives for a drop by the firewall to host:port ("" when not recorded).
std::string dropped_reason(const CliRun& run, const std::string& host, int port) {
  for (const auto& b : run.record["events"]["blocked_connections"])
    if (b.value("host", "") == host && b.value("port", -1) == port) return b.value("reason", "");
  return "";
}

std::string sandbox_stdout(const CliRun& run) {
  return run.record.is_object() ? run.record.value("stdout", std::string()) : std::string();
}

// sandcell supervisors a test started in the background: stopped (SIGTERM, so they clean up)
// when the test ends, also when an assertion fails.
struct SupervisorGuard {
  std::vector<pid_t> pids;
  void kill(pid_t pid, int signal) {
    ::kill(pid, signal);
    waitpid(pid, nullptr, 0);
    std::erase(pids, pid);
  }
  ~SupervisorGuard() {
    for (pid_t pid : std::vector<pid_t>(pids)) kill(pid, SIGTERM);
  }
};

class NetworkPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    internet_.emplace();
  }
  void TearDown() override { internet_.reset(); }
  // The nft table outlives runs by design (network/include/sandcell/network/nft_rules.hpp):
  // gc removes it once no run uses it, leaving the host as the suite found it.
  static void TearDownTestSuite() { run_sandcell({"gc"}); }

  CliRun run_allowed(const std::string& transport, const std::string& script,
                     std::vector<std::string> extra = {}) {
    std::vector<std::string> flags = {"--net", kAllowlist, "--net-hosts", internet_->hosts_file(),
                                      "--net-transport", transport};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return run_in_sandbox(flags, {"sh", "-c", kProxyVars + script});
  }

  // sandcell run --net full --net-transport slirp inside the slirp host's namespace: the
  // slirp4netns it starts connects from there, where nothing leads to the machine's uplink.
  CliRun run_slirp_on(const SlirpHost& host, const std::vector<std::string>& flags,
                      const std::string& script) {
    std::vector<std::string> argv = {"/usr/bin/nsenter", "--net=/run/netns/" + host.netns(),
                                     sandcell_binary(), "run", "--json", "--rootfs", test_rootfs(),
                                     "--net", "full", "--net-transport", "slirp"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.insert(argv.end(), {"--", "sh", "-c", script});
    return run_program(argv);
  }

  // sandcell run --json --net full (veth) inside `host`, which forwards: its veth, its nft table
  // and its masquerade are that namespace's, its uplink the test internet.
  CliRun run_full_on(const SlirpHost& host, const std::vector<std::string>& flags,
                     const std::vector<std::string>& command) {
    std::vector<std::string> argv = {"/usr/bin/nsenter",
                                     "--net=/run/netns/" + host.netns(),
                                     sandcell_binary(),
                                     "run",
                                     "--json",
                                     "--rootfs",
                                     test_rootfs(),
                                     "--net",
                                     "full"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    return run_program(argv);
  }

  std::optional<TestInternet> internet_;
};

// Allow mode, once per transport: "socket" (the proxy's listener made in the sandbox's netns, no
// link at all) and "veth" (a veth pair and the nft table).
class AllowMode : public NetworkPolicy, public ::testing::WithParamInterface<std::string> {
 protected:
  bool socket() const { return GetParam() == "socket"; }
  CliRun run_allowed(const std::string& script, std::vector<std::string> extra = {}) {
    return NetworkPolicy::run_allowed(GetParam(), script, std::move(extra));
  }
};
INSTANTIATE_TEST_SUITE_P(Transport, AllowMode, ::testing::Values("socket", "veth"),
                         [](const auto& info) { return info.param; });

TEST_P(AllowMode, AllowedHost_Returns200ThroughTheProxy) {
  CliRun run = run_allowed("wget -q -O- http://allowed.test/; " +
                           raw_request("CONNECT allowed.test:443 HTTP/1.1"));
  ASSERT_TRUE(run.record.is_object()) << run.err;
  EXPECT_EQ(run.record["status"], "ok") << run.record.dump(2);
  EXPECT_TRUE(contains(sandbox_stdout(run), "allowed-ok"));
  EXPECT_TRUE(contains(sandbox_stdout(run), "HTTP/1.1 200"));
  EXPECT_EQ(run.record["isolation"]["network"], "allow");
  EXPECT_EQ(run.record["isolation"]["network_transport"], GetParam());
  EXPECT_EQ(run.record["events"]["allowed_connections"], 2);
  EXPECT_TRUE(run.record["events"]["blocked_connections"].empty());
}

TEST_P(AllowMode, ProxyVariables_SetInUpperAndLowerCase) {
  CliRun run = run_allowed("env | sort", {"--env", "HTTP_PROXY=http://elsewhere:1"});
  std::string out = sandbox_stdout(run);
  // socket: the sandbox's own loopback; veth: the host end of the veth, in 198.18.0.0/15.
  const std::string url = socket() ? "=http://127.0.0.1:3128\n" : "=http://198.1";
  for (const char* name : {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"})
    EXPECT_TRUE(contains(out, name + url)) << name << " missing in\n" << out;
  for (const char* name : {"NO_PROXY=localhost", "no_proxy=localhost"})
    EXPECT_TRUE(contains(out, name)) << name << " missing in\n" << out;
  EXPECT_FALSE(contains(out, "elsewhere"));
}

TEST_P(AllowMode, DeniedHost_Gets403AndIsRecorded) {
  CliRun run = run_allowed("wget -q -O- http://denied.test/; " +
                           raw_request("CONNECT denied.test:443 HTTP/1.1"));
  EXPECT_FALSE(contains(sandbox_stdout(run), "denied-ok"));
  EXPECT_TRUE(contains(run.record.value("stderr", std::string()), "403"));
  EXPECT_TRUE(contains(sandbox_stdout(run), "HTTP/1.1 403"));
  const auto& events = run.record["events"]["blocked_connections"];
  ASSERT_EQ(events.size(), 2u) << run.record.dump(2);
  EXPECT_EQ(events[0]["host"], "denied.test");
  EXPECT_EQ(events[0]["port"], 80);
  EXPECT_EQ(events[1]["port"], 443);
  EXPECT_EQ(events[0]["reason"], "not in allowlist");
  EXPECT_EQ(run.record["events"]["allowed_connections"], 0);
}

TEST_P(AllowMode, IpLiteralsAndDecimalIp_Blocked) {
  CliRun run = run_allowed(
      "wget -q -O- http://" + std::string(kDeniedIp) + "/; wget -q -O- http://" + kAllowedIp +
      "/; wget -q -O- http://3325256724/; " + raw_request("CONNECT 3325256714:80 HTTP/1.1"));
  EXPECT_FALSE(contains(sandbox_stdout(run), "-ok"));
  EXPECT_EQ(run.record["events"]["blocked_connections"].size(), 4u) << run.record.dump(2);
  EXPECT_TRUE(blocked(run, kDeniedIp));
  EXPECT_TRUE(blocked(run, kAllowedIp));
  EXPECT_EQ(run.record["events"]["allowed_connections"], 0);
}

TEST_P(AllowMode, LookalikeNames_Blocked) {
  std::string script;
  for (const char* host : {"evil.test\\000.allowed.test", "allowed.test.evil.test",
                           "evilallowed.test", "allowed.test@evil.test"}) {
    script += raw_request(std::string("CONNECT ") + host + ":80 HTTP/1.1");
    script += raw_request(std::string("GET http://") + host + "/ HTTP/1.1");
  }
  script +=
      "wget -q -O- http://allowed.test@evil.test/; wget -q -O- http://allowed.test.evil.test/; ";
  CliRun run = run_allowed(script);
  std::string out = sandbox_stdout(run);
  EXPECT_FALSE(contains(out, "200")) << out;
  EXPECT_FALSE(contains(out, "-ok")) << out;
  EXPECT_EQ(run.record["events"]["blocked_connections"].size(), 10u) << run.record.dump(2);
  EXPECT_EQ(run.record["events"]["allowed_connections"], 0);
}

TEST_P(AllowMode, AllowedNameResolvingToMetadataOrPrivate_Blocked) {
  // The test routes both addresses to its own namespace: the host can reach them, the proxy must
  // not.
  ASSERT_TRUE(host_reaches(kMetadataIp, 80));
  ASSERT_TRUE(host_reaches(kInternalIp, 80));
  CliRun run = run_allowed(
      "wget -q -O- http://metadata.allowed.test/; wget -q -O- http://internal.allowed.test/; " +
      raw_request("CONNECT metadata.allowed.test:80 HTTP/1.1"));
  EXPECT_FALSE(contains(sandbox_stdout(run), "-ok"));
  EXPECT_TRUE(blocked(run, "metadata.allowed.test"));
  EXPECT_TRUE(blocked(run, "internal.allowed.test"));
  EXPECT_EQ(run.record["events"]["allowed_connections"], 0);
}

TEST_P(AllowMode, AllowCidr_OpensABlockedRangeToTheProxy) {
  CliRun run = run_allowed(
      "wget -q -O- http://internal.allowed.test/; wget -q -O- http://metadata.allowed.test/",
      {"--net-allow-cidr", "10.0.0.1/32"});
  EXPECT_TRUE(contains(sandbox_stdout(run), "internal-ok"));
  EXPECT_FALSE(contains(sandbox_stdout(run), "metadata-ok"));
}

TEST_P(AllowMode, BypassingTheProxy_TcpUdpIcmpAndDns_Dropped) {
  // A TCP and a UDP listener on the host: reachable from the host, not from the sandbox.
  ASSERT_TRUE(host_reaches(kAllowedIp, 80));
  // With the socket transport $h is the sandbox's own loopback (pinging it proves nothing):
  // ping the test internet instead.
  const std::string ping_first = socket() ? kInternetSide : "$h";
  CliRun run = run_allowed("sc-probe connect $h $port; sc-probe connect $h 22; sc-probe connect " +
                               std::string(kAllowedIp) + " 80; sc-probe connect " + kInternetSide +
                               " 80; sc-probe udp-send $h 53; sc-probe udp-send $h 443; "
                               "sc-probe udp-send " + kInternetSide + " 53; ping -c 1 -W 1 " +
                               ping_first + "; ping -c 1 -W 1 " + kAllowedIp +
                               "; nslookup allowed.test $h; nslookup allowed.test " +
                               kInternetSide + "; echo nslookup=$?",
                           {"--cap-add", "NET_RAW"});
  std::string out = sandbox_stdout(run);
  if (socket()) {
    // Nothing routable: only the proxy's port answers on the sandbox's own loopback.
    EXPECT_TRUE(contains(out, "connect ok\nconnect errno=ECONNREFUSED\nconnect errno=ENETUNREACH\n"
                              "connect errno=ENETUNREACH\n")) << out;
    EXPECT_TRUE(contains(out, "udp errno=ECONNREFUSED\nudp errno=ECONNREFUSED\n"
                              "udp errno=ENETUNREACH\n")) << out;
  } else {
    EXPECT_TRUE(contains(out, "connect ok\nconnect timeout\nconnect timeout\nconnect timeout\n"))
        << out;
    EXPECT_TRUE(contains(out, "udp timeout\nudp timeout\nudp timeout\n")) << out;
  }
  EXPECT_FALSE(contains(out, " 1 packets received")) << out;
  EXPECT_FALSE(contains(out, "nslookup=0")) << out;
}

// --- ports (issue 38): a bare entry opens 443 to CONNECT and 80 to plain HTTP, nothing else ----

// The status line of every raw request, then the body a GET gets (if any), in order.
TEST_P(AllowMode, BareHost_DefaultPortsAllowedOtherPortsRefusedAndRecorded) {
  CliRun run = run_allowed(
      "wget -q -O- http://allowed.test/; " + raw_request("CONNECT allowed.test:443 HTTP/1.1") +
      raw_request("CONNECT allowed.test:22 HTTP/1.1") +
      raw_request("CONNECT www.allowed.test:8080 HTTP/1.1") +
      raw_request("CONNECT allowed.test:80 HTTP/1.1") +
      "printf 'CONNECT allowed.test:22 HTTP/1.1\\r\\n\\r\\n' | nc $h $port | tail -n 1; "
      "wget -q -O- http://allowed.test:8080/ || echo wget=$?");
  ASSERT_TRUE(run.record.is_object()) << run.err;
  const std::string rule = "allowed.test opens CONNECT to 443 and HTTP to 80 only";
  EXPECT_EQ(sandbox_stdout(run), "allowed-ok\nHTTP/1.1 200 Connection established\r\n"
                            "HTTP/1.1 403 Forbidden\r\nHTTP/1.1 403 Forbidden\r\n"
                            "HTTP/1.1 403 Forbidden\r\nport 22 not allowed: " + rule + "\nwget=1\n")
      << run.record.dump(2);
  EXPECT_EQ(run.record["events"]["allowed_connections"], 2);
  const auto& blocked = run.record["events"]["blocked_connections"];
  ASSERT_EQ(blocked.size(), 5u) << run.record.dump(2);
  EXPECT_EQ(blocked[0]["host"], "allowed.test");
  EXPECT_EQ(blocked[0]["port"], 22);
  EXPECT_EQ(blocked[0]["reason"], "port 22 not allowed: " + rule);
  EXPECT_EQ(blocked[1]["host"], "www.allowed.test");
  EXPECT_EQ(blocked[1]["reason"],
            "port 8080 not allowed: *.allowed.test opens CONNECT to 443 and HTTP to 80 only");
  EXPECT_EQ(blocked[2]["port"], 80);
  EXPECT_EQ(blocked[4]["port"], 8080);
}

TEST_P(AllowMode, HostPortRangesAndWildcardWithPort_OpenExactlyThosePorts) {
  const std::vector<std::string> flags = {
      "--net", "allow:allowed.test:8080,*.allowed.test:20-22,[2001:db8::1]:443",
      "--net-hosts", internet_->hosts_file(), "--net-transport", GetParam()};
  CliRun run = run_in_sandbox(
      flags, {"sh", "-c",
              kProxyVars + "wget -q -O- http://allowed.test:8080/; " +
                  raw_request("CONNECT www.allowed.test:22 HTTP/1.1") +
                  raw_request("CONNECT www.allowed.test:443 HTTP/1.1") +
                  raw_request("CONNECT allowed.test:443 HTTP/1.1") +
                  raw_request("CONNECT allowed.test:22 HTTP/1.1")});
  ASSERT_TRUE(run.record.is_object()) << run.err;
  EXPECT_EQ(sandbox_stdout(run), "allowed-ok\nHTTP/1.1 200 Connection established\r\n"
                            "HTTP/1.1 403 Forbidden\r\nHTTP/1.1 403 Forbidden\r\n"
                            "HTTP/1.1 403 Forbidden\r\n")
      << run.record.dump(2);
  const auto& blocked = run.record["events"]["blocked_connections"];
  ASSERT_EQ(blocked.size(), 3u) << run.record.dump(2);
  EXPECT_EQ(blocked[0]["reason"], "port 443 not allowed: *.allowed.test:20-22 opens 20-22 only");
  EXPECT_EQ(blocked[1]["reason"], "port 443 not allowed: allowed.test:8080 opens 8080 only");
}

TEST_F(NetworkPolicy, MalformedAllowlistEntries_Exit125NamingTheEntry) {
  const fs::path file = internet_->dir() / "allow";
  for (const std::string entry : {"host:", "host:0", "host:65536", "host:22-21", ":22"}) {
    CliRun flag = run_in_sandbox({"--net", "allow:ok.test," + entry}, {"true"});
    EXPECT_EQ(flag.exit_code, 125) << entry;
    EXPECT_TRUE(contains(flag.err, "allowlist entry '" + entry + "'")) << entry << ": " << flag.err;
    std::ofstream(file) << "ok.test:443\n" << entry << "\n";
    CliRun listed = run_in_sandbox({"--net", "allow:ok.test", "--net-allow-file", file}, {"true"});
    EXPECT_EQ(listed.exit_code, 125) << entry;
    EXPECT_TRUE(contains(listed.err, file.string() + ":2: allowlist entry '" + entry + "'"))
        << entry << ": " << listed.err;
  }
}

// --- the host itself (issue 38): the proxy runs in the host's network namespace ----------------

// A TCP listener of the test's own on an address of the host (the host end of the test's veth):
// connections complete in the backlog, so anything that connects gets through.
class HostListener {
 public:
  explicit HostListener(const char* address) : fd_(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in sin{.sin_family = AF_INET, .sin_port = 0, .sin_addr = {}, .sin_zero = {}};
    inet_pton(AF_INET, address, &sin.sin_addr);
    socklen_t length = sizeof sin;
    if (bind(fd_, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&sin), &length) != 0)
      throw std::runtime_error(std::string("listen on ") + address + ": " + strerror(errno));
    port_ = ntohs(sin.sin_port);
  }
  ~HostListener() { close(fd_); }
  HostListener(const HostListener&) = delete;
  HostListener& operator=(const HostListener&) = delete;
  uint16_t port() const { return port_; }

 private:
  int fd_;
  uint16_t port_ = 0;
};

TEST_P(AllowMode, AllowedNamePointingAtTheHostItself_Refused) {
  HostListener service(kHostSide);  // a host service: reachable from the host, not through us
  ASSERT_TRUE(host_reaches(kHostSide, service.port()));
  const std::string target = "self.allowed.test:" + std::to_string(service.port());
  const fs::path allow = internet_->dir() / "allow-self";
  std::ofstream(allow) << target << "\n";
  CliRun run = run_allowed(raw_request("CONNECT " + target + " HTTP/1.1"),
                           {"--net-allow-file", allow.string()});
  EXPECT_EQ(sandbox_stdout(run), "HTTP/1.1 403 Forbidden\r\n") << run.record.dump(2);
  const auto& blocked = run.record["events"]["blocked_connections"];
  ASSERT_EQ(blocked.size(), 1u) << run.record.dump(2);
  EXPECT_EQ(blocked[0]["port"], service.port());
  EXPECT_TRUE(contains(blocked[0]["reason"], "resolves to blocked address: address of this host " +
                                                 std::string(kHostSide) + " (sct"))
      << run.record.dump(2);
}

// The same from inside the test internet's namespace, where its servers' addresses are the host's
// own: an allowed name, and a range --net-allow-cidr opens, still do not reach them.
TEST_P(AllowMode, HostAddressesInsideAnOpenedRange_Refused) {
  std::vector<std::string> argv = {"/usr/bin/nsenter", "--net=/run/netns/" + internet_->netns(),
                                   sandcell_binary(), "run", "--json", "--rootfs", test_rootfs(),
                                   "--net", kAllowlist, "--net-hosts", internet_->hosts_file(),
                                   "--net-transport", GetParam(), "--net-allow-cidr", "10.0.0.0/24",
                                   "--", "sh", "-c",
                                   kProxyVars + "wget -q -O- http://allowed.test/; "
                                                "wget -q -O- http://internal.allowed.test/; " +
                                       raw_request("CONNECT allowed.test:443 HTTP/1.1")};
  CliRun run = run_program(argv);
  ASSERT_TRUE(run.record.is_object()) << run.out << run.err;
  EXPECT_EQ(sandbox_stdout(run), "HTTP/1.1 403 Forbidden\r\n") << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, "allowed.test", 80),
            std::string("resolves to blocked address: address of this host ") + kAllowedIp +
                " (" + "sct" + internet_->netns().substr(7) + "n)");
  EXPECT_EQ(dropped_reason(run, "internal.allowed.test", 80),
            std::string("resolves to blocked address: address of this host ") + kInternalIp +
                " (lo)");
  EXPECT_EQ(run.record["events"]["allowed_connections"], 0);
}

// --- every drop in the record (issue 38) --------------------------------------------------------

TEST_F(NetworkPolicy, VethTransport_DirectConnectionsDroppedByTheHost_Recorded) {
  CliRun run = run_allowed("veth", "sc-probe connect " + std::string(kAllowedIp) +
                                       " 80; sc-probe udp-send " + kInternetSide +
                                       " 53; sc-probe connect $h 22; echo h=$h");
  const std::string out = sandbox_stdout(run);
  // Still dropped by the host's table, as before: the program sees timeouts.
  EXPECT_TRUE(contains(out, "connect timeout\nudp timeout\nconnect timeout\n")) << out;
  const std::string host = out.substr(out.find("h=") + 2, out.find('\n', out.find("h=")) - out.find("h=") - 2);
  const std::string why = " dropped by the firewall: only the proxy is reachable";
  EXPECT_EQ(dropped_reason(run, kAllowedIp, 80), "tcp" + why) << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, kInternetSide, 53), "udp" + why) << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, host, 22), "tcp" + why) << run.record.dump(2);
  EXPECT_EQ(run.record["events"]["blocked_connections"].size(), 3u) << run.record.dump(2);
}

// Full mode over veth inside the test internet's namespace (forwarding turned on there, never on
// the host): its servers' addresses are the "host's" own, which its input chain drops.
TEST_F(NetworkPolicy, FullMode_ConnectionToTheHostItself_DroppedAndRecorded) {
  sh("ip netns exec " + internet_->netns() + " sysctl -qw net.ipv4.ip_forward=1");
  CliRun run = run_program({"/usr/bin/nsenter", "--net=/run/netns/" + internet_->netns(),
                            sandcell_binary(), "run", "--json", "--rootfs", test_rootfs(), "--net",
                            "full", "--net-transport", "veth", "--", "sc-probe", "connect",
                            kAllowedIp, "80"});
  ASSERT_TRUE(run.record.is_object()) << run.out << run.err;
  // Dropped in the sandbox's own output hook: TCP retries the SYN until sc-probe gives up.
  EXPECT_EQ(sandbox_stdout(run), "connect timeout\n") << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, kAllowedIp, 80),
            "tcp dropped by the firewall: an address of this host")
      << run.record.dump(2);
}

TEST_F(NetworkPolicy, DefaultTransport_SocketForAllowVethForFullAsRoot) {
  CliRun allow = run_in_sandbox({"--net", kAllowlist, "--net-hosts", internet_->hosts_file()}, {"true"});
  EXPECT_EQ(allow.record["isolation"]["network_transport"], "socket") << allow.out << allow.err;
  CliRun none = run_in_sandbox({}, {"true"});
  EXPECT_TRUE(none.record["isolation"]["network_transport"].is_null()) << none.out << none.err;
  SlirpHost host(*internet_);  // full over veth needs forwarding: on in the test's host only
  host.forwarding();
  CliRun full = run_full_on(host, {}, {"true"});
  EXPECT_EQ(full.record["isolation"]["network_transport"], "veth") << full.out << full.err;
}

TEST_F(NetworkPolicy, SocketTransport_NothingRoutableInside) {
  // Only lo, no route; and the proxy's port cannot be taken over by a listener of the program.
  CliRun run = run_allowed("socket", "ls /sys/class/net; ip route; ip -o addr | grep -vc ' lo '; "
                                     "timeout 2 httpd -f -p 127.0.0.1:3128; echo httpd=$?");
  EXPECT_EQ(sandbox_stdout(run), "lo\n0\nhttpd=1\n") << run.record.dump(2);
}

TEST_F(NetworkPolicy, VethTransport_SpoofedSourceAddress_Dropped) {
  // With CAP_NET_ADMIN the sandbox can give its interface another address; packets from it must
  // not reach the proxy, while the real address still does.
  CliRun run = run_allowed(
      "veth", "dev=$(ls /sys/class/net | grep -v '^lo$'); ip addr add 198.18.255.250/32 dev $dev; "
      "/bin/sc-probe connect $h $port; /bin/sc-probe connect-from 198.18.255.250 $h $port",
      {"--cap-add", "NET_ADMIN"});
  EXPECT_EQ(sandbox_stdout(run), "connect ok\nconnect timeout\n") << run.record.dump(2);
}

TEST_P(AllowMode, RelayInsideTheSandbox_StillDenied) {
  // A relay the program runs (listening on its loopback) hands requests to the proxy unchanged:
  // the proxy still judges the host.
  CliRun run = run_allowed(
      "nc -l -p 3129 -e nc $h $port & sleep 0.3; "
      "printf 'CONNECT denied.test:80 HTTP/1.1\\r\\n\\r\\n' | nc 127.0.0.1 3129 | head -n 1");
  EXPECT_TRUE(contains(sandbox_stdout(run), "HTTP/1.1 403")) << run.record.dump(2);
  EXPECT_TRUE(blocked(run, "denied.test"));
}

TEST_P(AllowMode, OneSandboxCannotReachAnother) {
  const fs::path shared = internet_->dir() / "first";
  fs::create_directories(shared);
  pid_t first =
      spawn_sandcell({"run", "--rootfs", test_rootfs(), "--net", kAllowlist, "--net-transport",
                      GetParam(), "--timeout", "20", "--mount", shared.string() + ":/shared", "--",
                      "sh", "-c",
                      "echo ${http_proxy#http://} > /shared/proxy; exec httpd -f -p 8080 -h /etc"});
  SupervisorGuard guard{{first}};
  std::string proxy;
  for (int i = 0; i < 200 && proxy.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(shared / "proxy") >> proxy;
  }
  ASSERT_FALSE(proxy.empty());
  if (socket()) {
    // The first sandbox has no address anyone could route to; its loopback is not ours.
    ASSERT_EQ(proxy, "127.0.0.1:3128");
    CliRun run = run_allowed("sc-probe connect 127.0.0.1 8080; " +
                             raw_request("CONNECT 127.0.0.1:8080 HTTP/1.1"));
    guard.kill(first, SIGTERM);
    EXPECT_TRUE(contains(sandbox_stdout(run), "connect errno=ECONNREFUSED\nHTTP/1.1 403")) << sandbox_stdout(run);
    return;
  }
  // The first sandbox's address: its proxy's host address (.1 of its /30) plus one.
  std::string host = proxy.substr(0, proxy.find(':'));
  std::string sandbox = host.substr(0, host.rfind('.') + 1) +
                        std::to_string(std::stoi(host.substr(host.rfind('.') + 1)) + 1);
  std::string other_port = proxy.substr(proxy.find(':') + 1);
  CliRun run =
      run_allowed("sc-probe connect " + sandbox + " 8080; sc-probe connect " + host + " " +
                  other_port + "; " + raw_request("CONNECT " + sandbox + ":8080 HTTP/1.1"));
  guard.kill(first, SIGTERM);
  EXPECT_TRUE(contains(sandbox_stdout(run), "connect timeout\nconnect timeout\nHTTP/1.1 403"))
      << sandbox_stdout(run);
}

TEST_F(NetworkPolicy, FullMode_NatsToTestHostsButNotToBlockedRanges) {
  // Only test addresses are contacted, from the test's host, whose routes lead to its internet.
  SlirpHost host(*internet_);
  host.forwarding();
  CliRun run = run_full_on(
      host, {},
      {"sh", "-c",
       std::string("wget -q -O- http://") + kAllowedIp + "/; sc-probe connect " + kMetadataIp +
           " 80; sc-probe connect " + kInternalIp + " 80; grep -c nameserver /etc/resolv.conf"});
  ASSERT_TRUE(run.record.is_object()) << run.err;
  EXPECT_EQ(run.record["isolation"]["network"], "full");
  EXPECT_EQ(run.record["isolation"]["network_transport"], "veth");
  EXPECT_EQ(sandbox_stdout(run), "allowed-ok\nconnect timeout\nconnect timeout\n1\n")
      << run.record.dump(2);
  // Each blocked destination is in the record once, with the range that blocked it; the
  // allowed one is not.
  EXPECT_EQ(dropped_reason(run, kMetadataIp, 80),
            "tcp dropped by the firewall: link-local/metadata 169.254.0.0/16")
      << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, kInternalIp, 80), "tcp dropped by the firewall: private 10.0.0.0/8")
      << run.record.dump(2);
  EXPECT_EQ(run.record["events"]["blocked_connections"].size(), 2u) << run.record.dump(2);

  CliRun opened = run_full_on(host, {"--net-allow-cidr", "10.0.0.1/32"},
                              {"sc-probe", "connect", kInternalIp, "80"});
  EXPECT_EQ(sandbox_stdout(opened), "connect ok\n") << opened.record.dump(2);
}

// The resolver of `--net-resolv-conf` (10.0.0.53, private) answers inside the sandbox; another
// address of 10/8 stays blocked, and so does the resolver on any port but 53.
constexpr const char* kDnsScript =
    "grep nameserver /etc/resolv.conf; nslookup web.test | grep -c 198.51.100.10; "
    "wget -q -O- http://web.test/; sc-probe connect 10.0.0.53 80; sc-probe connect 10.0.0.1 80; "
    "sc-probe udp-send 10.0.0.1 53";
// Both transports drop in the sandbox's own output hook first (the veth path's host firewall
// drops too), so the datagram's sendmsg sees EPERM; the record names each drop once.
constexpr const char* kDnsExpected =
    "nameserver 10.0.0.53\n1\nallowed-ok\nconnect timeout\nconnect timeout\nudp errno=EPERM\n";

void expect_dns_script_drops(const CliRun& run) {
  EXPECT_EQ(dropped_reason(run, "10.0.0.53", 80), "tcp dropped by the firewall: private 10.0.0.0/8")
      << run.record.dump(2);
  EXPECT_EQ(dropped_reason(run, "10.0.0.1", 80), "tcp dropped by the firewall: private 10.0.0.0/8");
  EXPECT_EQ(dropped_reason(run, "10.0.0.1", 53), "udp dropped by the firewall: private 10.0.0.0/8");
  EXPECT_EQ(dropped_reason(run, "10.0.0.53", 53), "") << "the resolver is open on port 53";
}

TEST_F(NetworkPolicy, FullMode_DnsThroughTheConfiguredPrivateResolver) {
  SlirpHost host(*internet_);  // its routes lead 10.0.0.53 to the test internet
  host.forwarding();
  CliRun run =
      run_full_on(host, {"--net-resolv-conf", internet_->resolv_conf()}, {"sh", "-c", kDnsScript});
  EXPECT_EQ(sandbox_stdout(run), kDnsExpected) << run.record.dump(2);
  expect_dns_script_drops(run);
}

TEST_F(NetworkPolicy, SlirpTransport_FullModeWithoutBlockedRangesAndWithDns) {
  SlirpHost host(*internet_);
  CliRun run = run_slirp_on(host, {"--net-resolv-conf", internet_->resolv_conf()},
                            std::string(kDnsScript) + "; sc-probe connect " + kMetadataIp +
                                " 80; ip -o link | grep -c tap0");
  ASSERT_TRUE(run.record.is_object()) << run.out << run.err;
  EXPECT_EQ(run.record["isolation"]["network_transport"], "slirp4netns");
  EXPECT_EQ(sandbox_stdout(run), std::string(kDnsExpected) + "connect timeout\n1\n")
      << run.record.dump(2);
  expect_dns_script_drops(run);
  EXPECT_EQ(dropped_reason(run, kMetadataIp, 80),
            "tcp dropped by the firewall: link-local/metadata 169.254.0.0/16");

  CliRun opened =
      run_slirp_on(host, {"--net-allow-cidr", "10.0.0.1/32"}, "sc-probe connect 10.0.0.1 80");
  EXPECT_EQ(sandbox_stdout(opened), "connect ok\n") << opened.out << opened.err;
}

// slirp4netns connects from the host's own network namespace: an address of the host (its link,
// one in a range --net-allow-cidr opens) would reach the host's service bound to 0.0.0.0 as local
// traffic. The sandbox's filter drops them and the record names them; the internet stays open.
TEST_F(NetworkPolicy, SlirpTransport_TheHostsOwnAddresses_DroppedAndRecorded) {
  SlirpHost host(*internet_);
  ASSERT_EQ(host.fetch_here(kSlirpHostPrivateIp), "host-service-ok\n");  // served on both
  const std::string port = std::to_string(kSlirpHostServicePort);
  CliRun run = run_slirp_on(host, {"--net-allow-cidr", "10.1.0.0/16"},
                            "sc-probe connect " + std::string(kSlirpHostIp) + " " + port +
                                "; sc-probe connect " + kSlirpHostPrivateIp + " " + port +
                                "; wget -q -T 2 -O- http://" + kSlirpHostIp + ":" + port +
                                "/; wget -q -O- http://" + kAllowedIp + "/");
  ASSERT_TRUE(run.record.is_object()) << run.out << run.err;
  EXPECT_EQ(sandbox_stdout(run), "connect timeout\nconnect timeout\nallowed-ok\n") << run.record.dump(2);
  for (const char* address : {kSlirpHostIp, kSlirpHostPrivateIp})
    EXPECT_EQ(dropped_reason(run, address, kSlirpHostServicePort),
              "tcp dropped by the firewall: an address of this host")
        << run.record.dump(2);
  EXPECT_EQ(run.record["events"]["blocked_connections"].size(), 2u) << run.record.dump(2);
}

TEST_F(NetworkPolicy, FullMode_FailsClearlyWhenForwardingIsOff) {
  // Forwarding turned off in a throw-away network namespace (never on the host): sandcell must
  // refuse, not turn it on.
  std::string out = shell_output("unshare -n sh -c 'echo 0 > /proc/sys/net/ipv4/ip_forward && " +
                                 sandcell_binary() + " run --rootfs " + test_rootfs() +
                                 " --net full -- true 2>&1; echo exit=$?'");
  EXPECT_TRUE(contains(out, "IPv4 forwarding")) << out;
  EXPECT_TRUE(contains(out, "exit=125")) << out;
}

TEST_F(NetworkPolicy, BadNetworkFlags_Exit125WithAMessage) {
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  for (const Case& c : std::vector<Case>{
           {{"--net", "bogus"}, "--net expects"},
           {{"--net", "allow:"}, "needs hosts"},
           {{"--net", "allow:a b.test"}, "a b.test"},
           {{"--net", "allow:x.test", "--net-allow-cidr", "10.0.0.1/8"}, "--net-allow-cidr"},
           {{"--net", "allow:x.test", "--net-allow-cidr", "198.18.0.0/16"}, "overlaps 198.18.0.0/15"},
           {{"--net", "full", "--net-allow-cidr", "0.0.0.0/0"}, "overlaps 198.18.0.0/15"},
           {{"--net-hosts", internet_->hosts_file()}, "--net-hosts needs"},
           {{"--net", "allow:x.test", "--net-allow-file", "/nonexistent"}, "nonexistent"},
           {{"--net-transport", "veth"}, "--net-transport needs"},
           {{"--net", "allow:x.test", "--net-transport", "slirp"}, "slirp is for --net full"},
           {{"--net", "full", "--net-transport", "socket"}, "socket carries only"},
           {{"--net", "full", "--net-transport", "bogus"}, "--net-transport expects"},
           {{"--net", "full", "--net-transport", "slirp", "--cap-add", "NET_ADMIN"}, "refused"},
           {{"--net", "allow:x.test", "--net-resolv-conf", "/etc/resolv.conf"}, "--net-resolv-conf needs"},
           {{"--net", "full", "--net-transport", "slirp", "--net-resolv-conf", "/nonexistent"}, "nonexistent"},
       }) {
    CliRun run = run_in_sandbox(c.flags, {"true"});
    EXPECT_EQ(run.exit_code, 125) << c.message;
    EXPECT_TRUE(contains(run.err + run.out, c.message)) << run.err << run.out;
  }
}

TEST_F(NetworkPolicy, Gc_RemovesTheFirewallOfAKilledSupervisorOnly) {
  auto table = [] { return shell_output("nft list table inet sandcell 2>/dev/null"); };
  // A nat_sources element: an address of 198.18.0.0/15, listed right after the set name.
  auto has_nat_source = [&] {
    const std::string t = table();
    const auto at = t.find("set nat_sources");
    return at != std::string::npos && t.find("elements = { 198.1", at) < t.find("}", at);
  };
  auto proxy_elements = [&] {
    std::string t = table();
    const auto at = t.find("set proxy");
    return at == std::string::npos ? std::string() : t.substr(at, t.find("}", at) - at);
  };
  auto proxy_count = [&] {
    const std::string elements = proxy_elements();
    size_t n = 0;
    for (size_t at = elements.find("\"sc-"); at != std::string::npos;
         at = elements.find("\"sc-", at + 1))
      ++n;
    return n;
  };
  // The crashed run: full (a NAT source) where IPv4 forwarding is on; where it is off (sandcell
  // refuses full there and leaves the host's setting alone), a second veth allowlist run.
  const bool nat = shell_output("cat /proc/sys/net/ipv4/ip_forward") == "1\n";
  const std::vector<std::string> allow_veth = {"--net", kAllowlist, "--net-transport", "veth"};
  std::vector<std::string> crashed_flags =
      nat ? std::vector<std::string>{"--net", "full"} : allow_veth;
  auto spawn = [&](const std::vector<std::string>& flags) {
    std::vector<std::string> args = {"run", "--rootfs", test_rootfs()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--timeout", "20", "--", "sleep", "20"});
    return spawn_sandcell(args);
  };
  pid_t live = spawn(allow_veth);
  pid_t crashed = spawn(crashed_flags);
  SupervisorGuard guard{{live, crashed}};
  auto both_up = [&] { return nat ? has_nat_source() && proxy_count() >= 1 : proxy_count() == 2; };
  for (int i = 0; i < 250 && !both_up(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(both_up()) << table();
  guard.kill(crashed, SIGKILL);  // no chance to clean up: its elements stay
  CliRun gc = run_sandcell({"gc"});
  EXPECT_TRUE(contains(gc.out, "removed network sc-")) << gc.out << gc.err;
  EXPECT_FALSE(has_nat_source()) << table();
  EXPECT_EQ(proxy_count(), 1u)
      << "gc removed the live run's proxy element or kept a crashed one's: " << table();
  guard.kill(live, SIGTERM);
  // The live run removed its own element: the one gc kept was the live run's. (A run withdraws
  // its elements by letting them expire in 1 ms, nft_rules.cpp: one is listed until the next
  // jiffy, up to 4 ms at HZ=250, after the run has exited.)
  for (int i = 0; i < 100 && proxy_count() != 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(proxy_count(), 0u) << table();
  run_sandcell({"gc"});
  EXPECT_FALSE(contains(shell_output("nft list tables"), "sandcell"));
}

// Containers, minimal roots and CI runners may have a fresh tmpfs on /run, without the /run/lock
// that Debian's boot scripts make (issue 36): the veth path (its host-wide lock, the nft table,
// the netns pool's files under the state root) and gc must work there. The test makes such a
// /run in a private mount namespace, so the host's own /run is never touched.
TEST_F(NetworkPolicy, WithoutRunLock_VethRunAndGcWork) {
  const fs::path out = internet_->dir();
  const std::string script =
      "mount -t tmpfs -o mode=0755 tmpfs /run || exit 90; [ ! -e /run/lock ] || exit 91; "
      "\"$1\" run --json --rootfs \"$2\" --net " + std::string(kAllowlist) +
      " --net-hosts \"$3\" --net-transport veth -- sh -c '" + kProxyVars +
      "wget -q -O- http://allowed.test/' >\"$4/run.json\" 2>\"$4/run.err\"; "
      "\"$1\" gc >\"$4/gc.out\" 2>&1; echo \"gc=$?\"";
  CliRun shell = run_program({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh",
                              "-c", script, "sh", sandcell_binary(), test_rootfs(),
                              internet_->hosts_file(), out.string()});
  ASSERT_EQ(shell.exit_code, 0) << shell.out << shell.err;
  auto read = [&](const char* name) {
    std::ifstream in(out / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const nlohmann::json record = nlohmann::json::parse(read("run.json"), nullptr, false);
  ASSERT_TRUE(record.is_object()) << read("run.json") << read("run.err");
  EXPECT_EQ(record["status"], "ok") << record.dump(2);
  EXPECT_EQ(record["isolation"]["network_transport"], "veth") << record.dump(2);
  EXPECT_TRUE(contains(record.value("stdout", ""), "allowed-ok")) << record.dump(2);
  EXPECT_EQ(shell.out, "gc=0\n") << read("gc.out");
  EXPECT_FALSE(contains(read("gc.out"), "/run/lock")) << read("gc.out");
  // What the run made on the host is gone: gc removed the table; the veth went with the netns.
  EXPECT_FALSE(contains(shell_output("nft list tables"), "sandcell"));
  for (int i = 0; i < 250 && contains(shell_output("ip -o link show"), " sc-"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(contains(shell_output("ip -o link show"), " sc-"));
}

TEST_P(AllowMode, AfterRuns_NoVethNetnsElementOrTableRemains) {
  CliRun run = run_allowed("wget -q -O- http://allowed.test/");
  EXPECT_TRUE(contains(sandbox_stdout(run), "allowed-ok"));
  // The run withdrew its elements itself (expiring within a jiffy of its exit, nft_rules.cpp);
  // the table waits for gc (nft_rules.hpp).
  const auto elements_listed = [] {
    return contains(shell_output("nft list table inet sandcell 2>/dev/null"), "h\" . ");
  };
  for (int i = 0; i < 100 && elements_listed(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(elements_listed());
  internet_.reset();
  // The veth goes with the sandbox's netns, which the kernel frees in the background.
  for (int i = 0; i < 250 && contains(shell_output("ip -o link show"), " sc-"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(contains(shell_output("ip -o link show"), " sc-"));
  EXPECT_FALSE(contains(shell_output("ip -o link show"), " sct"));
  EXPECT_FALSE(contains(shell_output("ip netns list"), "sctest-"));
  CliRun gc = run_sandcell({"gc"});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_FALSE(contains(shell_output("nft list tables"), "sandcell"));
  EXPECT_FALSE(contains(shell_output("ip route"), kMetadataIp));
}

}  // namespace
}  // namespace sandcell::test::network_policy_tests
