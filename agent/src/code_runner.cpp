// run_code(): check the request, prepare the workspace, run install → compile → run, collect.
#include "sandcell/agent/code_runner.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>
#include <tuple>

#include "phase.hpp"
#include "sandcell/agent/error_classifier.hpp"
#include "sandcell/agent/sessions.hpp"
#include "sandcell/agent/zygote.hpp"
#include "sandcell/base/bounded_json.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/thread_elsewhere.hpp"
#include "sandcell/base/timeline.hpp"
#include "sandcell/base/workspace_disk.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"

namespace sandcell::agent {
namespace {

namespace fs = std::filesystem;
using runtime::UniqueFd;

constexpr size_t kMaxCodeBytes = 1 << 20;
constexpr uint64_t kMaxInputBytes = 64ull << 20;  // all "files" / --put together
constexpr uint64_t kMaxGetBytes = 16ull << 20;    // each "get" file returned inline
constexpr size_t kMaxPackageName = 256;            // with a version spec; npm allows 214 for the name
constexpr uint64_t kDefaultDiskBytes = 1ull << 30;  // a workspace's bound without --disk

void check_request(const Skill& skill, const CodeRequest& r) {
  check_code_text(r.code, kMaxCodeBytes);
  if (r.session) SessionStore::check_id(*r.session);
  if (!r.packages.empty() && skill.install.empty())
    throw Error::invalid("skill '" + skill.name + "' has no package installer (skill.json \"install\")");
  // Names only: "--index-url=..." or a path must not reach the installer as an option.
  static const std::regex package(R"(^[A-Za-z0-9@_][A-Za-z0-9._@/+=<>!~,:^-]*$)");
  for (const std::string& p : r.packages) {
    // Length first: libstdc++'s regex matcher recurses once per character, and a 1 MB name in a
    // request overflowed the stack of `sandcell code` (SIGSEGV instead of the contract's answer).
    if (p.size() > kMaxPackageName)
      throw Error::invalid("a package name of " + std::to_string(p.size()) + " bytes is too long (at most " +
                           std::to_string(kMaxPackageName) + ")");
    if (!std::regex_match(p, package)) throw Error::invalid("package name '" + p + "' is not a plain package spec");
  }
  uint64_t total = 0;
  const std::string source = Workspace::relative(skill.source_file);
  for (const InputFile& f : r.files) {
    // The runner's own files: an input named like the source file replaced the code and ran.
    std::string rel = Workspace::relative(f.path);
    if (rel == source || rel == ".sandcell" || rel.rfind(".sandcell/", 0) == 0)
      throw Error::invalid("input file '" + f.path + "' would replace the runner's own /workspace/" + rel);
    total += f.content.size();
  }
  if (total > kMaxInputBytes)
    throw Error::invalid("input files total " + std::to_string(total) + " bytes; the limit is " + std::to_string(kMaxInputBytes));
  for (const std::string& g : r.get) Workspace::relative(g);
}

// The call's seccomp program (--seccomp, `code` by default), from the compiled-profile cache;
// denials reported. Compiled here, once for all of the call's phases, while the scratch workspace
// is made (a bad profile fails the call before any phase).
runtime::SeccompSource code_seccomp(const RunnerContext& context) {
  return seccomp::cached_profile(context.seccomp, {}, {.report_denials = true}, context.seccomp_cache_dir)
      .program();
}

// A workspace for one call without a session: <run dir>/disk/workspace on its own filesystem
// (workspace_disk.hpp; <run dir>/workspace where there is none), removed afterwards, where the
// run directory is <scratch>/<pid>-<random>, named before it is made (new_run_dir) so that a
// sandbox can be started for the workspace while its disk is still being made. The run directory's
// lock is held while the disk is mounted, so that unmount_stale_workspace_disks leaves it alone.
// <scratch> and the run directory are 0700: what the code wrote is owned by host ids (its root's
// files are host root's), and no other host user may reach it, even for the moment before a phase
// ends and the privileges are stripped. Only the workspace itself is 0755, for the sandbox's own
// non-root users. Directories of sandcell processes that died are removed on the way in.
class ScratchWorkspace {
 public:
  static std::string new_run_dir(const std::string& scratch) {
    uint64_t random = 0;
    if (getrandom(&random, sizeof random, 0) != static_cast<ssize_t>(sizeof random))
      throw Error(errno, "getrandom for a run directory's name");
    char suffix[17];
    snprintf(suffix, sizeof suffix, "%016llx", static_cast<unsigned long long>(random));
    return scratch + "/" + std::to_string(getpid()) + "-" + suffix;
  }
  // Where the workspace of new_run_dir()'s run directory will be.
  static std::string workspace_dir(const std::string& run_dir, bool with_disk) {
    return run_dir + (with_disk ? "/disk/workspace" : "/workspace");
  }

  ScratchWorkspace(const std::string& scratch, std::string run_dir,
                   const std::string& disk_templates, std::optional<uint64_t> disk_bytes)
      : run_dir_(std::move(run_dir)) {
    fs::create_directories(scratch);
    check(chmod(scratch.c_str(), 0700), "chmod 0700 " + scratch);
    std::error_code ec;
    // A stale disk is mounted in a run directory here, so with none here (a host's calls one
    // after another) the mount table is not read: 0.3-0.7 ms, which a cold call waited for.
    if (fs::directory_iterator(scratch, ec) != fs::directory_iterator()) {
      unmount_stale_disks(scratch);  // first: a directory with a disk in it is not to be removed
      for (const auto& e : fs::directory_iterator(scratch, ec)) {
        pid_t pid = static_cast<pid_t>(std::atol(e.path().filename().c_str()));
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
      }
    }
    check(mkdir(run_dir_.c_str(), 0700), "mkdir " + run_dir_);  // EEXIST: never another's
    lock_ = UniqueFd(
        open((run_dir_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock_ || flock(lock_.get(), LOCK_EX) != 0)
      throw Error(errno, "lock " + run_dir_ + "/lock");
    dir_ = workspace_dir(run_dir_, disk_bytes.has_value());
    if (disk_bytes) {
      disk_ = WorkspaceDisk::scratch(disk_templates, run_dir_ + "/disk", *disk_bytes);
      if (disk_->workspace() != dir_) throw Error(EINVAL, "the workspace disk is not at " + dir_);
    } else {
      check(mkdir(dir_.c_str(), 0755), "mkdir " + dir_);
    }
  }
  ~ScratchWorkspace() {
    disk_.reset();
    std::error_code ec;
    fs::remove_all(run_dir_, ec);
  }
  const std::string& dir() const { return dir_; }
  const WorkspaceDisk* disk() const { return disk_.get(); }

 private:
  std::string run_dir_, dir_;
  UniqueFd lock_;
  std::unique_ptr<WorkspaceDisk> disk_;
};

// The workspace's bound: the request's disk, else the skill's, else kDefaultDiskBytes, never
// over --max-disk.
uint64_t disk_bound(const RunnerContext& ctx, const Skill& skill, const CodeRequest& r) {
  const std::optional<std::string> asked = merge(skill.limits, r.limits).disk;
  runtime::Limits limits;
  limits.disk_bytes = asked ? runtime::parse_size(*asked, "disk") : kDefaultDiskBytes;
  clamp_to_ceilings(ctx.ceilings, limits);
  return *limits.disk_bytes;
}

UniqueFd stdin_memfd(const std::optional<std::string>& data) {
  if (!data) return {};
  UniqueFd fd(memfd_create("sandcell-stdin", MFD_CLOEXEC));
  if (!fd) throw Error(errno, "memfd_create for stdin");
  for (size_t done = 0; done < data->size();) {
    ssize_t n = write(fd.get(), data->data() + done, data->size() - done);
    if (n <= 0) throw Error(errno, "write stdin memfd");
    done += static_cast<size_t>(n);
  }
  check(lseek(fd.get(), 0, SEEK_SET), "rewind stdin memfd");
  return fd;
}

std::vector<std::string> lost_variables(const Workspace& ws) {
  std::vector<std::string> names;
  std::string text = ws.read_small_text(".sandcell/lost-variables.txt");
  for (size_t start = 0, end; start < text.size(); start = end + 1) {
    end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) names.push_back(text.substr(start, end - start));
  }
  return names;
}

// Install, compile, run: each phase only when the one before succeeded.
// After each phase, before anything on the host reads the workspace, its privileges go.
// `ws` is empty until the first phase's sandbox has asked for it (PhaseContext::before_binds).
void run_phases(const PhaseContext& ctx, const std::optional<Workspace>& ws, CodeResult& result) {
  const Skill& skill = ctx.skill;
  auto add = [&](PhaseResult phase) {
    result.phases.push_back(std::move(phase));
    if (ws) ws->strip_privileges();
    return result.phases.back().result.status == runtime::Status::Ok;
  };
  if (!ctx.request.packages.empty()) {
    if (ctx.runner.on_progress) ctx.runner.on_progress("installing " + std::to_string(ctx.request.packages.size()) + " package(s)");
    if (!add(run_phase(ctx, "install", install_command(skill, ctx.request.packages), -1, false))) return;
  }
  if (!skill.compile.empty() && !add(run_phase(ctx, "compile", skill.compile, -1, true))) return;
  UniqueFd in = stdin_memfd(ctx.request.stdin_data);
  const auto& argv = ctx.request.session && !skill.session_run.empty() ? skill.session_run : skill.run;
  add(run_phase(ctx, "run", argv, in ? in.get() : -1, true));
}

void prepare_workspace(Workspace& ws, const Skill& skill, const CodeRequest& r) {
  ws.make_dirs(".sandcell");
  ws.remove_file(".sandcell/lost-variables.txt");
  // Replaced, never written through: the session's code may have made it a hard link (which
  // write_file refuses, and every later call of the session with it) or a FIFO.
  ws.remove_file(skill.source_file);
  ws.write_file(skill.source_file, r.code);
  for (const InputFile& f : r.files) ws.write_file(f.path, f.content);
  ws.make_dirs(skill.artifacts);
}

// `late_workspace`, when set, waits until ctx.workspace_dir exists and returns its disk: the first
// phase's sandbox starts before that, and the request's files are written while its child sets
// up (PhaseContext::before_binds). What it throws is this call's error, as if it had come first.
CodeResult run_in_workspace(PhaseContext ctx,
                            const std::function<const WorkspaceDisk*()>& late_workspace = {}) {
  const CollectBounds& bounds = ctx.runner.bounds;
  std::optional<Workspace> ws;
  Workspace::Snapshot before;
  auto prepare = [&] {
    if (ws) return;
    if (late_workspace) ctx.disk = late_workspace();
    Workspace made(ctx.workspace_dir);
    made.strip_privileges();  // a session's earlier call may have ended before its strip
    prepare_workspace(made, ctx.skill, ctx.request);
    before = made.snapshot(ctx.skill.artifacts, bounds);
    ws.emplace(std::move(made));
    timeline::mark("workspace");
  };
  std::exception_ptr late_failure;
  if (late_workspace)
    ctx.before_binds = [&] {
      try {
        prepare();
      } catch (...) {
        late_failure = std::current_exception();
        throw;
      }
    };
  else
    prepare();
  CodeResult result{.skill = ctx.skill.name, .session = ctx.request.session};
  run_phases(ctx, ws, result);
  if (late_failure) std::rethrow_exception(late_failure);
  prepare();  // a first phase that ended before its sandbox asked for the workspace
  result.error = classify_failure(ctx.skill.errors, result.phases.back());
  result.artifacts = ws->changed_files(before, ws->snapshot(ctx.skill.artifacts, bounds), bounds);
  for (const std::string& path : ctx.request.get)
    result.files.push_back(ws->read_file(path, kMaxGetBytes));
  if (ctx.request.session) result.lost_variables = lost_variables(*ws);
  timeline::mark("collected");
  return result;
}

}  // namespace

CodeResult run_code(const SkillCatalog& catalog, const CodeRequest& request, const RunnerContext& context) {
  timeline::mark("run_code");
  const Skill& skill = catalog.find(request.skill);
  check_request(skill, request);
  check_request_within(context.ceilings, request);
  const uint64_t disk_bytes = disk_bound(context, skill, request);
  const std::optional<std::string> unbounded = WorkspaceDisk::unavailable();
  const std::optional<uint64_t> disk = unbounded ? std::nullopt : std::optional(disk_bytes);
  const std::string disk_templates = context.store_root + "/disk-templates";
  // A scratch workspace is made while the image is resolved, the seccomp profile compiled and
  // the user namespace probed: its disk mostly waits on I/O (LOOP_CONFIGURE fsyncs the image
  // file), on another CPU (a thread left to start on this one waited ~1.2 ms for it:
  // thread_elsewhere.hpp), and while the first phase's sandbox starts: its child sets up its root
  // and attaches the workspace last (PhaseContext::before_binds). A session's waits for its lock
  // and may remove others: only once the call can run.
  const std::string scratch_root = context.store_root + "/code-runs";
  const std::string run_dir = ScratchWorkspace::new_run_dir(scratch_root);
  std::optional<ThreadElsewhere<std::unique_ptr<ScratchWorkspace>>> scratch;
  if (!request.session)
    scratch.emplace([&] {
      auto made = std::make_unique<ScratchWorkspace>(scratch_root, run_dir, disk_templates, disk);
      timeline::mark("disk");
      return made;
    });
  rootfs_builder::ImageStore store(context.store_root);
  // Held for the whole call: no prune between the resolve and the last phase's run.
  rootfs_builder::ImageStore::Lease store_lease = store.lease();
  const rootfs_builder::ImageRecord image = built_image(store, skill);
  timeline::mark("image");
  const runtime::SeccompSource seccomp = code_seccomp(context);
  timeline::mark("seccomp");
  UsernsChoice userns = choose_user_namespace(context);
  if (userns.warning && context.on_warning) context.on_warning(*userns.warning);
  if (request.session) {
    SessionStore sessions(context.sessions_dir, context.session_ttl, context.session_bounds);
    sessions.expire();
    SessionLease lease = sessions.open(*request.session, skill.name, disk, disk_templates);
    return run_in_workspace({skill, request, context, store, image, lease.workspace(), seccomp,
                             lease.disk(), disk_bytes,
                             unbounded.value_or("a session made before disk bounds"), userns.mode,
                             userns.warning});
  }
  std::unique_ptr<ScratchWorkspace> workspace;  // destroyed first: its disk unmounted
  return run_in_workspace(
      {skill, request, context, store, image,
       ScratchWorkspace::workspace_dir(run_dir, disk.has_value()), seccomp, nullptr, disk_bytes,
       unbounded.value_or(""), userns.mode, userns.warning},
      [&] {
        workspace = scratch->get();
        return workspace->disk();
      });
}

namespace {

// A request's stdin reaches a pooled program through its stdin pipe, after the go byte, written
// at once: it must fit the pipe's buffer (64 KiB). Larger ones run cold.
constexpr size_t kMaxPooledStdin = 60000;

// After a pooled answer, how long the member leaves the CPUs to its delivery before it tears the
// sandbox down (PooledRun::yield_to_the_answer).
constexpr auto kAnswerDelivery = std::chrono::milliseconds(2);

// The request of a pooled sandbox, shared between the thread that reads it and the supervisor.
struct PendingRequest {
  std::mutex mutex;
  std::condition_variable ready_or_closed;
  bool closed = false;  // the member is done: the reader must touch nothing more
  bool arrived = false;
  std::optional<CodeRequest> request;
  bool stream = false;
  std::string refused;
  runtime::HandOverTerms terms;
  Workspace::Snapshot before;
  std::chrono::steady_clock::time_point ready_at, handed_at;
  bool ready = false;
};

std::string read_all(int fd) {
  std::string text;
  char buffer[65536];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return text;
    text.append(buffer, static_cast<size_t>(n));
    if (text.size() > (kMaxInputBytes + kMaxCodeBytes) * 2) return {};  // no request is this big
  }
}

// What a request asks of the sandbox beyond the supervisor's limits, as phase_spec makes it.
runtime::Limits request_limits(const RunnerContext& ctx, const Skill& skill, const CodeRequest& r) {
  runtime::Limits limits = runtime::default_spec().limits;
  apply_limit_args(merge(skill.limits, r.limits), limits);
  clamp_to_ceilings(ctx.ceilings, limits);
  return limits;
}

// Why the prepared sandbox cannot run `r` exactly as a cold run would; empty: it can.
std::string not_poolable(const SkillCatalog& catalog, const RunnerContext& ctx, const Skill& skill,
                         const CodeRequest& r, uint64_t disk_bytes) {
  if (catalog.find(r.skill).name != skill.name) return "another skill";
  if (r.session) return "a session";
  if (!r.packages.empty()) return "packages";
  if (r.net) return "a network policy";
  if (!r.env.empty()) return "an environment";
  if (r.stdin_data && r.stdin_data->size() > kMaxPooledStdin) return "a large stdin";
  const runtime::Limits asked = request_limits(ctx, skill, r);
  const runtime::Limits prepared = request_limits(ctx, skill, CodeRequest{});
  if (asked.memory_bytes != prepared.memory_bytes || asked.pids != prepared.pids || asked.cpus != prepared.cpus)
    return "memory, pids or cpus limits of its own";
  if (disk_bound(ctx, skill, r) != disk_bytes) return "a disk limit of its own";
  return {};
}

// A prepared sandbox yields the CPU to the requests running meanwhile (its interpreter's start and
// preloads are ~0.3-0.6 s of a core) and gets the default share back at its hand-over: cpu.shares
// on v1, cpu.weight on v2, in the run's own cgroup (sibling of the other runs' under sandcell/).
// Where neither exists (no cgroups, or no cpu controller) nothing is written. The file that
// took the low share stays open for the hand-over, whose path then writes once.
class CpuShare {
 public:
  void lower(const std::vector<std::string>& paths) {
    for (const std::string& dir : paths)
      for (const auto& [name, low, normal] :
           {std::tuple{"/cpu.shares", "16", "1024"}, std::tuple{"/cpu.weight", "1", "100"}}) {
        UniqueFd fd(open((dir + name).c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW));
        if (!fd) continue;
        ssize_t ignored = write(fd.get(), low, strlen(low));
        (void)ignored;
        fd_ = std::move(fd);
        normal_ = normal;
        return;
      }
  }
  void restore() {
    if (!fd_) return;
    ssize_t ignored = pwrite(fd_.get(), normal_, strlen(normal_), 0);
    (void)ignored;
    fd_.reset();
  }

 private:
  UniqueFd fd_;
  const char* normal_ = "";
};

uint64_t cgroup_memory(const std::vector<std::string>& paths) {
  for (const std::string& dir : paths)
    for (const char* name : {"/memory.current", "/memory.usage_in_bytes"}) {
      std::ifstream in(dir + name);
      uint64_t bytes = 0;
      if (in >> bytes) return bytes;
    }
  return 0;
}

// What a pool member's request reader uses. The references outlive the member's run, except
// for a reader left waiting for a request that will not come (run_pool_member detaches it):
// once `pending->closed` is set it touches none of them.
struct RequestReader {
  std::shared_ptr<PendingRequest> pending;
  int request_fd, event_fd;
  const SkillCatalog& catalog;
  const RunnerContext& context;
  const Skill& skill;
  Workspace& ws;
  const PoolMemberHooks& hooks;
  uint64_t disk_bytes;
};

// The request's text, checked as a cold run would check it and written into the workspace; or
// why it cannot run here. Called with pending.mutex held.
void accept_request(const RequestReader& r, PendingRequest& pending, const std::string& text) {
  try {
    nlohmann::json message = parse_bounded_json(text);
    CodeRequest request = parse_code_request(message.at("request"));
    check_request(r.skill, request);
    check_request_within(r.context.ceilings, request);
    pending.refused = not_poolable(r.catalog, r.context, r.skill, request, r.disk_bytes);
    if (!pending.refused.empty()) return;
    prepare_workspace(r.ws, r.skill, request);
    pending.before = r.ws.snapshot(r.skill.artifacts, r.context.bounds);
    const runtime::Limits limits = request_limits(r.context, r.skill, request);
    pending.terms = {limits.wall_s, limits.cpu_s, limits.output_bytes};
    pending.stream = message.value("stream", false);
    pending.request = std::move(request);
  } catch (const std::exception& e) {
    pending.refused = e.what();
  }
}

// The reader thread: the request, read and written into the workspace while the interpreter
// starts, handed over (the eventfd) only once the interpreter is ready — its "ready" byte is not
// the program's output. A refusal or a cancel needs no wait.
void read_pooled_request(RequestReader r) {
  // Interrupts are the supervisor's (its signalfd): delivered here, SIGTERM would end the
  // member with the default action, leaving its sandbox to die and its workspace behind.
  sigset_t interrupts;
  sigemptyset(&interrupts);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupts, sig);
  pthread_sigmask(SIG_BLOCK, &interrupts, nullptr);
  std::string text = read_all(r.request_fd);
  PendingRequest& pending = *r.pending;
  std::unique_lock lock(pending.mutex);
  if (pending.closed) return;
  pending.arrived = !text.empty();
  if (pending.arrived) accept_request(r, pending, text);
  if (pending.request) pending.ready_or_closed.wait(lock, [&] { return pending.ready || pending.closed; });
  if (pending.closed) return;
  if (pending.request && r.hooks.on_request) r.hooks.on_request(pending.stream);
  uint64_t one = 1;
  ssize_t ignored = write(r.event_fd, &one, sizeof one);
  (void)ignored;
}

// The supervisor's side of a pool member's run phase: the hand-over (take the terms, then go:
// the CPU share back and the request's stdin), the bootstrap's "ready" byte, and the request's
// result once the program is gone.
class PooledRun {
 public:
  PooledRun(std::shared_ptr<PendingRequest> pending, const Skill& skill,
            const RunnerContext& context, Workspace& ws, const PoolMemberHooks& hooks,
            bool script_in_workspace, const ZygoteClient* zygote)
      : pending_(std::move(pending)),
        skill_(skill),
        context_(context),
        ws_(ws),
        hooks_(hooks),
        script_in_workspace_(script_in_workspace),
        zygote_(zygote) {
    int fds[2];
    check(pipe2(fds, O_CLOEXEC), "pipe for the pooled program's stdin");
    stdin_read_ = UniqueFd(fds[0]);
    stdin_write_ = UniqueFd(fds[1]);
    event_ = UniqueFd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!event_) throw Error(errno, "eventfd");
  }

  int stdin_fd() const { return stdin_read_.get(); }
  bool zygote_lost() const { return zygote_ && zygote_->lost(); }
  int event_fd() const { return event_.get(); }
  bool answered() const { return answered_; }

  PooledPhase phase() {
    PooledPhase pooled;
    pooled.hand_over.fd = event_.get();
    pooled.hand_over.take = [this] { return take(); };
    pooled.hand_over.go = [this] { go(); };
    pooled.on_started = [this](pid_t, const std::vector<std::string>& paths) {
      cgroup_paths_ = paths;
      cpu_share_.lower(cgroup_paths_);
    };
    pooled.before = [this](runtime::Stream s, std::span<const char> data) { before(s, data); };
    if (hooks_.on_result) pooled.on_result = [this](const PhaseResult& phase) { answer_early(phase); };
    return pooled;
  }

  // The request's result from the pooled phase's: once the program is gone, or at the end.
  CodeResult result_of(PhaseResult phase) {
    const CodeRequest& request = *pending_->request;  // set: the phase was handed over
    // A zygote's fork shares its layout (ASLR is per exec) and the interpreter's hash seed with
    // its siblings; random states are reseeded in the child (pool_boot.py).
    if (zygote_) phase.result.shared_with_siblings = {"address_layout", "str_hash_seed"};
    phase.result.pool_wait_ms = static_cast<uint64_t>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(pending_->handed_at - pending_->ready_at).count()));
    CodeResult result{.skill = skill_.name, .session = std::nullopt};
    result.phases.push_back(std::move(phase));
    ws_.strip_privileges();
    result.error = classify_failure(skill_.errors, result.phases.back());
    result.artifacts = ws_.changed_files(pending_->before, ws_.snapshot(skill_.artifacts, context_.bounds), context_.bounds);
    for (const std::string& path : request.get) result.files.push_back(ws_.read_file(path, kMaxGetBytes));
    return result;
  }

 private:
  std::optional<runtime::HandOverTerms> take() {
    std::lock_guard lock(pending_->mutex);
    if (!pending_->request) return std::nullopt;
    return pending_->terms;
  }

  void go() {
    cpu_share_.restore();
    std::string bytes(1, '\0');
    {
      std::lock_guard lock(pending_->mutex);
      pending_->handed_at = std::chrono::steady_clock::now();
      if (pending_->request->stdin_data) bytes += *pending_->request->stdin_data;
    }
    for (size_t done = 0; done < bytes.size();) {  // fits the pipe's buffer: kMaxPooledStdin
      ssize_t n = write(stdin_write_.get(), bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the program is gone; the supervisor sees it
      done += static_cast<size_t>(n);
    }
    stdin_write_.reset();
  }

  // Output before the hand-over: the bootstrap's "ready" byte wakes the reader.
  void before(runtime::Stream s, std::span<const char> data) {
    bool now_ready = false;
    {
      std::lock_guard lock(pending_->mutex);
      if (s == runtime::Stream::Stdout && !pending_->ready && !data.empty() && data[0] == '\0') {
        pending_->ready = now_ready = true;
        pending_->ready_at = std::chrono::steady_clock::now();
        pending_->ready_or_closed.notify_all();
      }
    }
    if (!now_ready) return;
    if (script_in_workspace_) {  // loaded: the program is not to find it
      try {
        ws_.remove_file(pool_script_workspace_path(skill_));
      } catch (const std::exception& e) {
        if (context_.on_warning) context_.on_warning(std::string("the pool's bootstrap stays in the workspace: ") + e.what());
      }
    }
    if (hooks_.on_ready) hooks_.on_ready(cgroup_memory(cgroup_paths_));
  }

  // The result as soon as the program is gone, before the sandbox's teardown (hooks.on_result).
  void answer_early(const PhaseResult& phase) {
    // Nothing ran, or not as asked (zygote_lost): the outcome says why.
    if (!phase.result.pooled || zygote_lost()) return;
    try {
      hooks_.on_result(result_of(phase));
      answered_ = true;
      yield_to_the_answer();
    } catch (const std::exception& e) {  // answered at the end instead, or the error then
      if (context_.on_warning) context_.on_warning(std::string("the pooled result: ") + e.what());
    }
  }

  // Answered: what is left in the sandbox is teardown (the program's exit, when it said it was
  // done and is still there, frozen), which should not take the CPU from the server sending that
  // answer: the sandbox gets the low share back, and the teardown waits kAnswerDelivery, a time
  // the answer needs to reach the client (the server's thread reads it, writes the reply, the
  // client reads that). Started at once, the teardown (killing the frozen interpreter, whose
  // exit unmaps numpy: ~3 ms of a CPU; the cgroups; the workspace) held a CPU that the server's
  // or the client's thread had just been woken on, and about half the pooled round trips took
  // 2-5 ms longer (session 35, bench/README.md, "pool.sh"). The sandbox stays frozen meanwhile:
  // the wait costs no CPU, only the member's end comes that much later. (This thread's own
  // teardown keeps its priority: at the lowest, under sustained load the exiting members would
  // pile up.)
  void yield_to_the_answer() {
    cpu_share_.lower(cgroup_paths_);
    std::this_thread::sleep_for(kAnswerDelivery);
  }

  std::shared_ptr<PendingRequest> pending_;
  const Skill& skill_;
  const RunnerContext& context_;
  Workspace& ws_;
  const PoolMemberHooks& hooks_;
  const bool script_in_workspace_;
  const ZygoteClient* zygote_;  // set: the program is a fork of the skill's zygote
  UniqueFd stdin_read_, stdin_write_, event_;
  std::vector<std::string> cgroup_paths_;
  CpuShare cpu_share_;
  bool answered_ = false;
};

// The member's outcome once its run phase is over; the reader is joined, or left waiting for a
// request that will not run.
PoolMemberOutcome finish_pool_member(PendingRequest& pending, std::thread& reader, PooledRun& run, PhaseResult phase) {
  PoolMemberOutcome outcome;
  {
    std::lock_guard lock(pending.mutex);
    pending.closed = true;
    pending.ready_or_closed.notify_all();
    if (!phase.result.pooled) {
      outcome.refused = pending.refused;
      if (outcome.refused.empty())
        outcome.failed = pending.arrived ? "the prepared sandbox ended before its request: " + phase.result.error
                                         : "cancelled before a request";
    }
  }
  if (pending.arrived || phase.result.pooled) {
    reader.join();
  } else {
    reader.detach();  // still waiting for a request that will not run; it touches nothing now
  }
  if (!phase.result.pooled) {
    if (outcome.failed.size() > 0 && !phase.stderr_text.empty()) outcome.failed += " " + phase.stderr_text;
    return outcome;
  }
  outcome.answered = run.answered();
  if (!outcome.answered && run.zygote_lost()) {
    // Killed with its zygote, not by anything of its own: a plain request runs again, cold (the
    // server does that for a failed member); a streamed one has sent output, and says why it ended.
    const std::string why = "the zygote this sandbox was forked from ended during the run";
    if (!pending.stream) {
      outcome.failed = why;
      return outcome;
    }
    phase.result.status = runtime::Status::RuntimeError;
    phase.result.error = why;
  }
  if (!outcome.answered) outcome.result = run.result_of(std::move(phase));
  return outcome;
}

}  // namespace

PoolMemberOutcome run_pool_member(const SkillCatalog& catalog, const std::string& skill_name,
                                  const RunnerContext& context, int request_fd,
                                  const PoolMemberHooks& hooks, const std::string& zygote_dir) {
  const Skill& skill = catalog.find(skill_name);
  const std::vector<std::string> argv = pool_command(skill);
  std::optional<ZygoteClient> zygote;
  if (!zygote_dir.empty()) zygote.emplace(zygote_dir);
  rootfs_builder::ImageStore store(context.store_root);
  rootfs_builder::ImageStore::Lease store_lease = store.lease();
  const rootfs_builder::ImageRecord image = built_image(store, skill);
  const runtime::SeccompSource seccomp = code_seccomp(context);
  UsernsChoice userns = choose_user_namespace(context);
  if (zygote && userns.mode != runtime::UserNamespace::Auto)
    throw Error::invalid(
        "a zygote's member needs a user namespace of its own (userns auto, as root)");
  const CodeRequest defaults{.skill = skill.name};
  const uint64_t disk_bytes = disk_bound(context, skill, defaults);
  const std::optional<std::string> unbounded = WorkspaceDisk::unavailable();
  std::optional<uint64_t> disk;  // (not a ?: of optionals: g++ 12 then warns maybe-uninitialized)
  if (!unbounded) disk = disk_bytes;
  const std::string scratch_root = context.store_root + "/code-runs";
  ScratchWorkspace scratch(scratch_root, ScratchWorkspace::new_run_dir(scratch_root),
                           context.store_root + "/disk-templates", disk);
  Workspace ws(scratch.dir());
  ws.make_dirs(".sandcell");
  // A bootstrap the interpreter loads from a file (node's --require) is there until it is ready.
  const bool script_in_workspace = pool_script_in_workspace(skill);
  if (script_in_workspace) ws.write_file(pool_script_workspace_path(skill), pool_script_text(skill));
  const PhaseContext ctx{skill, defaults, context, store, image, scratch.dir(), seccomp,
                         scratch.disk(), disk_bytes, unbounded.value_or(""), userns.mode, userns.warning};

  auto pending = std::make_shared<PendingRequest>();
  PooledRun run(pending, skill, context, ws, hooks, script_in_workspace,
                zygote ? &*zygote : nullptr);
  std::thread reader(read_pooled_request,
                     RequestReader{pending, request_fd, run.event_fd(), catalog, context, skill, ws, hooks, disk_bytes});
  PooledPhase pooled = run.phase();
  if (zygote) {
    pooled.nest_under = zygote->nesting();
    pooled.outside_program = zygote->program();
  }
  PhaseResult phase = run_phase(ctx, "run", argv, run.stdin_fd(), true, &pooled);
  return finish_pool_member(*pending, reader, run, std::move(phase));
}

}  // namespace sandcell::agent
