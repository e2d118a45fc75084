// run_code(): check the request, prepare the workspace, run install → compile → run, collect.
#include "sandcell/agent/code_runner.hpp"

#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <filesystem>
#include <future>
#include <regex>

#include "phase.hpp"
#include "sandcell/agent/error_classifier.hpp"
#include "sandcell/agent/sessions.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"
#include "workspace_disk.hpp"

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

// The skill's image, resolved once for every phase (under the caller's store lease).
rootfs_builder::ImageRecord built_image(rootfs_builder::ImageStore& store, const Skill& skill) {
  try {
    return store.resolve(skill.image());
  } catch (const Error& e) {
    if (!e.not_found())  // built, but broken: its own message says how
      throw Error::invalid("skill '" + skill.name + "' image " + skill.image() + ": " + e.what());
    throw Error::invalid("skill '" + skill.name + "' is not built: run `sandcell skills build " + skill.name + "`");
  }
}

// A workspace for one call without a session: <scratch>/<pid>-XXXXXX/disk/workspace on its own
// filesystem (workspace_disk.hpp; <scratch>/<pid>-XXXXXX/workspace where there is none), removed
// afterwards. The run directory's lock is held while the disk is mounted, so that
// unmount_stale_workspace_disks leaves it alone. <scratch> and the run directory are 0700: what the
// code wrote is owned by host ids (its root's files are host root's), and no other host user may
// reach it, even for the moment before a phase ends and the privileges are stripped. Only the
// workspace itself is 0755, for the sandbox's own non-root users. Directories of sandcell processes
// that died are removed on the way in.
class ScratchWorkspace {
 public:
  ScratchWorkspace(const std::string& scratch, const std::string& disk_templates,
                   std::optional<uint64_t> disk_bytes) {
    fs::create_directories(scratch);
    check(chmod(scratch.c_str(), 0700), "chmod 0700 " + scratch);
    std::error_code ec;
    unmount_stale_disks(scratch);
    for (const auto& e : fs::directory_iterator(scratch, ec)) {
      pid_t pid = static_cast<pid_t>(std::atol(e.path().filename().c_str()));
      if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
    }
    run_dir_ = scratch + "/" + std::to_string(getpid()) + "-XXXXXX";
    if (!mkdtemp(run_dir_.data())) throw Error(errno, "mkdtemp " + run_dir_);  // 0700
    lock_ = UniqueFd(
        open((run_dir_ + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!lock_ || flock(lock_.get(), LOCK_EX) != 0)
      throw Error(errno, "lock " + run_dir_ + "/lock");
    if (disk_bytes) {
      disk_ = WorkspaceDisk::scratch(disk_templates, run_dir_ + "/disk", *disk_bytes);
      dir_ = disk_->workspace();
    } else {
      dir_ = run_dir_ + "/workspace";
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
void run_phases(const PhaseContext& ctx, const Workspace& ws, CodeResult& result) {
  const Skill& skill = ctx.skill;
  auto add = [&](PhaseResult phase) {
    result.phases.push_back(std::move(phase));
    ws.strip_privileges();
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

CodeResult run_in_workspace(const PhaseContext& ctx) {
  Workspace ws(ctx.workspace_dir);
  ws.strip_privileges();  // a session's earlier call may have ended before its strip
  prepare_workspace(ws, ctx.skill, ctx.request);
  const CollectBounds& bounds = ctx.runner.bounds;
  Workspace::Snapshot before = ws.snapshot(ctx.skill.artifacts, bounds);
  CodeResult result{.skill = ctx.skill.name, .session = ctx.request.session};
  run_phases(ctx, ws, result);
  result.error = classify_failure(ctx.skill.errors, result.phases.back());
  result.artifacts = ws.changed_files(before, ws.snapshot(ctx.skill.artifacts, bounds), bounds);
  for (const std::string& path : ctx.request.get) result.files.push_back(ws.read_file(path, kMaxGetBytes));
  if (ctx.request.session) result.lost_variables = lost_variables(ws);
  return result;
}

}  // namespace

CodeResult run_code(const SkillCatalog& catalog, const CodeRequest& request, const RunnerContext& context) {
  const Skill& skill = catalog.find(request.skill);
  check_request(skill, request);
  check_request_within(context.ceilings, request);
  const uint64_t disk_bytes = disk_bound(context, skill, request);
  const std::optional<std::string> unbounded = WorkspaceDisk::unavailable();
  const std::optional<uint64_t> disk = unbounded ? std::nullopt : std::optional(disk_bytes);
  const std::string disk_templates = context.store_root + "/disk-templates";
  // A scratch workspace is made while the image is resolved, the seccomp profile compiled and
  // the user namespace probed: its disk mostly waits on I/O (LOOP_CONFIGURE fsyncs the image
  // file). A session's waits for its lock and may remove others: only once the call can run.
  std::future<std::unique_ptr<ScratchWorkspace>> scratch;
  if (!request.session)
    scratch = std::async(std::launch::async, [&] {
      return std::make_unique<ScratchWorkspace>(context.store_root + "/code-runs", disk_templates, disk);
    });
  rootfs_builder::ImageStore store(context.store_root);
  // Held for the whole call: no prune between the resolve and the last phase's run.
  rootfs_builder::ImageStore::Lease store_lease = store.lease();
  const rootfs_builder::ImageRecord image = built_image(store, skill);
  auto seccomp = seccomp::compile_profile_arg(context.seccomp, {}, {.report_denials = true},
                                              context.seccomp_cache_dir.empty() ? seccomp::default_cache_dir()
                                                                                : context.seccomp_cache_dir);
  if (seccomp) seccomp->name = context.seccomp;
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
  const std::unique_ptr<ScratchWorkspace> workspace = scratch.get();
  return run_in_workspace({skill, request, context, store, image, workspace->dir(), seccomp,
                           workspace->disk(), disk_bytes, unbounded.value_or(""), userns.mode,
                           userns.warning});
}

}  // namespace sandcell::agent
