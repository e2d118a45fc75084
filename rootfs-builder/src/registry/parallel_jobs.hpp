#pragma once
// Runs jobs 0..count-1 on at most `width` threads, each thread with its own HTTP client. The
// first failure stops the others from starting new jobs and is rethrown once all have stopped.
#include <cstddef>
#include <functional>

#include "http_client.hpp"

namespace sandcell::rootfs_builder {

void run_parallel(std::size_t count, int width, const std::function<void(std::size_t, HttpClient&)>& job);

}  // namespace sandcell::rootfs_builder
