#pragma once
// Rootless mode: an unprivileged user runs sandcell inside a user namespace (plus a mount
// namespace) that sandcell enters first thing in main(). Inside, the user is uid 0 and the
// ordinary code paths (store, layer extraction with chown, overlay mounts) run unchanged; what
// differs asks rootless() (docs/architecture.md, "Rootless").
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace sandcell::runtime {

// True when this process is root only inside a user namespace other than the host's: sandcell
// entered one for an unprivileged user, or was started in one. Network modes, cgroups, store and
// state paths and overlay xattrs depend on it. Cached; cheap after the first call.
bool rootless();

// For main(), before any thread exists: when the effective uid is not 0, enters a new user and
// mount namespace where the caller is uid/gid 0 and, through newuidmap/newgidmap, the caller's
// /etc/subuid and /etc/subgid ranges map to 1...N; without them, only the caller's own ids. Never
// throws: if the namespace cannot be made, rootless_unavailable() says why and what fixes it.
void enter_rootless_namespace();

// Why an unprivileged sandcell has no user namespace (empty when it has one or is host root).
const std::string& rootless_unavailable();

// The host uid this process's uid 0 is (geteuid() outside a user namespace).
uid_t rootless_host_uid();

// True when the namespace maps only the user's own uid (no /etc/subuid range): images whose
// files belong to other ids cannot be unpacked, and --user other than 0 fails.
bool rootless_single_id();

// One /etc/subuid (or /etc/subgid) range: "name:start:count" or "uid:start:count".
struct SubIdRange {
  unsigned long start = 0, count = 0;
};
// The first range of `user` (by name or by numeric id) in the file's text.
std::optional<SubIdRange> find_subid_range(std::string_view file_text, std::string_view user, uid_t id);

// True when a /proc/PID/uid_map text is the host's own (identity over the whole 32-bit range).
bool is_initial_id_map(std::string_view map_text);

// For a namespace nested in this one that keeps every id as it is: each "inside outside count"
// line of map_text becomes "inside inside count".
std::string identity_map_of(std::string_view map_text);

// The message for a failed attempt to make or map a user namespace (err: its errno). It names the
// AppArmor restriction of Ubuntu >= 23.10 and its fixes when proc_sys/kernel/
// apparmor_restrict_unprivileged_userns is 1, and user.max_user_namespaces when it is 0.
std::string userns_denied_message(int err, const std::string& step, const std::string& proc_sys = "/proc/sys");

// Why the kernel refuses this process a user namespace, and what would let it have one.
struct UsernsRefusal {
  int error = 0;      // clone(CLONE_NEWUSER)'s errno
  std::string cause;  // what was found: "this process is chrooted (...)"
  std::string fix;
  // "the kernel refuses this process a user namespace (clone(CLONE_NEWUSER): Operation not
  // permitted): CAUSE. Fix: FIX"
  std::string message() const;
};

// Empty when this process may make a user namespace. Found out once per process and remembered
// (what refuses it does not change under a running sandcell): where a refusal is possible (a
// seccomp filter on this process, user.max_user_namespaces = 0, a mount namespace or root other
// than PID 1's: a container, a chroot), by a child cloned into a new user namespace that exits at
// once; an ordinary host is judged by those signs alone.
std::optional<UsernsRefusal> user_namespace_refusal();

// The cause and the fix for a refusal with errno err: the sysctls under proc_sys, whether this
// process is chrooted (the kernel refuses user namespaces to a process whose root is not its mount
// namespace's) and whether a seccomp filter confines it.
UsernsRefusal explain_userns_refusal(int err, const std::string& proc_sys = "/proc/sys");

}  // namespace sandcell::runtime
