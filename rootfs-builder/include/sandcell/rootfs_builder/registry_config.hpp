#pragma once
// What sandcell remembers about registries, in its config directory:
//   auth.json        credentials in Docker's config.json format ({"auths": {host: {"auth":
//                    base64("user:password")}}}), mode 0600
//   registries.json  {"insecure-registries": ["host:port", ...]}: reached over plain HTTP or
//                    with TLS unverified, as docker's daemon.json option of the same name
// Credentials are also read from docker's own file ($DOCKER_CONFIG/config.json, else
// ~/.docker/config.json), so a `docker login` done before works here too.
#include <optional>
#include <string>
#include <vector>

namespace sandcell::rootfs_builder {

struct RegistryCredentials {
  std::string username;
  std::string password;
};

// $SANDCELL_CONFIG_DIR, else $XDG_CONFIG_HOME/sandcell, else ~/.config/sandcell.
std::string sandcell_config_dir();

// Credentials for a registry ("docker.io", "localhost:5000"): sandcell's file first, then docker's.
std::optional<RegistryCredentials> find_credentials(const std::string& registry);
// Writes them into sandcell's auth.json (atomically, 0600). Returns the file's path.
std::string save_credentials(const std::string& registry, const RegistryCredentials& credentials);
// Removes them from sandcell's auth.json; false when there were none.
bool erase_credentials(const std::string& registry);

std::vector<std::string> insecure_registries();

}  // namespace sandcell::rootfs_builder
