// `sandcell setup apparmor`: lets the sandcell binaries create user namespaces on hosts where
// AppArmor restricts them (Ubuntu >= 23.10), which rootless mode needs.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.hpp"
#include "sandcell/apparmor/profile.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"

namespace sandcell::cli {
namespace {

struct SetupOptions {
  bool print = false;
  std::string profile_dir = "/etc/apparmor.d";
};

std::string own_bin_dir() {
  const std::string self = own_executable();
  if (self.empty()) throw Error(errno, "readlink /proc/self/exe");
  return std::filesystem::path(self).parent_path().string();
}

void write_profile(const std::string& path, const std::string& text) {
  const std::string temp = path + ".sandcell-new";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << text;
    if (!out.flush()) throw Error(errno, "write " + temp);
  }
  check(chmod(temp.c_str(), 0644), "chmod " + temp);
  check(rename(temp.c_str(), path.c_str()), "rename " + temp + " to " + path);
}

// AppArmor 3 parsers reject `userns,`; those hosts do not restrict user namespaces either.
void load_into_kernel(const std::string& text) {
  try {
    apparmor::load_profile(text);
  } catch (const Error& e) {
    if (e.code().value() == ENOSYS || e.code().value() == ENOENT) throw;
    apparmor::load_profile(apparmor::strip_userns_rule(text));
  }
}

int setup_apparmor(const SetupOptions& options) {
  const std::string text = apparmor::binary_profile(own_bin_dir());
  if (options.print) {
    std::cout << text;
    return 0;
  }
  if (runtime::rootless())
    throw Error::invalid("setup apparmor writes to " + options.profile_dir + " and loads a profile: run it as root "
                         "(sudo sandcell setup apparmor), or --print the profile");
  const std::string path = options.profile_dir + "/sandcell";
  write_profile(path, text);
  std::cout << "wrote " << path << "\n";
  try {
    load_into_kernel(text);
    std::cout << "loaded profile sandcell: sandcell may now create user namespaces (rootless mode)\n";
  } catch (const Error& e) {
    if (e.code().value() != ENOSYS && e.code().value() != ENOENT) throw;
    std::cout << "not loaded: " << e.what() << "\n"
              << "(without AppArmor in the kernel nothing restricts user namespaces through it)\n";
  }
  return 0;
}

}  // namespace

void add_setup_command(CLI::App& app, Action& action) {
  auto* setup = app.add_subcommand("setup", "Host setup that needs root once");
  setup->require_subcommand(1);
  auto options = std::make_shared<SetupOptions>();
  auto* apparmor = setup->add_subcommand(
      "apparmor", "Install and load the AppArmor profile that lets the sandcell binaries create user "
                  "namespaces (Ubuntu >= 23.10 restricts them; rootless mode needs them)");
  apparmor->add_flag("--print", options->print, "Print the profile instead of installing it");
  apparmor->add_option("--profile-dir", options->profile_dir, "Where to write it")->capture_default_str();
  apparmor->callback([&action, options] { action = [options] { return setup_apparmor(*options); }; });
}

}  // namespace sandcell::cli
