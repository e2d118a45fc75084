#pragma once
// The network tests' own "internet" (docs/architecture.md, "Network policy"): a network namespace
// joined to the host by a veth in 198.51.100.0/24 (TEST-NET-2), with busybox httpd servers
// standing for allowed.test (198.51.100.10), denied.test (198.51.100.20), a metadata service
// (169.254.169.254) and an internal host (10.0.0.1), and a resolver (tests/fixtures/dns-server.py)
// at 10.0.0.53. Only the /32s outside TEST-NET-2 get host routes, towards the test namespace, and
// only for the fixture's lifetime. Names reach sandcell's proxy through the hosts file
// (`--net-hosts`): nothing resolves through real DNS and nothing goes to the machine's uplink.
// Used by network_policy_test.cpp (`sandcell run --net`) and docker_api_network_test.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace sandcell::test::test_internet {

namespace fs = std::filesystem;

constexpr const char* kHostSide = "198.51.100.1";
constexpr const char* kInternetSide = "198.51.100.2";
constexpr const char* kAllowedIp = "198.51.100.10";
constexpr const char* kDeniedIp = "198.51.100.20";
constexpr const char* kMetadataIp = "169.254.169.254";
constexpr const char* kInternalIp = "10.0.0.1";
constexpr const char* kResolverIp = "10.0.0.53";
constexpr const char* kWebName = "web.test";  // what the resolver answers: kAllowedIp
constexpr const char* kAllowlist = "allow:allowed.test,*.allowed.test";

inline std::string random_suffix() {
  std::random_device random;
  char text[9];
  std::snprintf(text, sizeof text, "%06x", random() & 0xffffff);
  return text;
}

inline std::string shell_output(const std::string& command) {
  std::unique_ptr<FILE, decltype(&pclose)> pipe(popen((command + " 2>/dev/null").c_str(), "r"),
                                                &pclose);
  std::string out;
  std::array<char, 4096> buffer{};
  while (pipe && fgets(buffer.data(), buffer.size(), pipe.get()) != nullptr) out += buffer.data();
  return out;
}

inline void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// TCP connect from the test process (the host's netns), 1 s timeout.
inline bool host_reaches(const char* address, uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_in sin{.sin_family = AF_INET, .sin_port = htons(port), .sin_addr = {}, .sin_zero = {}};
  inet_pton(AF_INET, address, &sin.sin_addr);
  int rc = connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin);
  pollfd p{.fd = fd, .events = POLLOUT, .revents = 0};
  int err = 0;
  socklen_t len = sizeof err;
  if (rc < 0 && errno == EINPROGRESS && poll(&p, 1, 1000) == 1)
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  else if (rc < 0)
    err = errno ? errno : ETIMEDOUT;
  if (rc < 0 && p.revents == 0) err = ETIMEDOUT;
  close(fd);
  return err == 0;
}


// The test's own internet; the destructor removes every piece of it, also when a test fails.
class TestInternet {
 public:
  TestInternet() : dir_(fs::temp_directory_path() / ("sctest-" + suffix_)) {
    fs::create_directories(dir_);
    try {
      build();
    } catch (...) {
      teardown();
      throw;
    }
  }
  ~TestInternet() { teardown(); }
  TestInternet(const TestInternet&) = delete;
  TestInternet& operator=(const TestInternet&) = delete;

  std::string hosts_file() const { return dir_ / "hosts"; }
  std::string resolv_conf() const { return dir_ / "resolv.conf"; }
  const fs::path& dir() const { return dir_; }
  const std::string& netns() const { return netns_; }

 private:
  void build() {
    sh("ip netns add " + netns_);
    sh("ip link add " + host_link_ + " type veth peer name " + ns_link_ + " netns " + netns_);
    sh("ip addr add " + std::string(kHostSide) + "/24 dev " + host_link_ + " && ip link set " +
       host_link_ + " up");
    const std::string in_ns = "ip -n " + netns_ + " ";
    sh(in_ns + "link set lo up && " + in_ns + "addr add " + kInternetSide + "/24 dev " + ns_link_ +
       " && " + in_ns + "link set " + ns_link_ + " up");
    for (const char* address : {kAllowedIp, kDeniedIp})
      sh(in_ns + "addr add " + address + "/24 dev " + ns_link_);
    for (const char* address : {kMetadataIp, kInternalIp, kResolverIp}) {
      sh(in_ns + "addr add " + address + "/32 dev lo");
      sh("ip route add " + std::string(address) + "/32 via " + kInternetSide + " dev " +
         host_link_);
      routes_.push_back(address);
    }
    serve(kAllowedIp, "allowed-ok");
    // Ports a bare allowlist entry must not open (SSH, an application port) and 443, which it
    // opens to CONNECT: plain HTTP everywhere, so a tunnel that got through would show the body.
    for (const char* port : {"443", "22", "8080"}) serve(kAllowedIp, "allowed-ok", port);
    serve(kDeniedIp, "denied-ok");
    serve(kMetadataIp, "metadata-ok");
    serve(kInternalIp, "internal-ok");
    serve(kResolverIp, "resolver-http-ok");
    start({"ip", "netns", "exec", netns_, "python3",
           std::string(SANDCELL_TEST_FIXTURES_DIR) + "/dns-server.py", kResolverIp,
           std::string(kWebName) + "=" + kAllowedIp});
    std::ofstream(dir_ / "resolv.conf") << "nameserver " << kResolverIp << "\n";
    std::ofstream(dir_ / "hosts")
        << kAllowedIp << " allowed.test www.allowed.test\n"
        << kDeniedIp << " denied.test evil.test allowed.test.evil.test evilallowed.test\n"
        << kMetadataIp << " metadata.allowed.test\n"
        << kInternalIp << " internal.allowed.test\n"
        << kHostSide << " self.allowed.test\n";
    wait_until_serving();
  }

  void serve(const char* address, const std::string& body, const char* port = "80") {
    fs::path www = dir_ / address;
    fs::create_directories(www);
    std::ofstream(www / "index.html") << body << "\n";
    start({"ip", "netns", "exec", netns_, "busybox", "httpd", "-f", "-p",
           std::string(address) + ":" + port, "-h", www.string()});
  }

  // A server process in the test namespace, killed by teardown().
  void start(std::vector<std::string> args) {
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execvp(argv[0], argv.data());
      _exit(127);
    }
    if (pid < 0) throw std::runtime_error("fork " + args[4]);
    servers_.push_back(pid);
  }

  void wait_until_serving() const {
    for (int i = 0; i < 100; ++i) {
      if (host_reaches(kAllowedIp, 80) && host_reaches(kAllowedIp, 443) &&
          host_reaches(kAllowedIp, 22) && host_reaches(kAllowedIp, 8080) &&
          host_reaches(kDeniedIp, 80) &&
          host_reaches(kMetadataIp, 80) && host_reaches(kInternalIp, 80) &&
          host_reaches(kResolverIp, 80) && resolver_answers())
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("test httpd servers did not come up");
  }

  // The DNS server is up once it has bound its port (ss lists it in the namespace).
  bool resolver_answers() const {
    return contains(shell_output("ip netns exec " + netns_ + " ss -uln"),
                    std::string(kResolverIp) + ":53");
  }

  void teardown() {
    for (pid_t pid : servers_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    servers_.clear();
    for (const std::string& address : routes_)
      std::system(("ip route del " + address + "/32 2>/dev/null").c_str());
    routes_.clear();
    std::system(("ip link del " + host_link_ + " 2>/dev/null").c_str());
    std::system(("ip netns del " + netns_ + " 2>/dev/null").c_str());
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  std::string suffix_ = random_suffix();
  std::string netns_ = "sctest-" + suffix_;
  std::string host_link_ = "sct" + suffix_ + "h";
  std::string ns_link_ = "sct" + suffix_ + "n";
  fs::path dir_;
  std::vector<std::string> routes_;
  std::vector<pid_t> servers_;
};

}  // namespace sandcell::test::test_internet
