// Runs fn(worker) on `threads` fresh threads and joins them. The packer and the verifier
// use it for I/O workers that each own a large buffer for their whole life, which the shared
// ThreadPool (one task per index, no worker identity) does not give.
#pragma once

#include <cstddef>
#include <functional>
#include <thread>
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

}  // namespace spark
