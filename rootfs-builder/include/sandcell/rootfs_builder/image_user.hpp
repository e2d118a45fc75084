#pragma once
// USER of an image ("app", "1000", "app:staff", "1000:50") → numeric ids, read from the image's
// own /etc/passwd and /etc/group by sandcell. Never through NSS: that would run code (modules
// named in nsswitch.conf) from an untrusted root.
#include <sys/types.h>

#include <string>
#include <vector>

namespace sandcell::rootfs_builder {

struct ResolvedUser {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> additional_gids;  // groups that list the user as a member
  std::string home = "/";
};

// `layers_top_first`: unpacked layer directories, the topmost first (as overlay lowerdirs). A
// numeric user missing from /etc/passwd is fine (gid defaults to the uid's... to 0, as Docker);
// a user name that is not there is an error naming it.
ResolvedUser resolve_user(const std::string& user, const std::vector<std::string>& layers_top_first);

// The text of `path` (absolute, inside the image) as the layer stack shows it, or "" when no
// layer has it or a whiteout hides it. Each lookup stays inside its layer (RESOLVE_IN_ROOT).
std::string read_image_file(const std::vector<std::string>& layers_top_first, const std::string& path);

}  // namespace sandcell::rootfs_builder
