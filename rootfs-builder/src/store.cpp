// ImageStore: blobs, images and tags of the OCI layout. Unpacked layers and prune are in
// store_layers.cpp.
#include "sandcell/rootfs_builder/store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <array>

#include "fs_tree.hpp"
#include "gzip_sink.hpp"
#include "sandcell/rootfs_builder/digest.hpp"
#include "store_index.hpp"
#include "unique_fd.hpp"

namespace sandcell::rootfs_builder {
namespace {

constexpr std::string_view kOciLayout = R"({"imageLayoutVersion":"1.0.0"})";

// mkdir -p. The whole path first: the store exists in all but its first use, and a mkdir of
// each prefix of a deep root cost ~20 system calls at every command that opens the store.
void make_dirs(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST) return;
  if (errno != ENOENT) throw Error(errno, "mkdir " + path);
  const std::size_t slash = path.find_last_not_of('/', path.rfind('/'));
  if (path.rfind('/') == std::string::npos || slash == std::string::npos)
    throw Error(ENOENT, "mkdir " + path);
  make_dirs(path.substr(0, slash + 1));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) throw Error(errno, "mkdir " + path);
}

// Copies src into a new temp file in tmp_dir, hashing it. Returns {temp path, digest}.
std::pair<std::string, std::string> copy_to_temp(const std::string& src,
                                                 const std::string& tmp_dir) {
  UniqueFd in(::open(src.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in) throw Error(errno, "open " + src);
  std::string tmp = tmp_dir + "/blob-XXXXXX";
  UniqueFd out(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!out) throw Error(errno, "create temp file in " + tmp_dir);
  Sha256 sha;
  std::array<char, 1 << 16> buf{};
  try {
    for (;;) {
      ssize_t n = ::read(in.get(), buf.data(), buf.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw Error(errno, "read " + src);
      if (n == 0) break;
      sha.update(buf.data(), static_cast<std::size_t>(n));
      write_all(out.get(), buf.data(), static_cast<std::size_t>(n), "write " + tmp);
    }
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  return {tmp, sha.finish()};
}

// Unpacked layers and build scratch hold what images say: setuid-root programs, file
// capabilities, world-writable directories. Reachable from the host, a local user could run
// them as root or write into every container's "/". Only the store's owner may enter.
void keep_private(const std::string& dir) {
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) throw Error(errno, "stat " + dir);
  if (!S_ISDIR(st.st_mode)) throw Error(ENOTDIR, "image store " + dir);
  if ((st.st_mode & 07777) != 0700 && ::chmod(dir.c_str(), 0700) != 0) throw Error(errno, "chmod 0700 " + dir);
}

}  // namespace

ImageStore::ImageStore(std::string root) : root_(std::move(root)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  bool fresh = ::access(root_.c_str(), F_OK) != 0;
  make_dirs(root_ + "/blobs/sha256");
  make_dirs(tmp_dir());
  make_dirs(root_ + "/layers");
  if (fresh) keep_private(root_);
  keep_private(root_ + "/layers");
  keep_private(tmp_dir());
  if (::access((root_ + "/oci-layout").c_str(), F_OK) != 0)
    write_file_atomic(tmp_dir(), root_ + "/oci-layout", kOciLayout);
  if (::access((root_ + "/index.json").c_str(), F_OK) != 0) {
    FileLock lock(root_ + "/index.json.lock", true);
    if (::access((root_ + "/index.json").c_str(), F_OK) != 0)
      write_file_atomic(tmp_dir(), root_ + "/index.json", OciIndex{}.to_json());
  }
}

std::string ImageStore::blob_path(std::string_view digest) const {
  return root_ + "/blobs/sha256/" + digest_hex(digest);
}

bool ImageStore::has_blob(std::string_view digest) const {
  return is_valid_digest(digest) && ::access(blob_path(digest).c_str(), F_OK) == 0;
}

std::string ImageStore::put_blob_file(const std::string& path, std::string_view expected) {
  std::string tmp = path;
  std::string digest;
  bool ours = path.starts_with(tmp_dir() + "/");
  if (ours) {
    digest = sha256_file_digest(path);
  } else {
    std::tie(tmp, digest) = copy_to_temp(path, tmp_dir());
  }
  if (!expected.empty() && digest != expected) {
    if (!ours) ::unlink(tmp.c_str());
    throw Error::invalid("digest mismatch for " + path + ": expected " + std::string(expected) +
                         ", got " + digest);
  }
  put_hashed_blob_file(tmp, digest);  // same content under the same name: replacing is fine
  return digest;
}

void ImageStore::put_hashed_blob_file(const std::string& tmp_path, std::string_view digest) {
  if (!tmp_path.starts_with(tmp_dir() + "/")) throw Error::invalid(tmp_path + " is not in " + tmp_dir());
  if (::chmod(tmp_path.c_str(), 0644) != 0) throw Error(errno, "chmod " + tmp_path);
  fsync_path(tmp_path);
  rename_durably(tmp_path, blob_path(digest));
}

void ImageStore::require_free(uint64_t bytes, const std::string& what) const {
  struct statvfs st {};
  if (::statvfs(root_.c_str(), &st) != 0) throw Error(errno, "statvfs " + root_);
  const uint64_t size = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  const uint64_t free = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  const uint64_t kept = std::min<uint64_t>(size / 20, 64ull << 20);
  if (free >= kept && free - kept >= bytes) return;
  throw Error(ENOSPC, what + " needs " + std::to_string(bytes) + " bytes; the image store " +
                          root_ + " has " + std::to_string(free) + " free, of which it keeps " +
                          std::to_string(kept));
}

std::string ImageStore::put_blob(std::string_view data, std::string_view expected) {
  std::string digest = sha256_digest(data);
  if (!expected.empty() && digest != expected)
    throw Error::invalid("digest mismatch: expected " + std::string(expected) + ", got " + digest);
  if (!has_blob(digest)) write_file_atomic(tmp_dir(), blob_path(digest), data);
  return digest;
}

std::string ImageStore::read_blob(std::string_view digest) const {
  std::string data = read_file(blob_path(digest));
  if (sha256_digest(data) != digest)
    throw Error::invalid("blob " + std::string(digest) + " is corrupt");
  return data;
}

std::string ImageStore::put_image(const std::string& name, const ImageConfig& config,
                                  const std::vector<Descriptor>& layers) {
  return put_image_json(name, config_to_json(config), layers);
}

std::string ImageStore::put_image_json(const std::string& name, std::string_view config_json,
                                       const std::vector<Descriptor>& layers) {
  Lease hold = lease();
  Manifest manifest;
  manifest.config = {.media_type = std::string(media_type::kOciConfig),
                     .digest = put_blob(config_json),
                     .size = static_cast<std::int64_t>(config_json.size()),
                     .annotations = {}};
  for (const Descriptor& layer : layers) {
    if (!has_blob(layer.digest))
      throw Error::invalid("layer blob " + layer.digest + " is not in the store");
    manifest.layers.push_back(layer);
  }
  std::string manifest_digest = put_blob(manifest_to_json(manifest));
  if (!name.empty()) set_tag(name, manifest_digest);
  return manifest_digest;
}

void ImageStore::set_tag(const std::string& name, const std::string& manifest_digest) {
  std::string ref = parse_reference(name).str();
  if (ref.find('@') != std::string::npos)
    throw Error::invalid("cannot tag with a digest reference: " + name);
  Manifest manifest = manifest_from_json(read_blob(manifest_digest));
  struct stat st {};
  if (::stat(blob_path(manifest_digest).c_str(), &st) != 0)
    throw Error(errno, "stat " + manifest_digest);
  FileLock lock(root_ + "/index.json.lock", true);
  OciIndex index = OciIndex::load(root_ + "/index.json");
  index.set(ref, {.media_type = manifest.media_type,
                  .digest = manifest_digest,
                  .size = st.st_size,
                  .annotations = {}});
  write_file_atomic(tmp_dir(), root_ + "/index.json", index.to_json());
}

ImageRecord ImageStore::resolve(const std::string& name) const {
  OciIndex index = OciIndex::load(root_ + "/index.json");
  ImageRecord record;
  auto load = [&](const std::string& digest) {
    record.manifest_digest = digest;
    record.manifest_json = read_blob(digest);
    record.manifest = manifest_from_json(record.manifest_json);
    record.config_json = read_blob(record.manifest.config.digest);
    record.config = config_from_json(record.config_json);
    return record;
  };
  bool hex = name.size() >= 12 && name.size() <= 64 &&
             name.find_first_not_of("0123456789abcdef") == std::string::npos;
  if (is_valid_digest(name) || hex) {
    for (const Descriptor& d : index.manifests) {
      if (d.digest == name) return load(d.digest);
      std::string config_digest = manifest_from_json(read_blob(d.digest)).config.digest;
      if (config_digest == name || (hex && config_digest.compare(7, name.size(), name) == 0)) {
        record.name = ref_name(d);
        return load(d.digest);
      }
    }
    throw Error::not_found("no such image: " + name);
  }
  ImageReference ref = parse_reference(name);
  if (!ref.digest.empty()) {
    if (!has_blob(ref.digest)) throw Error::not_found("no such image: " + name);
    return load(ref.digest);
  }
  const Descriptor* d = index.find(ref.str());
  if (d == nullptr) throw Error::not_found("no such image: " + name);
  record.name = ref.str();
  return load(d->digest);
}

void ImageStore::tag(const std::string& source, const std::string& target) {
  set_tag(target, resolve(source).manifest_digest);
}

void ImageStore::remove(const std::string& name) {
  std::string ref = parse_reference(name).str();
  FileLock lock(root_ + "/index.json.lock", true);
  OciIndex index = OciIndex::load(root_ + "/index.json");
  if (!index.erase(ref)) throw Error::invalid("no such image: " + name);
  write_file_atomic(tmp_dir(), root_ + "/index.json", index.to_json());
}

std::vector<ImageSummary> ImageStore::list() const {
  std::vector<ImageSummary> out;
  for (const Descriptor& d : OciIndex::load(root_ + "/index.json").manifests) {
    std::string ref = ref_name(d);
    if (ref.empty()) continue;
    Manifest m = manifest_from_json(read_blob(d.digest));
    ImageSummary s{.name = ref,
                   .manifest_digest = d.digest,
                   .config_digest = m.config.digest,
                   .size = m.config.size,
                   .created = config_from_json(read_blob(m.config.digest)).created};
    for (const Descriptor& l : m.layers) s.size += l.size;
    out.push_back(std::move(s));
  }
  return out;
}

ImageStore::Lease::~Lease() {
  if (fd_ >= 0) ::close(fd_);
}

ImageStore::Lease ImageStore::lease() const {
  return Lease(FileLock(root_ + "/gc.lock", false).release());
}

}  // namespace sandcell::rootfs_builder
