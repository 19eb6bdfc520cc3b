// Independent compilations on several threads: each index is a whole compilation of its own
// (its own sources, diagnostics and LLVM context), so they share nothing but the index counter.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace tilec::driver {

/// Runs work(0) .. work(n - 1), each once, on up to `jobs` threads (0: one per hardware thread),
/// the calling thread among them. `work` must not throw.
inline void parallelFor(size_t n, int jobs, const std::function<void(size_t)> &work) {
  unsigned threads =
      jobs > 0 ? static_cast<unsigned>(jobs) : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, n));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < n; i = next++)
      work(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread &t : pool)
    t.join();
}

} // namespace tilec::driver
