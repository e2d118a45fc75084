// Registry verbs: pull, push, login, logout; and the pull behind `FROM` and `run IMAGE` when
// the image is not in the store.
#include <unistd.h>

#include <iostream>

#include "commands.hpp"
#include "sandcell/rootfs_builder/registry.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"
#include "sandcell/base/error.hpp"

namespace sandcell::cli {
namespace {

namespace rb = rootfs_builder;

struct RegistryFlags {
  std::string tls_verify;  // "", "true", "false"
  bool quiet = false;
  unsigned timeout_s = 0;
};

void add_registry_flags(CLI::App* cmd, RegistryFlags& f) {
  cmd->add_option("--tls-verify", f.tls_verify,
                  "false: accept any certificate and plain HTTP [true, except loopback and "
                  "insecure-registries in registries.json]")
      ->check(CLI::IsMember({"true", "false"}));
  cmd->add_flag("-q,--quiet", f.quiet, "No progress bar");
  cmd->add_option("--timeout", f.timeout_s,
                  "Give up after this many seconds in all [none; each request and blob has its own bound]");
}

template <typename Options>
Options registry_options(const RegistryFlags& f) {
  Options options;
  if (!f.tls_verify.empty()) options.tls_verify = f.tls_verify == "true";
  options.progress = !f.quiet && isatty(STDERR_FILENO) == 1;
  options.timeout = std::chrono::seconds(f.timeout_s);
  return options;
}

struct PullFlags : RegistryFlags {
  std::string reference, platform;
};

int pull(const PullFlags& f, const GlobalOptions& g) {
  auto options = registry_options<rb::PullOptions>(f);
  options.platform = f.platform;
  rb::ImageStore store(g.store_root());
  rb::PullResult result = rb::pull_image(store, f.reference, options);
  if (!f.quiet)
    std::cerr << "pulled " << result.local_name << " (" << result.blobs_fetched << " blobs fetched, "
              << result.blobs_present << " already here)\n";
  std::cout << result.manifest_digest << "\n";
  return 0;
}

struct PushFlags : RegistryFlags {
  std::vector<std::string> names;  // NAME REF
  std::int64_t chunk_size = 64 << 20;
};

int push(const PushFlags& f, const GlobalOptions& g) {
  auto options = registry_options<rb::PushOptions>(f);
  if (f.chunk_size <= 0) throw Error::invalid("--chunk-size must be positive");
  options.chunk_size = f.chunk_size;
  rb::ImageStore store(g.store_root());
  rb::PushResult result = rb::push_image(store, f.names[0], f.names[1], options);
  if (!f.quiet)
    std::cerr << "pushed " << f.names[1] << " (" << result.blobs_uploaded << " blobs uploaded, " << result.blobs_mounted
              << " mounted, " << result.blobs_present << " already there)\n";
  std::cout << result.manifest_digest << "\n";
  return 0;
}

struct LoginFlags : RegistryFlags {
  std::string registry, username, password;
  bool password_stdin = false;
};

int login(LoginFlags f) {
  if (f.password_stdin) {
    if (!f.password.empty()) throw Error::invalid("--password and --password-stdin exclude each other");
    std::getline(std::cin, f.password);
    if (!f.password.empty() && f.password.back() == '\r') f.password.pop_back();
  }
  if (f.username.empty() || f.password.empty())
    throw Error::invalid("login needs --username and --password or --password-stdin");
  auto options = registry_options<rb::RegistryOptions>(f);
  std::string registry = rb::normalize_registry(f.registry);
  options.credentials = rb::RegistryCredentials{f.username, f.password};
  rb::check_login(registry, options);
  std::string file = rb::save_credentials(registry, *options.credentials);
  std::cerr << "login succeeded; credentials for " << registry << " saved in " << file << "\n";
  return 0;
}

void add_pull(CLI::App& app, Action& action, const Globals& g) {
  auto f = std::make_shared<PullFlags>();
  auto* cmd = app.add_subcommand("pull", "Download an image from a registry into the store");
  cmd->add_option("reference", f->reference, "[REGISTRY/]NAME[:TAG|@DIGEST]; docker.io when no registry")->required();
  cmd->add_option("--platform", f->platform, "os/arch[/variant] to pick from a multi-platform image [linux/<this machine>]");
  add_registry_flags(cmd, *f);
  cmd->footer("Examples:\n  sandcell pull alpine:3.20\n  sandcell pull --platform linux/arm64/v8 python:3.12-slim\n"
              "  sandcell pull localhost:5000/app@sha256:<hex>");
  cmd->callback([&action, f, g] { action = [f, g] { return pull(*f, *g); }; });
}

void add_push(CLI::App& app, Action& action, const Globals& g) {
  auto f = std::make_shared<PushFlags>();
  auto* cmd = app.add_subcommand("push", "Upload an image of the store to a registry: push NAME REFERENCE");
  cmd->add_option("names", f->names, "NAME (local image) REFERENCE (registry/name:tag)")->required()->expected(2);
  cmd->add_option("--chunk-size", f->chunk_size, "Blobs larger than this many bytes go up in chunks of it [64 MiB]");
  add_registry_flags(cmd, *f);
  cmd->footer("Examples:\n  sandcell push app:1 localhost:5000/team/app:1\n  sandcell push app:1 ghcr.io/me/app:1");
  cmd->callback([&action, f, g] { action = [f, g] { return push(*f, *g); }; });
}

void add_login(CLI::App& app, Action& action) {
  auto f = std::make_shared<LoginFlags>();
  auto* cmd = app.add_subcommand("login", "Check credentials with a registry and save them (0600, Docker's auths format)");
  f->registry = "docker.io";
  cmd->add_option("registry", f->registry, "Registry host[:port] [docker.io]");
  cmd->add_option("-u,--username", f->username, "User name");
  cmd->add_option("-p,--password", f->password, "Password (visible to other users in ps: prefer --password-stdin)");
  cmd->add_flag("--password-stdin", f->password_stdin, "Read the password from stdin");
  add_registry_flags(cmd, *f);
  cmd->footer("Example:\n  echo \"$TOKEN\" | sandcell login -u me --password-stdin ghcr.io\n"
              "Credentials go to $SANDCELL_CONFIG_DIR/auth.json (~/.config/sandcell/auth.json); those of\n"
              "`docker login` ($DOCKER_CONFIG/config.json, ~/.docker/config.json) are read too.");
  cmd->callback([&action, f] { action = [f] { return login(*f); }; });
  auto registry = std::make_shared<std::string>();
  auto* out = app.add_subcommand("logout", "Forget the saved credentials of a registry");
  out->add_option("registry", *registry, "Registry host[:port]")->required();
  out->callback([&action, registry] {
    action = [registry] {
      std::string name = rb::normalize_registry(*registry);
      if (!rb::erase_credentials(name)) throw Error::invalid("not logged in to " + name);
      std::cerr << "removed the credentials for " << name << "\n";
      return 0;
    };
  });
}

}  // namespace

std::function<std::string(const std::string&)> image_fetcher(const GlobalOptions& g, bool quiet) {
  std::string root = g.store_root();
  return [root, quiet](const std::string& image) {
    rb::PullOptions options;
    options.progress = !quiet && isatty(STDERR_FILENO) == 1;
    rb::ImageStore store(root);
    if (!quiet) std::cerr << "pulling " << image << "\n";
    return rb::pull_image(store, image, options).local_name;
  };
}

void add_registry_commands(CLI::App& app, Action& action, const Globals& globals) {
  add_pull(app, action, globals);
  add_push(app, action, globals);
  add_login(app, action);
}

}  // namespace sandcell::cli
