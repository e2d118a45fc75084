#pragma once
// WWW-Authenticate challenges (RFC 7235 §4.1) as registries send them:
//   Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a:pull"
//   Basic realm="Registry Realm"
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace sandcell::rootfs_builder {

struct AuthChallenge {
  std::string scheme;                         // lower-case: "bearer", "basic"
  std::map<std::string, std::string> params;  // lower-case names
  std::string param(const std::string& name) const;
};

std::optional<AuthChallenge> parse_auth_challenge(std::string_view header);

}  // namespace sandcell::rootfs_builder
