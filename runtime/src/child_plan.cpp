// ChildPlanBuilder::for_sandbox: turns a Spec into the ChildPlan the child runs from, checking
// the Spec on the way: every mistake in the input is found here, in the parent, with a message
// naming it.
#include "child_plan.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>

#include "child_plan_builder.hpp"
#include "sandcell/apparmor/lsm_probe.hpp"
#include "sandcell/apparmor/profile.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "spec_checks.hpp"
#include "userns_mounts.hpp"

namespace sandcell::runtime {

const apparmor::LsmHost& lsm_host() {
  static const apparmor::LsmHost host = apparmor::probe_lsm();  // thread-safe static init
  return host;
}

namespace {


// The lower directories, top first, each once.
std::vector<std::string> stacked_layers(const Spec& spec) {
  std::vector<std::string> layers;
  std::set<std::string> stacked;
  for (const std::string& layer : spec.rootfs_layers) {
    // overlayfs splits its options on ',' and lowerdir on ':'.
    if (layer.find_first_of(",:\\") != std::string::npos)
      throw Error::invalid("rootfs path " + layer +
                           " contains ',', ':' or '\\', which overlayfs cannot take");
    // An image may hold the same layer twice (two identical COPY steps); overlayfs refuses a
    // directory stacked twice (ELOOP). Every path the lower copy holds is shadowed by the upper
    // copy, so keeping only the top-most occurrence shows the same tree.
    // Absolute: the child resolves them after it has changed into its scratch directory.
    if (stacked.insert(layer).second) layers.push_back(std::filesystem::absolute(layer).string());
  }
  return layers;
}

// In a user namespace overlayfs may not use trusted.* xattrs: `userxattr` keeps its own in
// user.*, and layers unpacked rootless carry user.overlay.opaque (layer_reader.cpp).
std::string overlay_options(const std::vector<std::string>& lowers, const std::string& upper,
                            const std::string& work, bool userxattr) {
  std::string lower;
  for (const std::string& layer : lowers) lower += (lower.empty() ? "" : ":") + layer;
  return "lowerdir=" + lower + ",upperdir=" + upper + ",workdir=" + work +
         (userxattr ? ",userxattr" : "");
}

// `--userns=auto`: the child works relative to its scratch tmpfs (its cwd), because once it is
// the namespace's root it can no longer walk the host's 0700 state directories. The lowers are
// idmapped clones the supervisor sends (userns_mounts.cpp), attached at lower0, lower1, ...; the
// overlay keeps its own xattrs in the user.* namespace, the only one writable inside a user
// namespace.
void plan_userns_rootfs(const Spec& spec, ChildPlan& plan) {
  if (spec.user_namespace != UserNamespace::Auto) return;
  if (spec.rootfs_layers.size() > kMaxIdmappedLayers)
    throw Error::invalid("UserNamespace::Auto takes at most " + std::to_string(kMaxIdmappedLayers) +
                         " image layers");
  plan.user_namespace = true;
  plan.lower_layers = stacked_layers(spec);
  plan.scratch_options += ",uid=0,gid=0";
  plan.upper_dir = "upper";
  plan.work_dir = "work";
  plan.root_dir = "root";
  for (size_t i = 0; i < plan.lower_layers.size(); ++i)
    plan.lower_mount_points.push_back("lower" + std::to_string(i));
  plan.overlay_options =
      overlay_options(plan.lower_mount_points, plan.upper_dir, plan.work_dir, true);
  plan.overlay_from_supervisor = host_userns_overlay();
}

constexpr const char* kProxyVariables[ProxyEnvPage::kSlots] = {"HTTP_PROXY", "HTTPS_PROXY",
                                                               "http_proxy", "https_proxy"};

std::vector<PlannedMount> plan_mounts(const Spec& spec) {
  std::vector<PlannedMount> mounts;
  for (const BindMount& bind : spec.bind_mounts) {
    // A late source does not exist yet; it is a directory (BindMount::late). Without a user
    // namespace run_sandbox() made it before the plan.
    const bool late = bind.late && spec.user_namespace == UserNamespace::Auto;
    struct stat st {};
    if (!late && stat(bind.source.c_str(), &st) < 0)
      throw Error::invalid("Spec::bind_mounts source " + bind.source + " does not exist");
    check_sandbox_path(bind.destination, "Spec::bind_mounts destination");
    mounts.push_back({.kind = PlannedMount::Kind::Bind,
                      .source = std::filesystem::absolute(bind.source).string(),
                      .destination = bind.destination,
                      .data = {},
                      .read_only = bind.read_only,
                      .source_is_dir = late || S_ISDIR(st.st_mode),
                      .tree_fd = -1,
                      .idmap = bind.idmap,
                      .late = late});
  }
  for (const TmpfsMount& tmpfs : spec.tmpfs_mounts) {
    check_sandbox_path(tmpfs.destination, "Spec::tmpfs_mounts destination");
    if (tmpfs.mode > 07777) throw Error::invalid("Spec::tmpfs_mounts mode must be at most 07777");
    char mode[16];
    snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(tmpfs.mode));
    mounts.push_back({.kind = PlannedMount::Kind::Tmpfs,
                      .source = "tmpfs",
                      .destination = tmpfs.destination,
                      .data = std::string("mode=") + mode + ",size=" + std::to_string(tmpfs.size_bytes),
                      .read_only = tmpfs.read_only,
                      .no_exec = tmpfs.no_exec});
  }
  // Parents before children: /a must be mounted before /a/b lands on top of it.
  std::stable_sort(mounts.begin(), mounts.end(), mounted_before);
  return mounts;
}


apparmor::LandlockPlan plan_landlock(const Spec& spec) {
  apparmor::LandlockPlan landlock;
  // Layered under AppArmor where the host has both (the LSMs stack): the profile confines what
  // the program may do by path and capability, Landlock where it may write, whichever is stricter.
  landlock.abi = spec.lsm ? lsm_host().landlock_abi : 0;
  landlock.writable = spec.writable_paths;
  if (spec.cwd != "/") landlock.writable.push_back(spec.cwd);
  for (const BindMount& bind : spec.bind_mounts)
    if (!bind.read_only) landlock.writable.push_back(bind.destination);
  for (const TmpfsMount& tmpfs : spec.tmpfs_mounts)
    if (!tmpfs.read_only) landlock.writable.push_back(tmpfs.destination);
  landlock.deny_tcp = spec.network == NetworkMode::None;
  return landlock;
}

bool is_proxy_variable(const std::string& entry) {
  for (const char* name : kProxyVariables)
    if (entry.starts_with(name) && entry.size() > strlen(name) && entry[strlen(name)] == '=')
      return true;
  return false;
}

// Allow mode: the proxy is the only way out, so the program's own proxy settings give way to
// it; NO_PROXY keeps the sandbox's loopback direct. See ProxyEnvPage for why the proxy
// variables live in a shared page.
void plan_proxy_env(ChildPlan& plan) {
  std::erase_if(plan.env, [](const std::string& entry) {
    return is_proxy_variable(entry) || entry.starts_with("NO_PROXY=") ||
           entry.starts_with("no_proxy=");
  });
  for (const char* name : {"NO_PROXY=", "no_proxy="})
    plan.env.push_back(std::string(name) + "localhost,127.0.0.1,::1");
  plan.proxy_env = std::make_unique<ProxyEnvPage>();
}

}  // namespace

// The host's AppArmor gets sandcell-default, loaded once per process by root; Landlock is layered
// under it (docs/architecture.md "The sandbox"). Rootless sandcell has Landlock alone: a process
// in a user namespace other than the host's may neither load AppArmor profiles nor list them
// (apparmor_parser: "Permission denied"; the kernel's policy_view_capable), so it cannot know that
// sandcell-default is there to enter. The record says `landlock:abiN`.
std::string plan_apparmor(const Spec& spec) {
  if (!spec.lsm || !lsm_host().apparmor || rootless()) return "";
  static std::once_flag loaded;
  std::call_once(loaded, [] { apparmor::load_profile(apparmor::default_profile()); });
  return apparmor::kDefaultProfile;
}

ProxyEnvPage::ProxyEnvPage() {
  void* page =
      mmap(nullptr, kSlots * kSlotBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw Error(errno, "mmap the proxy environment page");
  page_ = static_cast<char*>(page);
  for (size_t i = 0; i < kSlots; ++i) snprintf(slot(i), kSlotBytes, "%s=", kProxyVariables[i]);
}

ProxyEnvPage::~ProxyEnvPage() {
  munmap(page_, kSlots * kSlotBytes);
}

void ProxyEnvPage::fill(const std::string& proxy_url) const {
  for (size_t i = 0; i < kSlots; ++i) {
    int n = snprintf(slot(i), kSlotBytes, "%s=%s", kProxyVariables[i], proxy_url.c_str());
    if (n < 0 || static_cast<size_t>(n) >= kSlotBytes)
      throw Error::invalid("proxy address too long for the environment: " + proxy_url);
  }
}

bool mounted_before(const PlannedMount& a, const PlannedMount& b) {
  return std::count(a.destination.begin(), a.destination.end(), '/') <
         std::count(b.destination.begin(), b.destination.end(), '/');
}

void fill_exec_arrays(ChildPlan& plan) {
  for (std::string& arg : plan.args) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (std::string& entry : plan.env) {
    plan.envp.push_back(entry.data());
    if (entry.rfind("PATH=", 0) == 0) plan.path_env = entry.substr(5);
  }
  if (plan.proxy_env)
    for (size_t i = 0; i < ProxyEnvPage::kSlots; ++i) plan.envp.push_back(plan.proxy_env->slot(i));
  plan.envp.push_back(nullptr);
  if (plan.path_env.empty())
    plan.path_env = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
}

ChildPlanBuilder ChildPlanBuilder::for_sandbox_exec(const Spec& spec, const SandboxProcess& process) {
  ChildPlanBuilder builder = for_sandbox(spec, "/");
  ChildPlan& plan = builder.building();
  plan.args = process.args;
  plan.env = process.env;
  plan.cwd = process.cwd;
  plan.uid = process.uid;
  plan.gid = process.gid;
  plan.groups = process.groups;
  plan.caps = plan_capabilities(spec.capabilities, /*raise_ambient=*/process.uid != 0);  // as for_sandbox
  plan.proxy_env.reset();  // Allow mode: the proxy variables are the program's env, given here
  plan.make_missing_cwd = false;  // as runc's exec: a missing directory is an error, not made as root
  return ChildPlanBuilder(std::move(plan));
}

ChildPlanBuilder ChildPlanBuilder::for_sandbox(const Spec& spec, const std::string& scratch) {
  check_spec(spec);
  ChildPlan plan;
  const std::string scratch_dir = std::filesystem::absolute(scratch).string();
  plan.scratch_dir = scratch_dir;
  plan.scratch_options = "mode=0700,size=" + std::to_string(spec.rootfs_upper_bytes);
  plan.persistent_upper = !spec.rootfs_upper_dir.empty();
  // Absolute, like the lowers: the child resolves them after changing into its scratch directory.
  plan.upper_dir = plan.persistent_upper ? std::filesystem::absolute(spec.rootfs_upper_dir).string()
                                         : scratch_dir + "/upper";
  plan.work_dir = plan.persistent_upper ? std::filesystem::absolute(spec.rootfs_work_dir).string()
                                        : scratch_dir + "/work";
  plan.root_dir = scratch_dir + "/root";
  plan.overlay_options =
      overlay_options(stacked_layers(spec), plan.upper_dir, plan.work_dir, rootless());
  plan_userns_rootfs(spec, plan);
  plan.mounts = plan_mounts(spec);
  plan.late_binds = static_cast<size_t>(std::count_if(
      plan.mounts.begin(), plan.mounts.end(), [](const PlannedMount& m) { return m.late; }));
  if (plan.late_binds > kMaxLateBinds)
    throw Error::invalid("at most " + std::to_string(kMaxLateBinds) + " late bind mounts");
  plan.masked_paths = spec.masked_paths;
  plan.readonly_paths = spec.readonly_paths;
  plan.shm_options = "mode=1777,size=" + std::to_string(spec.shm_bytes);
  plan.readonly_root = spec.rootfs_read_only;
  plan.hostname = spec.hostname;
  plan.host_network = spec.network == NetworkMode::Host;
  plan.own_user_ns = rootless();
  plan.setgroups_denied = plan.own_user_ns && rootless_single_id();
  if (plan.setgroups_denied && (spec.uid != 0 || spec.gid != 0 || !spec.additional_gids.empty()))
    throw Error::invalid(
        "user " + std::to_string(spec.uid) + ":" + std::to_string(spec.gid) +
        ": rootless without an /etc/subuid and /etc/subgid range only uid and gid 0 exist; "
        "add one, e.g. `sudo usermod --add-subuids 100000-165535 --add-subgids 100000-165535 "
        "$USER`");
  plan.rlimits = spec.rlimits;
  plan.cwd = spec.cwd;
  plan.uid = spec.uid;
  plan.gid = spec.gid;
  plan.groups = spec.additional_gids;
  // A uid other than 0 keeps a capability across execve only as an ambient one (set_capabilities).
  plan.caps = plan_capabilities(spec.capabilities, /*raise_ambient=*/spec.uid != 0);
  plan.no_new_privileges = spec.no_new_privileges;
  plan.apparmor_profile = plan_apparmor(spec);
  plan.landlock = plan_landlock(spec);
  for (const SeccompProgram& layer : spec.seccomp_layers) {
    plan.seccomp_layers.push_back(layer.instructions);
    plan.seccomp_layer_names.push_back(layer.name);
  }
  plan.args = spec.args;
  plan.env = spec.env;
  if (spec.network == NetworkMode::Allow) plan_proxy_env(plan);
  return ChildPlanBuilder(std::move(plan));
}

}  // namespace sandcell::runtime
