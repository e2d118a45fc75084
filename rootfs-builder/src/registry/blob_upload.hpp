#pragma once
// One blob from the store to a registry repository (distribution spec "Pushing blobs"):
// HEAD first; a cross-repository mount when there is a source repository; else an upload
// session, finished by one PUT (monolithic) or PATCH chunks then a closing PUT (chunked).
#include <cstdint>
#include <functional>
#include <string>

#include "registry_session.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "transfer_progress.hpp"

namespace sandcell::rootfs_builder {

enum class BlobPushOutcome { Present, Mounted, Uploaded };

struct BlobUpload {
  RegistrySession& session;
  ImageStore& store;
  std::string repository;
  std::string mount_from;  // empty: no mount attempt
  std::int64_t chunk_size;
  TransferProgress& progress;
  // Told once the registry has neither the blob nor a mount of it, before the first byte goes.
  std::function<void()> on_upload;

  BlobPushOutcome push(HttpClient& client, const Descriptor& blob) const;

 private:
  std::string start_upload(HttpClient& client, const Descriptor& blob, bool& mounted) const;
  std::string send_chunks(HttpClient& client, std::string location, const Descriptor& blob) const;
};

}  // namespace sandcell::rootfs_builder
