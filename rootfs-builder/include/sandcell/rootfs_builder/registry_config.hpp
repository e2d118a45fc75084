#pragma once
// What sandcell remembers about registries, in its config directory:
//   auth.json        credentials in Docker's config.json format ({"auths": {host: {"auth":
//                    base64("user:password")}}}), mode 0600
//   registries.json  {"insecure-registries": ["host:port", ...]}: reached over plain HTTP or
//                    with TLS unverified, as docker's daemon.json option of the same name
// Credentials are also read from docker's own file ($DOCKER_CONFIG/config.json, else
// ~/.docker/config.json), so a `docker login` done before works here too.
#include <map>
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

// Docker's X-Registry-Auth header: base64url (padded or not) of {"username", "password",
// "auth" (base64 "user:password"), "serveraddress", "identitytoken"}. nullopt for an empty
// header or one without credentials ("{}", what the CLI sends when not logged in);
// Error::invalid when it is not base64 of a JSON object of strings, or carries an identity
// token (OAuth refresh tokens are not supported).
std::optional<RegistryCredentials> parse_registry_auth_header(const std::string& header);
// Docker's X-Registry-Config header (what `docker build` sends for its FROM pulls): base64url
// of {"REGISTRY": {the fields above}, ...}. Registries normalized (normalize_registry), those
// without credentials left out; Error::invalid as above, naming the registry.
std::map<std::string, RegistryCredentials> parse_registry_config_header(const std::string& header);

}  // namespace sandcell::rootfs_builder
