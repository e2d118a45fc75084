#include "parallel_jobs.hpp"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace sandcell::rootfs_builder {

void run_parallel(std::size_t count, int width, const std::function<void(std::size_t, HttpClient&)>& job) {
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr first_error;
  std::mutex error_mutex;
  auto worker = [&] {
    HttpClient client;
    for (std::size_t i = next++; i < count && !failed; i = next++) {
      try {
        job(i, client);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!first_error) first_error = std::current_exception();
        failed = true;
      }
    }
  };
  std::vector<std::jthread> threads;
  auto n = std::min<std::size_t>(count, static_cast<std::size_t>(std::max(width, 1)));
  for (std::size_t t = 0; t < n; ++t) threads.emplace_back(worker);
  threads.clear();  // joins
  if (first_error) std::rethrow_exception(first_error);
}

}  // namespace sandcell::rootfs_builder
