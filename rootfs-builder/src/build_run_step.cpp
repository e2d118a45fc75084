// RUN: the command runs in the sandcell runtime on the image so far (its unpacked layers as
// read-only lowers), writing into an upper directory on a tmpfs that then becomes the step's
// layer.
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <iostream>

#include "build_steps.hpp"
#include "sandcell/rootfs_builder/image_user.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/stale_disk_mounts.hpp"
#include "sandcell/runtime/sandbox.hpp"
#include "sandcell/seccomp/compiled_cache.hpp"

namespace sandcell::rootfs_builder {
namespace {

namespace fs = std::filesystem;

// Docker's default capability set for containers (and so for build steps): package managers
// need to chown, switch users (apt's _apt sandbox) and bind low ports.
const std::vector<std::string> kBuildCapabilities = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"};

std::string empty_lower(ImageStore& store) {
  // overlayfs needs at least one lower directory; FROM scratch has none.
  std::string dir = store.root() + "/layers/empty";
  fs::create_directories(dir);
  return dir;
}

std::vector<std::string> run_environment(const ImageState& state, const StageScope& scope) {
  auto env = env_map(state.config.config.env);
  for (const auto& [key, value] : scope.args) env.try_emplace(key, value);  // ENV wins over ARG
  env.try_emplace("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  std::vector<std::string> list;
  for (const auto& [key, value] : env) list.push_back(key + "=" + value);
  return list;
}

runtime::Spec run_spec(BuildContext& ctx, const ImageState& state, const std::vector<std::string>& lowers) {
  runtime::Spec spec = runtime::default_spec();
  spec.rootfs_layers = lowers;
  spec.hostname = "sandcell-build";
  spec.capabilities = kBuildCapabilities;
  spec.writable_paths = {"/"};  // a build step may write anywhere: that is its layer
  spec.network = ctx.options.host_network ? runtime::NetworkMode::Host : runtime::NetworkMode::None;
  spec.limits = {.memory_bytes = ctx.options.memory_bytes,
                 .pids = 4096,
                 .cpus = std::nullopt,
                 .wall_s = 3600.0,
                 .cpu_s = std::nullopt,
                 .output_bytes = std::nullopt,
                 .disk_bytes = std::nullopt};  // the step tmpfs bounds what it writes
  if (spec.network == runtime::NetworkMode::Host && fs::exists("/etc/resolv.conf"))
    spec.bind_mounts.push_back({.source = fs::canonical("/etc/resolv.conf"), .destination = "/etc/resolv.conf",
                                .read_only = true});
  seccomp::ProfileContext profile_context;
  profile_context.capabilities = kBuildCapabilities;
  // Plain errno actions: a build step's denials are not reported.
  spec.seccomp = seccomp::cached_profile("default", std::move(profile_context), {.report_denials = false});
  spec.cwd = state.config.config.working_dir.empty() ? "/" : state.config.config.working_dir;
  if (!state.config.config.user.empty()) {
    ResolvedUser user = resolve_user(state.config.config.user, lowers);
    spec.uid = user.uid;
    spec.gid = user.gid;
    spec.additional_gids = user.additional_gids;
  }
  // As Docker: a USER other than root runs with no capabilities. Keeping them would make them
  // ambient (and inheritable), which a RUN step never asked for.
  if (spec.uid != 0) spec.capabilities.clear();
  return spec;
}

// The command: exec form as given; shell form through the image's SHELL (default /bin/sh -c),
// with heredoc bodies appended as the shell would read them.
std::vector<std::string> run_command(const ImageState& state, const Instruction& ins) {
  if (ins.json_form) return ins.args;
  std::string script = ins.args.empty() ? "" : ins.args[0];
  if (ins.heredocs.size() == 1 && script == ins.heredocs[0].word) {
    script = ins.heredocs[0].content;  // `RUN <<EOF`: the body is the script
  } else {
    for (const Heredoc& doc : ins.heredocs) script += "\n" + doc.content + doc.name;
  }
  std::vector<std::string> command = state.config.config.shell;
  if (command.empty()) command = {"/bin/sh", "-c"};
  command.push_back(script);
  return command;
}

// The mounts a RUN step makes stay in a mount namespace of this thread's own: a builder that is
// killed leaves none behind on the host (the namespace goes with its last process). Slave, so
// the host's mounts still appear here. unshare(CLONE_NEWNS) unshares CLONE_FS too, which a
// thread may do; the sandbox's clone3 from this thread starts from this namespace.
void enter_private_mount_namespace() {
  thread_local bool entered = false;
  if (entered) return;
  if (::unshare(CLONE_NEWNS) != 0) throw Error(errno, "unshare(CLONE_NEWNS) for the build's mounts");
  if (::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) != 0)
    throw Error(errno, "make the build's mounts slave");
  // The disks of the runs and containers mounted right now were copied in too; a build lasts
  // minutes, and each copy would keep its disk's loop device attached as long.
  detach_disk_copies();
  entered = true;
}

// The step's writable layer: a tmpfs of the step's memory limit. Its pages are charged to the
// memory cgroup of whoever first writes them, the sandboxed step, so a step that writes more
// than its memory gets ENOSPC or the OOM killer, never the store's disk (docs/security.md).
class StepTmpfs {
 public:
  StepTmpfs(const std::string& dir, std::uint64_t bytes) : dir_(dir) {
    enter_private_mount_namespace();
    fs::create_directories(dir_);
    std::string options = "mode=0700,size=" + std::to_string(bytes);
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0)
      throw Error(errno, "mount a tmpfs for the RUN step's layer on " + dir_);
  }
  ~StepTmpfs() { ::umount2(dir_.c_str(), MNT_DETACH); }
  // Less than 1 MiB or no inode left: a write or a file creation of the step got ENOSPC.
  bool full() const {
    struct statvfs st {};
    return statvfs(dir_.c_str(), &st) == 0 &&
           (static_cast<std::uint64_t>(st.f_bavail) * st.f_frsize < (1u << 20) || st.f_favail == 0);
  }
  StepTmpfs(const StepTmpfs&) = delete;
  StepTmpfs& operator=(const StepTmpfs&) = delete;

 private:
  std::string dir_;
};

// Why a failed step's writes stopped: the bound it reached, by the flag that sets it.
std::string layer_full(const BuildOptions& options, std::uint64_t bytes) {
  const std::string flag = options.disk_bytes && *options.disk_bytes <= options.memory_bytes ? "--disk" : "--memory";
  return ": its writes filled the step's layer (" + flag + " " + std::to_string(bytes) +
         " bytes): No space left on device";
}

bool directory_is_empty(const std::string& dir) {
  return fs::is_empty(dir);
}

// The empty file the resolv.conf bind mount needed as its mount point is not part of the step.
void drop_mount_points(const std::string& upper) {
  fs::path resolv = fs::path(upper) / "etc/resolv.conf";
  struct stat st {};
  if (lstat(resolv.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0) fs::remove(resolv);
}

// What a layer's files hold (no link followed): what the store needs for it at most, as the
// tarball of incompressible data and once unpacked for the next step or a run.
std::uint64_t files_bytes(const std::string& dir) {
  std::uint64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code size_ec;
    if (!it->is_regular_file(size_ec) || it->is_symlink(size_ec)) continue;
    const std::uintmax_t size = it->file_size(size_ec);
    if (!size_ec) total += size;
  }
  return total;
}

}  // namespace

CachedStep run_step(BuildContext& ctx, const ImageState& state, const StageScope& scope,
                    const Instruction& ins, const std::string& where) {
  std::vector<std::string> lowers = unpacked_layers_top_first(ctx.store, state);
  if (lowers.empty()) lowers.push_back(empty_lower(ctx.store));
  ScratchDir scratch(ctx.store.tmp_dir(), "run");
  const std::uint64_t layer_bytes = std::min(ctx.options.memory_bytes, ctx.options.disk_bytes.value_or(UINT64_MAX));
  StepTmpfs layer_fs(scratch.path() + "/fs", layer_bytes);  // unmounted before scratch goes
  fs::create_directories(scratch.path() + "/fs/upper");
  fs::create_directories(scratch.path() + "/fs/work");
  runtime::Spec spec = run_spec(ctx, state, lowers);
  spec.rootfs_upper_dir = scratch.path() + "/fs/upper";
  spec.rootfs_work_dir = scratch.path() + "/fs/work";
  spec.env = run_environment(state, scope);
  spec.args = run_command(state, ins);
  runtime::RunOptions run_options;
  run_options.stdin_fd = -1;
  run_options.output = [&ctx](runtime::Stream, std::span<const char> data) {
    ctx.say(std::string(data.data(), data.size()));
  };
  runtime::Result result = runtime::run_sandbox(spec, run_options);
  if (result.status != runtime::Status::Ok)
    throw Error::invalid(where + ": RUN failed (" + runtime::to_string(result.status) +
                         (result.exit_code ? ", exit code " + std::to_string(*result.exit_code) : "") +
                         (result.error.empty() ? "" : ": " + result.error) + ")" +
                         (layer_fs.full() ? layer_full(ctx.options, layer_bytes) : ""));
  drop_mount_points(spec.rootfs_upper_dir);
  return layer_from_directory(ctx, spec.rootfs_upper_dir);
}

CachedStep layer_from_directory(BuildContext& ctx, const std::string& dir) {
  if (directory_is_empty(dir)) return {};
  // A store too small for the layer fails here, before it writes (README "Disk limits").
  ctx.store.require_free(files_bytes(dir), "the step's layer");
  ScratchDir out(ctx.store.tmp_dir(), "layer");
  LayerWriteOptions options;
  options.mtime_clamp = source_date_epoch();
  LayerDigests digests = write_layer_from_upper(dir, out.path() + "/layer.tar.gz", options);
  std::string digest = ctx.store.put_blob_file(out.path() + "/layer.tar.gz", digests.digest);
  ctx.say("  layer " + digest.substr(0, 19) + " " + std::to_string((digests.size + 1023) / 1024) + " KiB");
  return {.layer = Descriptor{.media_type = std::string(media_type::kOciLayerGzip), .digest = digest,
                             .size = digests.size, .annotations = {}},
          .diff_id = digests.diff_id};
}

}  // namespace sandcell::rootfs_builder
