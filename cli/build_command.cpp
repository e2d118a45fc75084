// `sandcell build`: a Dockerfile recipe → an image in the store.
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "sandcell/rootfs_builder/build.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::cli {
namespace {

struct BuildFlags {
  std::string tag, file, target, network = "host", context, memory, disk;
  std::vector<std::string> build_args;
  bool no_cache = false, quiet = false;
};

int build(const BuildFlags& f, const GlobalOptions& g) {
  rootfs_builder::BuildOptions options;
  options.context_dir = f.context;
  options.dockerfile = f.file;
  options.tag = f.tag;
  options.target = f.target;
  options.no_cache = f.no_cache;
  if (f.network != "host" && f.network != "none")
    throw Error::invalid("--network must be host or none, got '" + f.network + "'");
  options.host_network = f.network == "host";
  if (!f.memory.empty()) options.memory_bytes = runtime::parse_size(f.memory, "--memory");
  if (!f.disk.empty()) options.disk_bytes = runtime::parse_size(f.disk, "--disk");
  for (const std::string& kv : f.build_args) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) {  // `--build-arg NAME`: the value comes from our environment
      if (const char* value = getenv(kv.c_str())) options.build_args[kv] = value;
      continue;
    }
    options.build_args[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  options.progress = progress_printer(f.quiet);
  options.fetch_image = image_fetcher(g, f.quiet);
  rootfs_builder::ImageStore store(g.store_root());
  rootfs_builder::BuildResult result = rootfs_builder::build_image(store, options);
  std::cerr << "built " << (f.tag.empty() ? result.manifest_digest : f.tag) << " in " << result.steps
            << " steps (" << result.cached_steps << " cached)\n";
  std::cout << result.image_id << "\n";
  return 0;
}

}  // namespace

// Step lines stand out on a terminal (bold); elsewhere plain lines, one per event.
std::function<void(const std::string&)> progress_printer(bool quiet) {
  bool tty = isatty(STDERR_FILENO) == 1;
  return [tty, quiet](const std::string& line) {
    bool step = !line.empty() && (line[0] == '[' || line.rfind("  layer ", 0) == 0 || line == "  CACHED");
    if (quiet && !step) return;
    if (tty && step) std::cerr << "\033[1m" << line << "\033[0m\n";
    else std::cerr << line << (line.empty() || line.back() != '\n' ? "\n" : "");
  };
}

void add_build_command(CLI::App& app, Action& action, const Globals& globals) {
  auto f = std::make_shared<BuildFlags>();
  auto* cmd = app.add_subcommand("build", "Build an image from a Dockerfile (no daemon). RUN steps run "
                                          "in the sandcell runtime; the default network is the host's, as "
                                          "`docker build --network host`, so package installs work");
  cmd->add_option("-t,--tag", f->tag, "NAME[:TAG] for the image");
  cmd->add_option("-f,--file", f->file, "Dockerfile path [CONTEXT/Dockerfile]");
  cmd->add_option("--build-arg", f->build_args, "K=V build argument (repeatable)")->allow_extra_args(false);
  cmd->add_option("--target", f->target, "Build up to this stage (name or index)");
  cmd->add_flag("--no-cache", f->no_cache, "Run every step, ignoring the build cache");
  cmd->add_option("--network", f->network, "Network of RUN steps and ADD <URL>: host or none [host]");
  cmd->add_flag("-q,--quiet", f->quiet, "Only step lines, no RUN output");
  cmd->add_option("--memory", f->memory,
                  "Memory of each RUN step, which also bounds what it writes (its layer is a tmpfs "
                  "charged to it) (k/m/g suffixes) [8g]");
  cmd->add_option("--disk", f->disk,
                  "What each RUN step may write (k/m/g); past it writes fail with ENOSPC and the "
                  "build says so [--memory]");
  cmd->add_option("context", f->context, "Build context directory")->required()->check(CLI::ExistingDirectory);
  cmd->callback([&action, f, globals] { action = [f, globals] { return build(*f, *globals); }; });
}

}  // namespace sandcell::cli
