#pragma once
// AppArmor profiles: the templates in apparmor/profiles/, rendered, loaded into the kernel, and
// entered by the sandbox child at execve.
#include <map>
#include <string>
#include <string_view>

namespace sandcell::apparmor {

// Fills every {{key}} in template_text from values. Throws Error::invalid naming the placeholder
// when the template uses one values lacks, when values holds one the template does not use, or
// when a value is not a plain profile name (it would otherwise be able to inject rules).
std::string render_profile(std::string_view template_text,
                           const std::map<std::string, std::string>& values);

// The text of profiles/<name> ("sandcell-default", "sandcell-binary"): from the source tree when
// built from one, else from /usr/share/sandcell/apparmor. Throws Error(ENOENT) when neither has it.
std::string load_profile_template(const std::string& name);

// The profile every sandbox of a root sandcell enters where the host has AppArmor: its name, and
// the sandcell-default template rendered, as the runtime loads it.
constexpr const char* kDefaultProfile = "sandcell-default";
std::string default_profile();

// The sandcell-binary profile for the executables in bin_dir (an absolute path): lets sandcell,
// sandcell-net, sandcell-images and sandcell-serve create user namespaces where AppArmor
// restricts them (rootless mode).
std::string binary_profile(const std::string& bin_dir);

// The profile without its `userns` rules, for AppArmor 3 parsers, which reject that AppArmor 4.0
// syntax; hosts with those parsers do not restrict user namespaces, so nothing is lost.
std::string strip_userns_rule(std::string_view profile);

// Loads (or replaces) a rendered profile with `apparmor_parser -r`. Throws Error(ENOSYS) where
// the kernel has no AppArmor, Error(ENOENT) without apparmor_parser, Error otherwise.
void load_profile(const std::string& text);

// Asks the kernel to switch to `profile` at the next execve. For the sandbox child between
// clone and execve: it neither allocates nor throws. Returns 0, or -1 with errno set.
// `thread_self`: the caller's /proc/thread-self directory on a procfs it checked (the runtime's
// proc_handle.hpp); the attr file is opened beneath it, never by a /proc path.
int change_onexec(const char* profile, int thread_self) noexcept;

}  // namespace sandcell::apparmor
