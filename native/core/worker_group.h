// Runs fn(worker) on `threads` fresh threads and joins them. The packer and the verifier
// use it for I/O workers that each own a large buffer for their whole life, which the shared
// ThreadPool (one task per index, no worker identity) does not give.
#pragma once

#include <cstddef>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

namespace spark {

inline void RunWorkers(size_t threads, const std::function<void(size_t worker)>& fn) {
  if (threads <= 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (size_t w = 0; w < threads; ++w) pool.emplace_back([&fn, w] { fn(w); });
  for (auto& t : pool) t.join();
}

// Worker w's share of [0, n) when `threads` workers take contiguous runs: [first, second).
inline std::pair<size_t, size_t> ContiguousRun(size_t n, size_t threads, size_t w) {
  return {n * w / threads, n * (w + 1) / threads};
}

}  // namespace spark
