// Rootless mode (issue 11): the same CLI for an unprivileged user, run here as a user the test
// creates (CI runs as root). Limits hold through rlimits on this host (cgroup v1, no delegation)
// and the record says so; nothing is left behind: no processes, no mounts, empty run state.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "rootless_user.hpp"
#include "sandcell_cli.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// "PID (COMM) STATE PPID ..." from /proc/PID/stat, for a message.
std::string read_stat(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  return line.empty() ? std::to_string(pid) + " (gone)" : line.substr(0, 80);
}

class Rootless : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { user_ = std::make_unique<RootlessUser>(); }
  static void TearDownTestSuite() { user_.reset(); }
  void TearDown() override {
    // A process killed at the end of a run may still be on its way out (a zombie its parent has
    // not reaped yet) for a moment after sandcell returned; one alive after 2 s is left behind.
    std::vector<pid_t> left = user_->processes();
    for (int i = 0; i < 200 && !left.empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      left = user_->processes();
    }
    for (pid_t pid : left)
      ADD_FAILURE() << "process of " << user_->name() << " left: " << read_stat(pid);
    std::ifstream mountinfo("/proc/self/mountinfo");
    for (std::string line; std::getline(mountinfo, line);)
      EXPECT_EQ(line.find(user_->dir()), std::string::npos) << "mount left on the host: " << line;
    for (const std::string& left : user_->leftover_state())
      ADD_FAILURE() << "run state left: " << left;
  }
  static CliRun run(const std::vector<std::string>& flags,
                    const std::vector<std::string>& command) {
    std::vector<std::string> args = {"run", "--json", "--rootfs", user_->rootfs()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.insert(args.end(), command.begin(), command.end());
    return user_->sandcell(args);
  }
  static std::string status_of(const CliRun& r) {
    return r.record.is_object() ? r.record["status"].get<std::string>()
                                : "no record: " + r.out + r.err;
  }
  static std::unique_ptr<RootlessUser> user_;
};
std::unique_ptr<RootlessUser> Rootless::user_;

TEST_F(Rootless, RunIsRootOfItsOwnUserNamespaceAndSaysHowLimitsAreEnforced) {
  auto r = run({}, {"/bin/sh", "-c", "/bin/sc-probe ids; cat /proc/self/uid_map"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(status_of(r), "ok");
  // uid 0 is the user, 1..65536 its subordinate range: the sandbox's map is the identity of that.
  EXPECT_EQ(r.record["stdout"],
            "uid 0 0 0 gid 0 0 0\n         0          0          1\n"
            "         1          1      65536\n");
  EXPECT_TRUE(r.record["isolation"]["rootless"].get<bool>());
  EXPECT_EQ(r.record["isolation"]["cgroup"], "none");
  EXPECT_NE(r.record["isolation"]["namespaces"].dump().find("\"user\""), std::string::npos);
  EXPECT_EQ(r.record["enforced"]["memory_bytes"], "rlimit");
  EXPECT_EQ(r.record["enforced"]["pids"], "rlimit");
  EXPECT_EQ(r.record["enforced"]["cpus"], "none");  // no rlimit bounds CPU bandwidth
  EXPECT_EQ(r.record["enforced"]["wall_s"], "supervisor");
  EXPECT_EQ(r.record["enforced"]["output_bytes"], "supervisor");
}

// A user without HOME (cron jobs, `env -i`, some CI runners): the compiled-seccomp cache and the
// image store once fell back to /tmp/.cache and /tmp/.local, where another local user could have
// planted the filter or the layers this user then runs (issue 36). Now the run works without a
// cache, image commands ask for a store, and nothing but the private state directory appears in
// /tmp (a fresh tmpfs in a private mount namespace, so the host's /tmp is not looked at).
TEST_F(Rootless, WithoutAHomeNothingIsCachedOrStoredInTheSharedTmp) {
  // The new /tmp keeps, at their paths, the directories of the old one the run needs: the
  // user's (binaries, rootfs) and the source and build trees (the shipped seccomp profiles), when
  // they live in /tmp (a fresh clone in CI may).
  const std::string script =
      "u=$1; r=$2; sc=$3; shift 3; "
      "mount -t tmpfs -o mode=1777 tmpfs /mnt || exit 90; keep='-e /'; "
      "for k in \"$@\"; do case $k in /tmp/*) t=${k#/tmp/}; "
      "mkdir -p /mnt/$t && mount --bind $k /mnt/$t || exit 90; keep=\"$keep -e ${t%%/*}\";; esac; "
      "done; mount --move /mnt /tmp || exit 90; "
      "setpriv --reuid=$u --regid=$(id -g $u) --init-groups env -i PATH=/usr/bin:/bin "
      "\"$sc\" run --rootfs \"$r\" -- true; echo run=$?; "
      "setpriv --reuid=$u --regid=$(id -g $u) --init-groups env -i PATH=/usr/bin:/bin "
      "\"$sc\" images 2>&1; echo images=$?; ls -A /tmp | grep -vxF $keep";
  const fs::path source_root = fs::path(SANDCELL_TEST_FIXTURES_DIR).parent_path().parent_path();
  CliRun r = run_program({"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh",
                          "-c", script, "sh", user_->name(), user_->rootfs(),
                          user_->dir() + "/bin/sandcell", user_->dir(), source_root.string(),
                          SANDCELL_BUILD_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out,
            "run=0\n"
            "sandcell: no image store: without root, the store lives under $XDG_DATA_HOME or "
            "$HOME, and neither is set; give one with --root DIR or SANDCELL_ROOT\n"
            "images=125\n"
            "sandcell-" + std::to_string(user_->uid()) + "\n")
      << r.err;
}

TEST_F(Rootless, MemoryLimitByRlimitAsStopsABigAllocation) {
  auto r = run({"--memory", "64m"}, {"/bin/sc-probe", "mem", "512"});
  EXPECT_EQ(r.record["enforced"]["memory_bytes"], "rlimit");
  EXPECT_EQ(status_of(r), "exit_nonzero");  // the allocation fails; there is no OOM kill to see
  EXPECT_NE(r.record["stdout"].get<std::string>().find("malloc failed after"), std::string::npos)
      << r.out;
}

TEST_F(Rootless, PidsLimitByRlimitNprocCountsThisSandboxOnly) {
  // Another sandbox of the same user holds 20 threads meanwhile: RLIMIT_NPROC counts per user
  // namespace, and each sandbox has its own, so they do not add up.
  std::thread other([] { run({"--timeout", "3"}, {"/bin/sc-probe", "threads", "20"}); });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto r = run({"--pids", "16", "--timeout", "2"}, {"/bin/sc-probe", "threads", "64"});
  other.join();
  EXPECT_EQ(r.record["enforced"]["pids"], "rlimit");
  // pid 1 is the probe itself: 15 more threads make 16.
  EXPECT_EQ(r.record["stdout"], "started 15 of 64 threads: errno=EAGAIN\n") << r.out;
}

TEST_F(Rootless, ForkBombEndsAtTheWallTimeoutAndLeavesNothing) {
  auto r = run({"--pids", "32", "--timeout", "2"}, {"/bin/sc-probe", "forkbomb"});
  EXPECT_EQ(status_of(r), "timeout_wall") << r.out;
  EXPECT_EQ(system("true"), 0);  // the host can still start processes
}

TEST_F(Rootless, CpuTimeByRlimitKillsASpin) {
  auto r = run({"--cpu-time", "1", "--timeout", "30"}, {"/bin/sc-probe", "spin"});
  EXPECT_EQ(r.record["enforced"]["cpu_s"], "rlimit") << r.out << r.err;
  EXPECT_EQ(status_of(r), "timeout_cpu") << r.out << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGXCPU) << r.out << r.err;  // at the soft limit: certain
}

// A program that ignores SIGXCPU runs on to the hard limit, a second later, and is killed there.
TEST_F(Rootless, CpuTimeByRlimitKillsASpinThatIgnoresSigxcpuAtTheHardLimit) {
  auto r = run({"--cpu-time", "1", "--timeout", "30"},
               {"/bin/sh", "-c", "trap '' XCPU; exec /bin/sc-probe spin"});
  EXPECT_EQ(status_of(r), "timeout_cpu") << r.out << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.out << r.err;
  EXPECT_GE(r.record["cpu_ms"].get<int>(), 1200)
      << r.out;  // past the soft limit (ticks may be 25% off)
}

TEST_F(Rootless, WallTimeoutKillsASleep) {
  auto r = run({"--timeout", "0.5"}, {"/bin/sc-probe", "sleep", "100"});
  EXPECT_EQ(status_of(r), "timeout_wall") << r.out;
  EXPECT_EQ(r.exit_code, 128 + SIGKILL);
}

// allow: needs no veth: the proxy's listener is made inside the sandbox's netns. A denied name
// is refused by the proxy before any lookup, so nothing leaves the machine.
TEST_F(Rootless, AllowModeGoesThroughTheProxyOverTheSocketTransport) {
  auto r = run({"--net", "allow:allowed.test"},
               {"/bin/sh", "-c", "wget -q -O- http://denied.test/ >/dev/null 2>&1; echo rc=$?"});
  EXPECT_EQ(status_of(r), "ok") << r.out << r.err;
  EXPECT_EQ(r.record["stdout"], "rc=1\n");
  EXPECT_EQ(r.record["isolation"]["network_transport"], "socket");
  ASSERT_EQ(r.record["events"]["blocked_connections"].size(), 1u) << r.record["events"];
  EXPECT_EQ(r.record["events"]["blocked_connections"][0]["host"], "denied.test");
}

// The other side of slirp4netns for --net full: it opens its sockets in sandcell's own network
// namespace, so sandcell runs in a "host" namespace the test made (nsenter --net), in front of an
// "internet" namespace of the test's own (a veth in 192.0.2.0/24, TEST-NET-1, and routes to the
// internet's addresses through it), where nothing leads anywhere else. The internet is addresses
// on its loopback: a web server answering on port 8080 of all of them (198.51.100.1, TEST-NET-2,
// stands for a public host; 169.254.169.254 and 10.0.0.1 must stay out of the sandbox's reach)
// and a resolver at 10.0.0.53 that knows web.test. The host has a service of its own on port
// 8081 of all its addresses, which the sandbox must not reach through its host's address.
class SlirpUplink {
 public:
  static constexpr const char* kWebIp = "198.51.100.1";
  static constexpr const char* kHostIp = "192.0.2.1";
  explicit SlirpUplink(const std::string& dir) : dir_(dir) {
    try {
      build();
    } catch (...) {
      teardown();
      throw;
    }
  }
  ~SlirpUplink() { teardown(); }
  SlirpUplink(const SlirpUplink&) = delete;
  SlirpUplink& operator=(const SlirpUplink&) = delete;

  std::string resolv_conf() const { return dir_ + "/resolv.conf"; }
  // Runs the rest in a private mount namespace with a tun node of `tun_mode` at /dev/net/tun
  // (the host's node is left alone, whatever its mode), then in the test host's network namespace.
  std::vector<std::string> prefix(const std::string& tun_mode) const {
    return {"/usr/bin/unshare",
            "--mount",
            "--propagation",
            "private",
            "/bin/sh",
            "-c",
            "d=$1 m=$2; shift 2; mount -t tmpfs -o mode=0755 tun \"$d\" && mknod -m \"$m\" "
            "\"$d/tun\" c 10 200 "
            "&& mount --bind \"$d/tun\" /dev/net/tun && exec \"$@\"",
            "sh",
            dir_ + "/tun",
            tun_mode,
            "/usr/bin/nsenter",
            "--net=/run/netns/" + host_netns_};
  }

 private:
  void build() {
    fs::create_directories(dir_ + "/www");
    fs::create_directories(dir_ + "/host-www");
    fs::create_directories(dir_ + "/tun");
    std::ofstream(dir_ + "/www/index.html") << "host-side-ok\n";
    std::ofstream(dir_ + "/host-www/index.html") << "host-service-ok\n";
    std::ofstream(resolv_conf()) << "nameserver 10.0.0.53\n";
    fs::permissions(resolv_conf(), fs::perms(0644));
    for (const std::string& netns : {host_netns_, internet_netns_}) {
      ip({"netns", "add", netns});
      ip({"-n", netns, "link", "set", "lo", "up"});
    }
    ip({"-n", host_netns_, "link", "add", "scthrl0", "type", "veth", "peer", "name", "scthrl1",
        "netns", internet_netns_});
    ip({"-n", host_netns_, "addr", "add", std::string(kHostIp) + "/24", "dev", "scthrl0"});
    ip({"-n", host_netns_, "link", "set", "scthrl0", "up"});
    ip({"-n", internet_netns_, "addr", "add", "192.0.2.2/24", "dev", "scthrl1"});
    ip({"-n", internet_netns_, "link", "set", "scthrl1", "up"});
    for (const char* address : {kWebIp, "169.254.169.254", "10.0.0.1", "10.0.0.53"}) {
      ip({"-n", internet_netns_, "addr", "add", std::string(address) + "/32", "dev", "lo"});
      ip({"-n", host_netns_, "route", "add", std::string(address) + "/32", "via", "192.0.2.2"});
    }
    start(internet_netns_, {"/usr/bin/busybox", "httpd", "-f", "-p", "8080", "-h", dir_ + "/www"});
    start(internet_netns_,
          {"/usr/bin/python3", std::string(SANDCELL_TEST_FIXTURES_DIR) + "/dns-server.py",
           "10.0.0.53", std::string("web.test=") + kWebIp});
    start(host_netns_, {"/usr/bin/busybox", "httpd", "-f", "-p", "8081", "-h", dir_ + "/host-www"});
    for (int i = 0; i < 100; ++i) {
      const std::string tcp = shell_output("ip netns exec " + internet_netns_ + " ss -tln");
      const std::string udp = shell_output("ip netns exec " + internet_netns_ + " ss -uln");
      const std::string host = shell_output("ip netns exec " + host_netns_ + " ss -tln");
      if (tcp.find(":8080") != std::string::npos && udp.find("10.0.0.53:53") != std::string::npos &&
          host.find(":8081") != std::string::npos)
        return;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("the test's web servers and resolver did not come up");
  }
  void ip(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/sbin/ip");
    CliRun r = run_program(args);
    if (r.exit_code != 0) throw std::runtime_error("ip " + args[1] + " " + args[2] + ": " + r.err);
  }
  // A server in one of the test's namespaces, killed by teardown().
  void start(const std::string& netns, const std::vector<std::string>& command) {
    std::vector<std::string> args = {"/usr/sbin/ip", "netns", "exec", netns};
    args.insert(args.end(), command.begin(), command.end());
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = fork();
    if (pid == 0) {
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid < 0) throw std::runtime_error("fork");
    servers_.push_back(pid);
  }
  void teardown() {
    for (pid_t pid : servers_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    servers_.clear();
    for (const std::string& netns : {host_netns_, internet_netns_})  // the veth goes with them
      run_program({"/usr/sbin/ip", "netns", "del", netns});
  }

  std::string dir_;
  std::string host_netns_ = "sctest-rlh" + std::to_string(getpid());
  std::string internet_netns_ = "sctest-rl" + std::to_string(getpid());
  std::vector<pid_t> servers_;
};

// --net full without root: slirp4netns, started by the user's supervisor, joins the sandbox's own
// user and network namespaces; the filter the supervisor put in that netns keeps metadata and
// private ranges out (the server answers there: --net-allow-cidr opens 10.0.0.1), the resolver of
// --net-resolv-conf answers on port 53 although it is private, and the host's own address (where
// slirp4netns's connections would be local ones) is dropped and recorded.
TEST_F(Rootless, FullModeGoesThroughSlirp4netnsWithoutPrivateRangesOrTheHostItself) {
  SlirpUplink uplink(user_->dir() + "/uplink");
  auto full = [&](const std::vector<std::string>& flags, const std::string& script) {
    std::vector<std::string> args = {"run", "--json", "--rootfs", user_->rootfs(), "--net", "full"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "/bin/sh", "-c", script});
    return user_->sandcell(args, "", uplink.prefix("0666"));
  };
  auto r = full({"--net-resolv-conf", uplink.resolv_conf()},
                "cat /etc/resolv.conf; wget -q -O- http://198.51.100.1:8080/; wget -q -O- "
                "http://web.test:8080/; "
                "sc-probe connect 169.254.169.254 8080; sc-probe connect 10.0.0.1 8080; "
                "sc-probe connect 192.0.2.1 8081");
  EXPECT_EQ(status_of(r), "ok") << r.out << r.err;
  EXPECT_EQ(r.record["stdout"],
            "nameserver 10.0.0.53\nhost-side-ok\nhost-side-ok\nconnect timeout\nconnect timeout\n"
            "connect timeout\n")
      << r.out << r.err;
  EXPECT_EQ(r.record["isolation"]["network"], "full");
  EXPECT_EQ(r.record["isolation"]["network_transport"], "slirp4netns");
  EXPECT_TRUE(r.record["isolation"]["rootless"].get<bool>());
  bool host_recorded = false;
  for (const auto& b : r.record["events"]["blocked_connections"])
    host_recorded |=
        b.value("host", "") == SlirpUplink::kHostIp && b.value("port", 0) == 8081 &&
        b.value("reason", "") == "tcp dropped by the firewall: an address of this host";
  EXPECT_TRUE(host_recorded) << r.record["events"];

  auto opened = full({"--net-allow-cidr", "10.0.0.1/32"}, "sc-probe connect 10.0.0.1 8080");
  EXPECT_EQ(opened.record["stdout"], "connect ok\n") << opened.out << opened.err;
}

// slirp4netns opens /dev/net/tun as the user; a node only root may open is refused before
// anything starts, with the fix.
TEST_F(Rootless, FullModeSaysWhenTheTunDeviceIsClosedToUsers) {
  SlirpUplink uplink(user_->dir() + "/uplink");
  auto r = user_->sandcell({"run", "--rootfs", user_->rootfs(), "--net", "full", "--", "/bin/true"},
                           "", uplink.prefix("0600"));
  EXPECT_EQ(r.exit_code, 125);
  EXPECT_NE(r.err.find("chmod 0666 /dev/net/tun"), std::string::npos) << r.err;
}

// The executables on a mount of their own (a tmpfs /tmp, a separate /home), in a mount namespace
// that ends when sandcell unshares its own: read after the unshare, /proc/self/exe named the file
// from its mount's root ("/sandcell"), so `gc` and network runs, which hand over to sandcell-net
// next to it, stopped with "/sandcell-net: No such file or directory" (found in the VM guest).
TEST_F(Rootless, HandsOverToItsSiblingWhenItsMountOutlivesItsNamespace) {
  const std::string bin = user_->dir() + "/bin";
  auto gc = user_->sandcell(
      {"gc"}, "",
      {"/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
       "mkdir -p /run/sc-bin-copy-$$ && cp -a \"$1\"/. /run/sc-bin-copy-$$ "
       "&& mount -t tmpfs -o mode=0755 sc-bin \"$1\" && cp -a /run/sc-bin-copy-$$/. \"$1\" "
       "&& rm -rf /run/sc-bin-copy-$$ && shift && exec \"$@\"",
       "sh", bin});
  EXPECT_EQ(gc.exit_code, 0) << gc.err;
  EXPECT_EQ(gc.err.find("No such file"), std::string::npos) << gc.err;
}

TEST_F(Rootless, VethTransportAndUsernsAutoAreRefusedWithAReason) {
  auto veth = user_->sandcell({"run", "--rootfs", user_->rootfs(), "--net", "allow:example.com",
                               "--net-transport", "veth", "--", "/bin/true"});
  EXPECT_EQ(veth.exit_code, 125);
  EXPECT_NE(veth.err.find("needs root"), std::string::npos) << veth.err;
  auto userns =
      user_->sandcell({"run", "--rootfs", user_->rootfs(), "--userns", "auto", "--", "/bin/true"});
  EXPECT_EQ(userns.exit_code, 125);
  EXPECT_NE(userns.err.find("needs root"), std::string::npos) << userns.err;
}

// Installing the AppArmor profile is root's job; the user can see what it would install.
TEST_F(Rootless, SetupApparmorPrintsTheProfileForTheUsersBinariesAndNeedsRootToInstall) {
  auto install = user_->sandcell({"setup", "apparmor"});
  EXPECT_EQ(install.exit_code, 125);
  EXPECT_NE(install.err.find("run it as root (sudo sandcell setup apparmor)"), std::string::npos)
      << install.err;
  auto print = user_->sandcell({"setup", "apparmor", "--print"});
  EXPECT_EQ(print.exit_code, 0) << print.err;
  EXPECT_NE(print.out.find("profile sandcell " + user_->dir() +
                           "/bin/sandcell{,-images,-net,-serve} flags=(unconfined) {"),
            std::string::npos)
      << print.out;
  EXPECT_NE(print.out.find("\n  userns,\n"), std::string::npos) << print.out;
}

TEST_F(Rootless, BuildChownsAndDeletesInsideAndTheStoreIsTheUsers) {
  const std::string ctx = user_->home() + "/ctx";
  fs::create_directories(ctx);
  fs::copy_file(user_->rootfs() + "/bin/busybox", ctx + "/busybox");
  std::ofstream(ctx + "/Dockerfile") << R"(FROM scratch
COPY busybox /bin/busybox
RUN ["/bin/busybox", "--install", "-s", "/bin"]
RUN mkdir -p /home/app && chown 1000:1000 /home/app && rm /bin/ls
CMD ["sh", "-c", "stat -c '%u %g' /home/app; test -e /bin/ls || echo ls-deleted"]
)";
  ASSERT_EQ(system(("chown -R " + user_->name() + ": " + ctx).c_str()), 0);
  auto b = user_->sandcell({"build", "-t", "rootless:1", ctx});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  auto r = user_->sandcell({"run", "rootless:1"});
  EXPECT_EQ(r.out, "1000 1000\nls-deleted\n") << r.err;
  // On the host the store is the user's, and uid 1000 inside is subordinate id 1000 (the range's
  // 1000th id, as uid 0 is the user itself).
  struct stat st {};
  ASSERT_EQ(stat(user_->store().c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, user_->uid());
  bool found = false;
  for (const auto& layer : fs::directory_iterator(user_->store() + "/layers")) {
    if (stat((layer.path() / "home/app").c_str(), &st) != 0) continue;
    found = true;
    EXPECT_EQ(st.st_uid, RootlessUser::kSubIdStart + 999);
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace sandcell::test
