// Credentials and the insecure-registries list, kept in Docker's file formats so files move
// between docker, podman (auth.json is the same shape) and sandcell.
#include "sandcell/rootfs_builder/registry_config.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "../fs_tree.hpp"
#include "../gzip_sink.hpp"
#include "base64.hpp"
#include "sandcell/rootfs_builder/registry_reference.hpp"
#include "sandcell/base/error.hpp"
#include "sandcell/base/rootless.hpp"
#include "sandcell/base/bounded_json.hpp"

namespace sandcell::rootfs_builder {
namespace {

using nlohmann::json;

std::string home_dir() {
  if (const char* home = getenv("HOME"); home != nullptr && *home != '\0') return home;
  // In rootless mode getuid() is 0 inside sandcell's user namespace: the user is the host uid.
  const passwd* pw = getpwuid(runtime::rootless_host_uid());
  return pw != nullptr ? pw->pw_dir : "/";
}

std::string auth_file() { return sandcell_config_dir() + "/auth.json"; }

std::string docker_config_file() {
  if (const char* dir = getenv("DOCKER_CONFIG"); dir != nullptr && *dir != '\0')
    return std::string(dir) + "/config.json";
  return home_dir() + "/.docker/config.json";
}

// A missing file is empty; a file that is not JSON is an error naming it.
json load_json(const std::string& path) {
  if (::access(path.c_str(), F_OK) != 0) return json::object();
  json j = parse_bounded_json_or_discarded(read_file(path));
  if (j.is_discarded() || !j.is_object()) throw Error::invalid(path + ": not a JSON object");
  return j;
}

// Docker writes Docker Hub's entry as "https://index.docker.io/v1/"; keys may carry a scheme.
std::optional<RegistryCredentials> credentials_in(const json& config, const std::string& registry) {
  auto auths = config.find("auths");
  if (auths == config.end() || !auths->is_object()) return std::nullopt;
  for (const auto& [key, entry] : auths->items()) {
    if (normalize_registry(key) != registry || !entry.is_object()) continue;
    if (entry.contains("username") && entry.contains("password"))
      return RegistryCredentials{entry.value("username", ""), entry.value("password", "")};
    auto decoded = base64_decode(entry.value("auth", ""));
    if (!decoded || decoded->find(':') == std::string::npos) continue;
    auto colon = decoded->find(':');
    return RegistryCredentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
  }
  return std::nullopt;
}

void make_private_dir(const std::string& path) {
  for (std::size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + prefix);
  }
}

// temp (0600 from the start: the password is never readable by others) + rename.
void write_private(const std::string& path, const std::string& text) {
  std::string dir = parent_dir(path);
  make_private_dir(dir);
  std::string tmp = dir + "/.auth-XXXXXX";
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw Error(errno, "create temp file in " + dir);
  try {
    write_all(fd, text.data(), text.size(), "write " + tmp);
    if (::fsync(fd) != 0) throw Error(errno, "fsync " + tmp);
    ::close(fd);
    fd = -1;
    if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error(errno, "rename " + tmp + " to " + path);
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
}

}  // namespace

std::string sandcell_config_dir() {
  if (const char* dir = getenv("SANDCELL_CONFIG_DIR"); dir != nullptr && *dir != '\0') return dir;
  if (const char* xdg = getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg != '\0')
    return std::string(xdg) + "/sandcell";
  return home_dir() + "/.config/sandcell";
}

std::optional<RegistryCredentials> find_credentials(const std::string& registry) {
  if (auto own = credentials_in(load_json(auth_file()), registry)) return own;
  return credentials_in(load_json(docker_config_file()), registry);
}

std::string save_credentials(const std::string& registry, const RegistryCredentials& credentials) {
  json config = load_json(auth_file());
  json& auths = config["auths"];
  if (!auths.is_object()) auths = json::object();
  auths[registry] = {{"auth", base64_encode(credentials.username + ":" + credentials.password)}};
  write_private(auth_file(), config.dump(2) + "\n");
  return auth_file();
}

bool erase_credentials(const std::string& registry) {
  json config = load_json(auth_file());
  auto auths = config.find("auths");
  if (auths == config.end() || !auths->is_object()) return false;
  std::size_t before = auths->size();
  for (auto it = auths->begin(); it != auths->end();)
    it = normalize_registry(it.key()) == registry ? auths->erase(it) : std::next(it);
  if (auths->size() == before) return false;
  write_private(auth_file(), config.dump(2) + "\n");
  return true;
}

std::vector<std::string> insecure_registries() {
  std::string path = sandcell_config_dir() + "/registries.json";
  json config = load_json(path);
  auto list = config.find("insecure-registries");
  if (list == config.end()) return {};
  if (!list->is_array()) throw Error::invalid(path + ": insecure-registries is not a list");
  std::vector<std::string> out;
  for (const auto& entry : *list)
    if (entry.is_string()) out.push_back(normalize_registry(entry.get<std::string>()));
  return out;
}

namespace {

// base64url (padded or not) of a JSON object, as Docker's X-Registry-* headers carry it.
json decode_registry_header(const std::string& header, const char* name) {
  std::string text = header;
  for (char& c : text) c = c == '-' ? '+' : c == '_' ? '/' : c;  // the URL alphabet
  text.resize((text.size() + 3) / 4 * 4, '=');
  std::optional<std::string> decoded = base64_decode(text);
  json value = decoded ? parse_bounded_json_or_discarded(*decoded) : json(json::value_t::discarded);
  if (!value.is_object()) throw Error::invalid(std::string("invalid ") + name + " header: not base64url of a JSON object");
  return value;
}

// One of Docker's AuthConfig objects; `where` names it in errors.
std::optional<RegistryCredentials> header_credentials(const json& auth, const std::string& where) {
  if (!auth.is_object()) throw Error::invalid("invalid " + where + ": not a JSON object");
  auto field = [&auth, &where](const char* key) -> std::string {
    auto it = auth.find(key);
    if (it == auth.end() || it->is_null()) return "";
    if (!it->is_string()) throw Error::invalid("invalid " + where + ": " + key + " is not a string");
    return it->get<std::string>();
  };
  if (!field("identitytoken").empty() || !field("registrytoken").empty())
    throw Error::invalid(where + ": identity and registry tokens are not supported by sandcell (give username and password)");
  RegistryCredentials credentials{field("username"), field("password")};
  if (std::string pair = field("auth"); credentials.username.empty() && !pair.empty()) {
    std::optional<std::string> user_password = base64_decode(pair);
    if (!user_password || user_password->find(':') == std::string::npos)
      throw Error::invalid("invalid " + where + ": auth is not base64 of user:password");
    credentials = {user_password->substr(0, user_password->find(':')), user_password->substr(user_password->find(':') + 1)};
  }
  if (credentials.username.empty() && credentials.password.empty()) return std::nullopt;
  return credentials;
}

}  // namespace

std::optional<RegistryCredentials> parse_registry_auth_header(const std::string& header) {
  if (header.empty()) return std::nullopt;
  return header_credentials(decode_registry_header(header, "X-Registry-Auth"), "X-Registry-Auth header");
}

std::map<std::string, RegistryCredentials> parse_registry_config_header(const std::string& header) {
  std::map<std::string, RegistryCredentials> out;
  if (header.empty()) return out;
  const json config = decode_registry_header(header, "X-Registry-Config");
  for (const auto& [registry, auth] : config.items()) {
    std::optional<RegistryCredentials> credentials = header_credentials(auth, "X-Registry-Config entry " + registry);
    if (credentials) out[normalize_registry(registry)] = *credentials;
  }
  return out;
}

}  // namespace sandcell::rootfs_builder
