// A skill's zygote and a pool member's way to it (sandcell/agent/zygote.hpp).
#include "sandcell/agent/zygote.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "phase.hpp"
#include "sandcell/agent/limit_args.hpp"
#include "sandcell/agent/request_ceilings.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/rootfs_builder/image_spec.hpp"
#include "sandcell/runtime/fd_passing.hpp"
#include "sandcell/runtime/owned_temp_dir.hpp"

namespace sandcell::agent {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr uint32_t kSlotSize = 65536;  // runtime's userns slot (userns_pool.hpp)
constexpr size_t kFixedFds = 5;        // pid namespace, stdin, stdout, stderr, report socket
constexpr size_t kMaxCgroupFds = 8;    // sandcell_confine_fds.cgroup_fds
constexpr int kNamespaceCount = 6;     // sandcell_confine_fds.namespace_fds
constexpr size_t kMaxAnswer = 256;
constexpr size_t kMaxPassedOn = 16 * 1024;  // of the zygote's own output (a pipe holds 64 KiB)

// The zygotes' directories: <store>/zygotes/z-XXXXXX, 0700 each (what a member opens there is
// host root's to open). `sandcell gc` (cli/gc_command.cpp) removes the abandoned ones too.
std::string zygotes_dir(const RunnerContext& context) {
  return context.store_root + "/zygotes";
}
// How old an unheld directory must be to be taken for abandoned: an owner locks its own right
// after mkdtemp (runtime::OwnedTempDir).
constexpr std::chrono::seconds kAbandonedZygoteAge{10};

uint64_t namespace_inode(pid_t pid, const char* name) {
  struct stat st {};
  const std::string path = "/proc/" + std::to_string(pid) + "/ns/" + name;
  if (stat(path.c_str(), &st) != 0) throw Error(errno, "stat " + path);
  return st.st_ino;
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".new";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) throw Error(EIO, "write " + temporary);
  }
  if (rename(temporary.c_str(), path.c_str()) != 0) throw Error(errno, "rename " + temporary);
}

// The zygote's spec: the skill's image read-only with its run's environment, and the zygote's
// confinement (zygote.hpp).
runtime::Spec zygote_spec(const Skill& skill, const RunnerContext& context,
                          rootfs_builder::ImageStore& store,
                          const rootfs_builder::ImageRecord& image,
                          const std::vector<std::string>& argv, const std::string& library) {
  runtime::Spec spec = runtime::default_spec();
  apply_limit_args(merge(skill.limits, LimitArgs{}), spec.limits);
  clamp_to_ceilings(context.ceilings, spec.limits);
  const std::optional<double> cpus = spec.limits.cpus;  // the members' (their env says it)
  // It lives as long as the pool does, and spends CPU only on its forks.
  spec.limits.wall_s.reset();
  spec.limits.cpu_s.reset();
  spec.limits.cpus.reset();
  spec.limits.disk_bytes.reset();
  spec.network = runtime::NetworkMode::None;
  spec.user_namespace = runtime::UserNamespace::Auto;
  spec.capabilities = {"CAP_SYS_ADMIN"};
  spec.seccomp =
      {};            // unconfined: the child loads the request's filter; the zygote runs no request
  spec.lsm = false;  // a Landlock domain here would be stacked on each child's
  spec.rootfs_read_only = true;
  spec.bind_mounts.push_back(
      {.source = library, .destination = kZygoteLibraryPath, .read_only = true});
  rootfs_builder::ImageRunRequest request{
      .command = argv, .user = std::string("0:0"), .workdir = std::string("/")};
  rootfs_builder::apply_resolved_image(store, skill.image(), image, request, spec);
  runtime::merge_env(spec.env, skill_env(skill, cpus));
  return spec;
}

// Ends the zygote's sandbox (its init killed: its pid namespace, and each sandbox nested in it,
// with it) when the pool closes `cancel_fd`, or when run_zygote is done (`stop`).
class Canceller {
 public:
  explicit Canceller(int cancel_fd) : stop_(eventfd(0, EFD_CLOEXEC)) {
    if (!stop_) throw Error(errno, "eventfd");
    thread_ = std::thread([this, cancel_fd] { watch(cancel_fd); });
  }
  ~Canceller() {
    uint64_t one = 1;
    ssize_t ignored = write(stop_.get(), &one, sizeof one);
    (void)ignored;
    thread_.join();
  }
  void started(pid_t init) {
    std::lock_guard lock(mutex_);
    init_.reset(static_cast<int>(syscall(SYS_pidfd_open, init, 0)));
    if (cancelled_) kill_init();
  }

 private:
  void watch(int cancel_fd) {
    sigset_t interrupts;  // the supervisor's (its signalfd)
    sigemptyset(&interrupts);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupts, sig);
    pthread_sigmask(SIG_BLOCK, &interrupts, nullptr);
    for (;;) {
      pollfd fds[2] = {{stop_.get(), POLLIN, 0}, {cancel_fd, POLLIN, 0}};
      if (poll(fds, 2, -1) < 0 && errno == EINTR) continue;
      if (fds[0].revents) return;
      char buffer[256];
      const ssize_t n = read(cancel_fd, buffer, sizeof buffer);
      if (n > 0 || (n < 0 && errno == EINTR)) continue;  // nothing is asked of it on the way
      std::lock_guard lock(mutex_);
      cancelled_ = true;
      kill_init();
      return;
    }
  }
  void kill_init() {
    if (init_) syscall(SYS_pidfd_send_signal, init_.get(), SIGKILL, nullptr, 0);
  }

  UniqueFd stop_;
  std::mutex mutex_;
  UniqueFd init_;
  bool cancelled_ = false;
  std::thread thread_;
};

void send_all(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

}  // namespace

bool skill_has_zygote(const Skill& skill) {
  return !skill.zygote_run.empty() && !skill.pool_run.empty();
}

std::string confine_library_path() {
  if (const char* set = getenv("SANDCELL_CONFINE_LIBRARY"); set != nullptr && *set != '\0') {
    if (access(set, R_OK) != 0) throw Error(errno, std::string("$SANDCELL_CONFINE_LIBRARY ") + set);
    return set;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  for (const fs::path& candidate :
       {self.parent_path() / "libsandcell-confine.so",
        self.parent_path().parent_path() / "lib/sandcell/libsandcell-confine.so"})
    if (!ec && access(candidate.c_str(), R_OK) == 0) return candidate.string();
  throw Error(ENOENT, "libsandcell-confine.so is not beside " + self.string() +
                          " (or in ../lib/sandcell/; or set $SANDCELL_CONFINE_LIBRARY)");
}

runtime::Result run_zygote(const SkillCatalog& catalog, const std::string& skill_name,
                           const RunnerContext& context, uint32_t slots, int cancel_fd,
                           const ZygoteHooks& hooks) {
  const Skill& skill = catalog.find(skill_name);
  if (!skill_has_zygote(skill))
    throw Error::invalid("skill '" + skill.name + "' has no zygote (skill.json: \"zygote_run\")");
  if (slots < 1 || slots > runtime::kMaxExtraUsernsSlots)
    throw Error::invalid("a zygote takes 1 to " + std::to_string(runtime::kMaxExtraUsernsSlots) +
                         " slots");
  if (choose_user_namespace(context).mode != runtime::UserNamespace::Auto)
    throw Error::invalid(
        "a zygote needs sandboxes with a user namespace of their own (userns auto, as root)");
  const std::string library = confine_library_path();
  const std::vector<std::string> argv = zygote_command(skill, kZygoteLibraryPath);
  rootfs_builder::ImageStore store(context.store_root);
  rootfs_builder::ImageStore::Lease store_lease = store.lease();
  const rootfs_builder::ImageRecord image = built_image(store, skill);
  runtime::Spec spec = zygote_spec(skill, context, store, image, argv, library);

  // <store>/zygotes/z-XXXXXX, 0700, held (flock) while this lives and removed after; one a
  // supervisor killed with SIGKILL left is removed here or by `sandcell gc`.
  const std::string parent = zygotes_dir(context);
  runtime::remove_abandoned_temp_dirs(parent, kAbandonedZygoteAge);
  runtime::OwnedTempDir owned(parent, "z-");
  if (chmod(parent.c_str(), 0700) != 0) throw Error(errno, "chmod " + parent);
  const std::string dir = owned.path();

  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = dir + "/socket";
  if (socket_path.size() >= sizeof address.sun_path)
    throw Error::invalid("the zygote's socket path is too long: " + socket_path);
  memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  UniqueFd listener(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!listener) throw Error(errno, "socket");
  if (bind(listener.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw Error(errno, "bind " + socket_path);
  if (listen(listener.get(), 64) != 0) throw Error(errno, "listen " + socket_path);

  std::vector<runtime::UsernsMapping> mapped;
  pid_t init = 0;
  bool ready = false;
  size_t passed_on = 0;
  Canceller canceller(cancel_fd);
  runtime::RunOptions options;
  options.stdin_fd = listener.get();
  options.state_root = context.state_root;
  options.extra_userns_slots = slots;
  options.on_userns = [&](const std::vector<runtime::UsernsMapping>& all) { mapped = all; };
  options.on_started = [&](pid_t pid, const std::vector<std::string>&) {
    init = pid;
    canceller.started(pid);
  };
  options.output = [&](runtime::Stream s, std::span<const char> data) {
    if (s == runtime::Stream::Stdout && !ready && !data.empty() && data[0] == '\0') {
      ready = true;
      data = data.subspan(1);
      try {
        json info{{"init", init},
                  {"userns", namespace_inode(init, "user")},
                  {"pidns", namespace_inode(init, "pid")},
                  {"slots", json::array()}};
        for (size_t i = 1; i < mapped.size(); ++i)
          info["slots"].push_back({{"uid_base", mapped[i].uid_base},
                                   {"gid_base", mapped[i].gid_base},
                                   {"size", mapped[i].size}});
        write_file_atomically(dir + "/zygote.json", info.dump());
        if (hooks.on_ready) hooks.on_ready(dir);
      } catch (const std::exception& e) {
        std::cerr << "sandcell: zygote: " << e.what() << "\n";
        syscall(SYS_kill, init, SIGKILL);  // the supervisor's own child, not reaped yet
      }
    }
    // A zygote says nothing else; what it does say goes to stderr, the first kMaxPassedOn bytes
    // only: nobody may have to read the pipe for the zygote to go on (the pool does not).
    const size_t room = kMaxPassedOn - std::min(kMaxPassedOn, passed_on);
    send_all(STDERR_FILENO, std::string(data.data(), std::min(room, data.size())));
    passed_on += data.size();
  };
  return runtime::run_sandbox(spec, options);
}

struct ZygoteClient::State {
  UniqueFd slot_lock, userns, pidns, connection;
  runtime::Nesting nesting;
  runtime::OutsideProgram program;
  std::atomic<bool> lost{false};

  runtime::UniqueFd start(const runtime::OutsideEntry& entry);
  int wait_status();
};

ZygoteClient::ZygoteClient(const std::string& dir) : state_(std::make_unique<State>()) {
  State& s = *state_;
  std::ifstream in(dir + "/zygote.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in && text.empty()) throw Error(ENOENT, "the zygote at " + dir + " is not ready or gone");
  const json info = parse_bounded_json(text);
  const pid_t init = info.at("init").get<pid_t>();
  const json& slots = info.at("slots");
  for (size_t i = 0; i < slots.size() && !s.slot_lock; ++i) {
    UniqueFd lock(open((dir + "/slot-" + std::to_string(i)).c_str(),
                       O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock) throw Error(errno, "open the zygote's slot lock in " + dir);
    if (flock(lock.get(), LOCK_EX | LOCK_NB) != 0) continue;
    s.slot_lock = std::move(lock);
    s.nesting.base = static_cast<uint32_t>((i + 1) * kSlotSize);
    s.nesting.size = slots[i].at("size").get<uint32_t>();
    s.nesting.host = {.uid_base = slots[i].at("uid_base").get<uint32_t>(),
                      .gid_base = slots[i].at("gid_base").get<uint32_t>(),
                      .size = s.nesting.size};
  }
  if (!s.slot_lock)
    throw Error(EBUSY,
                "the zygote has no free id slot (all " + std::to_string(slots.size()) + " in use)");
  // The zygote's namespaces, from its init (which the zygote's supervisor has not reaped while
  // the directory exists); the inode numbers make sure the pid was not reused meanwhile.
  for (auto [fd, name, key] :
       {std::tuple{&s.userns, "user", "userns"}, std::tuple{&s.pidns, "pid", "pidns"}}) {
    const std::string path = "/proc/" + std::to_string(init) + "/ns/" + name;
    fd->reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st {};
    if (!*fd || fstat(fd->get(), &st) != 0 || st.st_ino != info.at(key).get<uint64_t>())
      throw Error(ESRCH, "the zygote at " + dir + " is gone");
  }
  s.nesting.userns_fd = s.userns.get();
  s.nesting.pidns_fd = s.pidns.get();
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  const std::string socket_path = dir + "/socket";
  if (socket_path.size() >= sizeof address.sun_path)
    throw Error::invalid("the zygote's socket path is too long");
  memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  s.connection.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s.connection ||
      connect(s.connection.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
    throw Error(errno, "connect to the zygote at " + socket_path);
  s.program.start = [&s](const runtime::OutsideEntry& entry) { return s.start(entry); };
  s.program.wait_status = [&s] { return s.wait_status(); };
}

ZygoteClient::~ZygoteClient() = default;

const runtime::Nesting* ZygoteClient::nesting() const {
  return &state_->nesting;
}
bool ZygoteClient::lost() const {
  return state_->lost;
}

const runtime::OutsideProgram* ZygoteClient::program() const {
  return &state_->program;
}

// A request in the zygote's format (pool_boot.py, _sandcell_zygote); its answer: 'p' with the
// child's pidfd, or 'e' and why.
runtime::UniqueFd ZygoteClient::State::start(const runtime::OutsideEntry& entry) {
  if (entry.cgroup_fds.size() > kMaxCgroupFds)
    throw Error::invalid("more cgroup files than the zygote takes");
  std::array<uint32_t, 3> header = {static_cast<uint32_t>(entry.plan.size()), 0,
                                    static_cast<uint32_t>(entry.cgroup_fds.size())};
  std::vector<int> fds = {entry.pid_namespace_fd, entry.stdin_fd, entry.stdout_fd, entry.stderr_fd,
                          entry.report_fd};
  for (int i = 0; i < kNamespaceCount; ++i)
    if (entry.namespace_fds[static_cast<size_t>(i)] >= 0) {
      header[1] |= 1u << i;
      fds.push_back(entry.namespace_fds[static_cast<size_t>(i)]);
    }
  fds.insert(fds.end(), entry.cgroup_fds.begin(), entry.cgroup_fds.end());
  static_assert(sizeof header == 12);
  iovec data[2] = {
      {.iov_base = header.data(), .iov_len = sizeof header},
      {.iov_base = const_cast<unsigned char*>(entry.plan.data()), .iov_len = entry.plan.size()}};
  if (runtime::send_with_fds(connection.get(), data, fds) < 0)
    throw Error(errno, "ask the zygote for a program");
  char answer[kMaxAnswer];
  int pidfd = -1;
  const ssize_t got = runtime::receive_with_fd(connection.get(), answer, sizeof answer, 0, &pidfd);
  runtime::UniqueFd child(pidfd);
  if (got >= 1 && answer[0] == 'p' && child) return child;
  if (got >= 1 && answer[0] == 'e')
    throw Error(EPROTO, "the zygote could not fork: " +
                            std::string(answer + 1, static_cast<size_t>(got - 1)));
  throw Error(got < 0 ? errno : EPIPE, "the zygote did not answer");
}

// The child's wait status, which the zygote (its parent) sends once it has reaped it: the
// supervisor asks when the child's pidfd says it has exited, so it comes at once.
int ZygoteClient::State::wait_status() {
  int status = -1;
  for (;;) {
    const ssize_t n = recv(connection.get(), &status, sizeof status, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n != sizeof status) {  // the zygote is gone, and its child with it
      lost = true;
      return SIGKILL;
    }
    return status;
  }
}

}  // namespace sandcell::agent
