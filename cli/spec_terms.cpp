#include "spec_terms.hpp"

#include <cctype>

namespace sandcell::cli {
namespace {

struct SpecTerm {
  std::string_view spec;  // as the engine writes it (network_setup.cpp, spec_checks.cpp, ...)
  std::string_view flag;
};

// Whole names only: "Spec::network_policy.allow" is not the start of ".allow_file".
constexpr SpecTerm kTerms[] = {
    {"Spec::network_policy.allow_cidrs", "--net-allow-cidr"},
    {"Spec::network_policy.allow_file", "--net-allow-file"},
    {"Spec::network_policy.allow", "--net allow:"},
    {"Spec::network_policy.hosts_file", "--net-hosts"},
    {"Spec::network_policy.resolv_conf", "--net-resolv-conf"},
    {"Spec::network_policy.transport", "--net-transport"},
    {"Spec::capabilities", "--cap-add"},
    {"Spec::bind_mounts", "--mount"},
    {"Spec::tmpfs_mounts", "--tmpfs"},
    {"Spec::rootfs_layers", "--rootfs DIR"},
    {"UserNamespace::Auto", "--userns=auto"},
    {"NetworkMode::Allow", "--net allow:HOSTS"},
    {"NetworkMode::Full", "--net full"},
};

bool continues_name(std::string_view rest) {
  return !rest.empty() && (std::isalnum(static_cast<unsigned char>(rest[0])) || rest[0] == '_');
}

const SpecTerm* term_at(std::string_view text) {
  for (const SpecTerm& term : kTerms)
    if (text.starts_with(term.spec) && !continues_name(text.substr(term.spec.size()))) return &term;
  return nullptr;
}

}  // namespace

std::string in_flag_terms(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (size_t at = 0; at < message.size();) {
    if (const SpecTerm* term = term_at(message.substr(at))) {
      out += term->flag;
      at += term->spec.size();
    } else {
      out += message[at++];
    }
  }
  return out;
}

}  // namespace sandcell::cli
