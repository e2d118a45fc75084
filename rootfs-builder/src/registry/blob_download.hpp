#pragma once
// GET /v2/<name>/blobs/<digest> into the store: streamed to a temp file and hashed on the way,
// resumed with Range after a cut-off transfer, then checked (size, digest, and for a layer the
// DiffID of its decompressed stream) before the rename makes it visible.
#include <chrono>
#include <cstdint>
#include <string>

#include "registry_session.hpp"
#include "sandcell/rootfs_builder/image.hpp"
#include "sandcell/rootfs_builder/store.hpp"
#include "transfer_progress.hpp"

namespace sandcell::rootfs_builder {

// How long a blob of `size` bytes may take over all its attempts: a floor, plus its size at the
// slowest rate still accepted.
std::chrono::seconds blob_time_limit(std::int64_t size);

// expected_diff_id: empty for a blob that is no layer (the config).
void download_blob(RegistrySession& session, HttpClient& client, ImageStore& store, const std::string& repository,
                   const Descriptor& blob, const std::string& expected_diff_id, TransferProgress& progress);

}  // namespace sandcell::rootfs_builder
