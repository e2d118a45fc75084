// The engine's errors name the Spec's fields and values ("Spec::capabilities NET_ADMIN is
// refused...", "needs NetworkMode::Full", "UserNamespace::Auto"), since the engine has callers without flags (the
// Docker API, sandcell-oci, the code runner's requests). The CLI says them in its own flags.
#pragma once

#include <string>
#include <string_view>

namespace sandcell::cli {

// `message` with each Spec field or value the CLI sets from a flag replaced by that flag:
// "Spec::network_policy.allow_cidrs 10.0.0.1/8: ..." -> "--net-allow-cidr 10.0.0.1/8: ...".
std::string in_flag_terms(std::string_view message);

}  // namespace sandcell::cli
