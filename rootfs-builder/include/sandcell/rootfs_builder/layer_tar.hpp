#pragma once
// Layer tars (OCI image-spec layer.md): written from an overlay upper directory, read back
// safely into a directory the runtime stacks as an overlay lower.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sandcell/rootfs_builder/image.hpp"

namespace sandcell::rootfs_builder {

struct LayerDigests {
  std::string digest;     // sha256 of the gzip stream: the blob and manifest digest
  std::string diff_id;    // sha256 of the uncompressed tar: rootfs.diff_ids in the config
  std::int64_t size = 0;  // bytes of the gzip stream
};

struct LayerWriteOptions {
  // mtimes later than this are clamped to it (reproducible builds); defaults to
  // SOURCE_DATE_EPOCH when the caller passes source_date_epoch().
  std::optional<std::int64_t> mtime_clamp;
};

// Writes upper_dir as a gzip-compressed layer to out_path (created, truncated). Overlay
// whiteouts (char device 0/0) become ".wh.<name>", opaque directories get ".wh..wh..opq".
// Entries are sorted by path, uname/gname empty, gzip header without timestamp: the same tree
// gives the same digest.
LayerDigests write_layer_from_upper(const std::string& upper_dir, const std::string& out_path,
                                    const LayerWriteOptions& options = {});

// Recompresses a plain tar deterministically (gzip, no timestamp); diff_id is its sha256.
LayerDigests gzip_layer(const std::string& tar_path, const std::string& out_path);
// sha256 of the decompressed stream of a layer (gzip, zstd, xz, bzip2 or plain).
std::string layer_diff_id(const std::string& layer_path);
// Writes the decompressed stream of a layer to out_path.
void decompress_layer(const std::string& layer_path, const std::string& out_path);
bool is_gzip_file(const std::string& path);

enum class WhiteoutHandling {
  Overlay,  // ".wh.x" -> char device 0/0 "x"; ".wh..wh..opq" -> opaque xattr on the directory
  Keep,     // extract them as the plain files they are (outer archives, not layers)
};

struct ExtractOptions {
  WhiteoutHandling whiteouts = WhiteoutHandling::Overlay;
  // chown entries to the tar's uid/gid; nullopt: when running as root.
  std::optional<bool> preserve_owner;
  // The opaque-directory xattr; nullopt: trusted.overlay.opaque as root, user.overlay.opaque
  // otherwise (overlayfs "userxattr", unprivileged mounts).
  std::optional<std::string> opaque_xattr;
  // File data (sparse holes included) the archive may unpack to; nullopt: 200 times the
  // archive's size, at least 1 GiB. More is refused as a decompression bomb.
  std::optional<std::uint64_t> max_bytes;
  // Files and directories lose their setuid and setgid bits and file capabilities (docker cp
  // into a container: a client's tar must not leave a setuid-root file in a layer on the host).
  bool drop_setid_bits = false;
};

struct RejectedEntry {
  std::string path;  // as written in the tar
  std::string reason;
};

struct ExtractStats {
  std::uint64_t entries = 0;  // entries written
  std::uint64_t bytes = 0;    // file data written
  std::vector<RejectedEntry> rejected;
};

// Extracts a (possibly compressed) tar into dest_dir, which must exist. Hostile entries are
// rejected, never followed out of dest_dir: absolute paths and ".." components, hardlinks
// leaving the root, device nodes, anything replacing the root with a non-directory. Every path
// resolves inside dest_dir (openat2 RESOLVE_IN_ROOT), so a symlink in the tar is interpreted
// as it would be inside the container. Symlink targets are stored verbatim.
ExtractStats extract_layer(const std::string& archive_path, const std::string& dest_dir,
                           const ExtractOptions& options = {});

}  // namespace sandcell::rootfs_builder
