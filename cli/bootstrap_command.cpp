// `sandcell bootstrap NAME --suite bookworm`: a Debian base image made with debootstrap from the
// distribution mirror, so `FROM debian:bookworm-slim` works with no registry at all.
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include "commands.hpp"
#include "sandcell/rootfs_builder/archive_io.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/layer_tar.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/runtime/owned_temp_dir.hpp"
#include "sandcell/base/rootless.hpp"

namespace sandcell::cli {
namespace {

namespace fs = std::filesystem;

struct BootstrapFlags {
  std::string name, suite = "bookworm", variant = "minbase", mirror = "http://deb.debian.org/debian";
};

void run_debootstrap(const BootstrapFlags& f, const std::string& target) {
  std::vector<std::string> args = {"debootstrap", "--variant=" + f.variant, f.suite, target, f.mirror};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    // debootstrap mounts /proc and /sys in the target while it works: in a private mount
    // namespace those mounts never show on the host and die with it, even if it is killed.
    if (unshare(CLONE_NEWNS) < 0 || mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0) _exit(126);
    dup2(STDERR_FILENO, STDOUT_FILENO);  // progress on stderr; stdout stays for the digest
    execvp("debootstrap", argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Error::invalid("debootstrap " + f.suite + " failed (exit " +
                         std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) +
                         "); is the debootstrap package installed and the mirror reachable?");
}

// What Docker's -slim images drop: apt lists and caches, docs. Keeps the image small.
void slim_down(const std::string& root) {
  for (const char* dir : {"/var/lib/apt/lists", "/var/cache/apt/archives", "/usr/share/doc", "/usr/share/man",
                          "/usr/share/info", "/var/log"})
    for (const auto& entry : fs::directory_iterator(root + dir, std::filesystem::directory_options::skip_permission_denied))
      if (entry.path().filename() != "partial" && entry.path().filename() != "lock") fs::remove_all(entry.path());
}

int bootstrap(const BootstrapFlags& f, const GlobalOptions& g) {
  if (runtime::rootless())
    throw Error::invalid("sandcell bootstrap must run as root (debootstrap needs it); rootless, `sandcell pull` or "
                         "`sandcell load` a base image instead");
  rootfs_builder::ImageStore store(g.store_root());
  runtime::OwnedTempDir scratch(store.tmp_dir(), "bootstrap-");  // held: gc leaves it while we run
  const std::string& work = scratch.path();
  run_debootstrap(f, work + "/rootfs");
  slim_down(work + "/rootfs");
  rootfs_builder::LayerWriteOptions options;
  options.mtime_clamp = rootfs_builder::source_date_epoch();
  rootfs_builder::write_layer_from_upper(work + "/rootfs", work + "/rootfs.tar.gz", options);
  std::string digest = rootfs_builder::import_rootfs(store, work + "/rootfs.tar.gz", f.name);
  std::cerr << "bootstrapped " << f.name << " (debian " << f.suite << ", " << f.variant << ")\n";
  std::cout << digest << "\n";
  return 0;
}

}  // namespace

void add_bootstrap_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<BootstrapFlags>();
  auto* cmd = app.add_subcommand("bootstrap", "Make a Debian base image with debootstrap from the mirror, e.g. "
                                              "`sandcell bootstrap debian:bookworm-slim --suite bookworm`");
  cmd->add_option("name", f->name, "Image NAME[:TAG]")->required();
  cmd->add_option("--suite", f->suite, "Debian suite [bookworm]");
  cmd->add_option("--variant", f->variant, "debootstrap variant: minbase, buildd, ... [minbase]");
  cmd->add_option("--mirror", f->mirror, "Debian mirror [http://deb.debian.org/debian]");
  cmd->callback([&action, f, globals] { action = [f, globals] { return bootstrap(*f, *globals); }; });
}

}  // namespace sandcell::cli
