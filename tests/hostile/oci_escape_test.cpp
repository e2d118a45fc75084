// sandcell-oci against the 2024-2025 runc escape classes, with the image (and, for the races, a
// second container sharing a volume) in the attacker's hands. The second container is played by a
// host-side thread, which can do everything it could and more. Each test asserts on host
// sentinels (a file's mode and content, sysctl values read before and after); none writes a host
// sysctl.
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "hostile.hpp"
#include "oci_bundle.hpp"

namespace sandcell::test {
namespace {

namespace fs = std::filesystem;

// An OciBundle whose root.path is a writable copy of the test rootfs, for planting symlinks.
struct HostileImage {
  OciBundle b;
  std::string root = b.path("rootfs");
  HostileImage() {
    fs::copy(test_rootfs(), root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    b.config["root"]["path"] = root;
    b.config["root"]["readonly"] = false;
  }
  // Replaces `inside` (relative to the rootfs) with a symlink to `target`.
  void plant(const std::string& inside, const std::string& target) const {
    fs::remove_all(root + "/" + inside);
    fs::create_directories(fs::path(root + "/" + inside).parent_path());
    fs::create_symlink(target, root + "/" + inside);
  }
  void bind(const std::string& destination, const std::string& source, bool read_only = false) {
    b.config["mounts"].push_back({{"destination", destination},
                                  {"type", "bind"},
                                  {"source", source},
                                  {"options", {"rbind", read_only ? "ro" : "rw"}}});
  }
  void drop_mounts_under(const std::string& prefix) {
    nlohmann::json kept = nlohmann::json::array();
    for (const auto& m : b.config["mounts"])
      if (m["destination"].get<std::string>().rfind(prefix, 0) != 0) kept.push_back(m);
    b.config["mounts"] = kept;
  }
};

std::string host_file(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  chmod(path.c_str(), mode);
  return path;
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  lstat(path.c_str(), &st);
  return st.st_mode & 07777;
}

// --- 1. Mount destinations steered onto procfs, sysfs, devpts or the runtime's /dev ----------

TEST(HostileOci, MountDestinationsSteeredOntoProcDevOrSysBySymlinks_AreRefused) {
  std::string core_pattern = read_text("/proc/sys/kernel/core_pattern");
  struct Case {
    const char* link;
    const char* target;
    const char* destination;  // "" when the spec's own mount (/dev) is the one steered
    bool directory;
    const char* place;
  } cases[] = {
      {"etc/resolv.conf", "/proc/sys/kernel/core_pattern", "/etc/resolv.conf", false, "procfs"},
      {"dev", "/proc/sys/kernel", "", true, "procfs"},
      {"etc/hostname", "/dev/pts/ptmx", "/etc/hostname", false, "devpts"},
      {"opt/cache", "/dev", "/opt/cache", true, "the runtime's /dev"},
      {"opt/firmware", "/sys/kernel", "/opt/firmware", true, "sysfs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.link);
    HostileImage image;
    image.plant(c.link, c.target);
    std::string decoy = c.directory ? image.b.path("decoy-dir") : image.b.path("decoy");
    if (c.directory)
      fs::create_directories(decoy);
    else
      host_file(decoy, "decoy\n", 0644);
    if (c.destination[0] != '\0') image.bind(c.destination, decoy);
    image.b.config["process"]["args"] = {"cat", "/proc/sys/kernel/core_pattern"};
    image.b.write();
    CliRun run = image.b.oci({"run", "-b", image.b.dir(), "steer"});
    EXPECT_EQ(run.exit_code, 125) << run.out << run.err;
    EXPECT_NE(run.err.find(std::string("resolves onto ") + c.place), std::string::npos) << run.err;
    EXPECT_EQ(run.out.find("decoy"), std::string::npos) << run.out;
  }
  EXPECT_EQ(read_text("/proc/sys/kernel/core_pattern"), core_pattern);
}

TEST(HostileOci, MountOntoAnAllowedProcFileByItsOwnPath_StillWorks) {
  // lxcfs-style binds over /proc/meminfo (runc's list) stay possible when named directly.
  HostileImage image;
  std::string meminfo = host_file(image.b.path("meminfo"), "MemTotal: 42 kB\n", 0644);
  image.bind("/proc/meminfo", meminfo, true);
  image.b.config["process"]["args"] = {"cat", "/proc/meminfo"};
  image.b.write();
  CliRun run = image.b.oci({"run", "-b", image.b.dir(), "lxcfs"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "MemTotal: 42 kB\n");
}

// --- 3. and 2. Device nodes made in a /dev another container shares -------------------------

// The "second container": swaps null for a symlink to `target` once the runtime made its last
// node (tty), in the window before the masked paths are bound from it.
class DevSwapper {
 public:
  DevSwapper(std::string dev, std::string target)
      : dev_(std::move(dev)), target_(std::move(target)), thread_([this] { run(); }) {}
  ~DevSwapper() {
    stop_ = true;
    thread_.join();
  }

 private:
  bool is_node(const std::string& name) const {
    struct stat st {};
    return lstat((dev_ + "/" + name).c_str(), &st) == 0 && S_ISCHR(st.st_mode);
  }
  void swap(const std::string& name) const {
    std::string tmp = dev_ + "/." + name + ".swap";
    unlink(tmp.c_str());
    if (symlink(target_.c_str(), tmp.c_str()) == 0)
      rename(tmp.c_str(), (dev_ + "/" + name).c_str());
  }
  void run() {
    while (!stop_)
      if (is_node("tty") && is_node("null")) swap("null");
  }
  std::string dev_, target_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// For the chmod race, whose window is one system call: woken by inotify the moment a node is
// made, on the runtime's CPU at real-time priority, so it runs before the runtime's next call.
class InstantSwapper {
 public:
  InstantSwapper(std::string dev, std::string target, int cpu)
      : dev_(std::move(dev)), target_(std::move(target)), cpu_(cpu), thread_([this] { run(); }) {}
  ~InstantSwapper() {
    stop_ = true;
    thread_.join();
  }
  bool ready() const { return ready_; }

 private:
  void run() {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu_, &one);
    pthread_setaffinity_np(pthread_self(), sizeof one, &one);
    sched_param fifo{.sched_priority = 1};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo);
    int watch = inotify_init1(IN_CLOEXEC);
    inotify_add_watch(watch, dev_.c_str(), IN_CREATE);
    ready_ = true;
    alignas(inotify_event) char events[4096];
    while (!stop_) {
      pollfd wait{.fd = watch, .events = POLLIN, .revents = 0};
      if (poll(&wait, 1, 20) <= 0) continue;
      ssize_t n = read(watch, events, sizeof events);
      for (ssize_t at = 0; at < n;) {
        const auto* event = reinterpret_cast<const inotify_event*>(events + at);
        at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
        std::string name = event->len ? event->name : "";
        struct stat st {};
        if (name.empty() || name[0] == '.' || lstat((dev_ + "/" + name).c_str(), &st) < 0 ||
            !S_ISCHR(st.st_mode))
          continue;
        std::string tmp = dev_ + "/." + name + ".swap";
        if (symlink(target_.c_str(), tmp.c_str()) == 0)
          rename(tmp.c_str(), (dev_ + "/" + name).c_str());
      }
    }
    close(watch);
  }
  std::string dev_, target_;
  int cpu_;
  std::atomic<bool> stop_{false}, ready_{false};
  std::thread thread_;
};

// Pins the calling thread (and so what it spawns) to one CPU while in scope.
struct PinnedToCpu {
  cpu_set_t saved;
  explicit PinnedToCpu(int cpu) {
    sched_getaffinity(0, sizeof saved, &saved);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);
  }
  ~PinnedToCpu() { sched_setaffinity(0, sizeof saved, &saved); }
};

// The container's /dev is a volume (a host directory) shared with the swapper.
std::string share_dev(HostileImage& image) {
  std::string shared = image.b.path("shared-dev");
  fs::create_directories(shared);
  image.drop_mounts_under("/dev");
  image.bind("/dev", shared);
  return shared;
}

void empty_dir(const std::string& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) fs::remove_all(entry.path());
}

constexpr int kRaceTries = 25;

TEST(HostileOci, DeviceNodesSwappedForSymlinks_NeverChmodAHostFile) {
  HostileImage image;
  std::string shared = share_dev(image);
  std::string sentinel = host_file(image.b.path("sentinel"), "host secret\n", 0600);
  image.b.config["linux"]["devices"] = {{{"path", "/dev/sc-node"},
                                         {"type", "c"},
                                         {"major", 1},
                                         {"minor", 3},
                                         {"fileMode", 0666},
                                         {"uid", 0},
                                         {"gid", 0}}};
  image.b.config["process"]["args"] = {"true"};
  image.b.write();
  int started = 0;
  const int cpu = sched_getcpu();
  for (int i = 0; i < kRaceTries; ++i) {
    empty_dir(shared);
    InstantSwapper swapper(shared, sentinel, cpu);
    while (!swapper.ready()) std::this_thread::yield();
    PinnedToCpu pinned(cpu);
    CliRun run = image.b.oci({"run", "-b", image.b.dir(), "chmod-race"});
    started += run.exit_code == 0;
  }
  EXPECT_EQ(mode_of(sentinel), 0600u) << "the runtime chmod'ed a host file through a swapped node";
  EXPECT_EQ(read_text(sentinel), "host secret\n");
  RecordProperty("runs_that_started", started);
}

TEST(HostileOci, DevNullSwappedForASymlink_NeverBecomesTheSourceOfMaskedPaths) {
  HostileImage image;
  std::string shared = share_dev(image);
  std::string secrets = image.b.path("secrets");
  fs::create_directories(secrets);
  std::string sentinel = host_file(secrets + "/keys", "SENTINEL-MASKED\n", 0644);
  image.bind("/secrets", secrets, true);
  image.b.config["process"]["args"] = {"cat", "/proc/keys", "/proc/timer_list"};
  image.b.write();
  int started = 0;
  for (int i = 0; i < kRaceTries; ++i) {
    empty_dir(shared);
    DevSwapper swapper(shared, "/secrets/keys");
    CliRun run = image.b.oci({"run", "-b", image.b.dir(), "mask-race"});
    started += run.exit_code == 0;
    EXPECT_EQ(run.out.find("SENTINEL"), std::string::npos)
        << "try " << i << ": a masked path showed "
        << "the swapped-in file";
  }
  EXPECT_EQ(read_text(sentinel), "SENTINEL-MASKED\n");
  EXPECT_EQ(mode_of(sentinel), 0644u);
  RecordProperty("runs_that_started", started);
}

// --- 4. /proc writes redirected ---------------------------------------------------------------

TEST(HostileOci, SysctlThroughAnImageSymlinkAndAVolume_NeverReachesAnotherFile) {
  // The shape: /data -> /proc/sys/net/ipv4, a volume at /data whose ip_forward is a
  // symlink. The redirect target is a sentinel file here, never a host sysctl.
  HostileImage image;
  image.plant("data", "/proc/sys/net/ipv4");
  std::string volume = image.b.path("volume"), redirect = image.b.path("redirect");
  fs::create_directories(volume);
  fs::create_directories(redirect);
  std::string sentinel = host_file(redirect + "/target", "orig\n", 0644);
  fs::create_symlink("/redirect/target", volume + "/ip_forward");
  image.bind("/redirect", redirect);
  image.bind("/data", volume);
  image.b.config["linux"]["sysctl"] = {{"net.ipv4.ip_forward", "1"}};
  image.b.config["process"]["args"] = {"true"};
  image.b.write();
  std::string ip_forward = read_text("/proc/sys/net/ipv4/ip_forward");
  CliRun run = image.b.oci({"run", "-b", image.b.dir(), "sysctl-link"});
  EXPECT_EQ(run.exit_code, 125) << run.err;
  EXPECT_EQ(read_text(sentinel), "orig\n");
  EXPECT_EQ(read_text("/proc/sys/net/ipv4/ip_forward"), ip_forward);
}

TEST(HostileOci, SysctlUnderABindOverItsProcFile_WritesProcfsNotTheBoundFile) {
  // A bind over /proc/sys/kernel/ns_last_pid is allowed (runc's list), so only the write's own
  // resolution (a procfs of the runtime's, no mount crossing) keeps the value out of the file.
  // ns_last_pid is per pid namespace: the container's own, never the host's.
  HostileImage image;
  bool own_pid_ns = false;
  for (const auto& ns : image.b.config["linux"]["namespaces"]) own_pid_ns |= ns["type"] == "pid";
  ASSERT_TRUE(own_pid_ns) << "the test writes ns_last_pid: it must be the container's";
  std::string sentinel = host_file(image.b.path("ns_last_pid"), "orig\n", 0644);
  image.bind("/proc/sys/kernel/ns_last_pid", sentinel);
  image.b.config["linux"]["sysctl"] = {{"kernel.ns_last_pid", "4000"}};
  image.b.config["process"]["args"] = {"sh", "-c", "echo $$"};
  image.b.write();
  CliRun run = image.b.oci({"run", "-b", image.b.dir(), "sysctl-bind"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_text(sentinel), "orig\n");
}

// --- 5. fds of the caller reachable from the container during exec ----------------------------

TEST(HostileOci, ExecChild_HoldsNoCallerFdTheContainerCanReach) {
  // The caller holds a directory with a 0600 file open (not CLOEXEC), as a careless engine
  // might. A process in the container scans /proc/*/fd/*/secret while exec's child runs; a PATH
  // of many missing directories keeps the child between its credential switch and the execve
  // for a while (the image's Env decides PATH).
  HostileImage image;
  std::string out = image.b.path("out"), secret_dir = image.b.path("secret-dir");
  fs::create_directories(out);
  fs::create_directories(secret_dir);
  chmod(secret_dir.c_str(), 0700);
  host_file(secret_dir + "/secret", "HOST-SECRET\n", 0600);
  image.bind("/out", out);
  image.b.config["process"]["args"] = {
      "sh", "-c", "while :; do cat /proc/[0-9]*/fd/*/secret 2>/dev/null; done >> /out/got"};
  image.b.write();
  ASSERT_EQ(image.b.oci({"run", "-d", "-b", image.b.dir(), "fdleak"}).exit_code, 0);
  std::string path = "PATH=";
  for (int i = 0; i < 3000; ++i) path += "/missing/" + std::to_string(i) + ":";
  path += "/bin";
  int held = open(secret_dir.c_str(), O_RDONLY | O_DIRECTORY);  // inherited by sandcell-oci
  ASSERT_GE(held, 0);
  for (int i = 0; i < kRaceTries; ++i) {
    CliRun exec = image.b.oci({"exec", "--env", path, "--cwd", "/", "fdleak", "--", "true"});
    EXPECT_EQ(exec.exit_code, 0) << exec.err;
  }
  close(held);
  image.b.oci({"delete", "--force", "fdleak"});
  EXPECT_EQ(read_text(out + "/got"), "") << "the container read a host file through exec's fd";
}

}  // namespace
}  // namespace sandcell::test
