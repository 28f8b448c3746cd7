// Fan one piece of work out over a thread pool without blocking on threads that have not
// started. Safe to call from one of the pool's own threads: the caller works too, and only
// waits for items that another thread has already taken.
#pragma once

#include <cstddef>
#include <functional>
#include <utility>

#include "core/threads/thread_pool.h"

namespace spark {

// Runs fn(i) for every i in [0, n) on the calling thread plus up to width - 1 helpers queued
// on `pool`; returns when every call has returned. Helpers that start late find nothing left
// and return at once, so fn (and whatever it refers to) is never used after this returns.
// Items must not wait for one another: with a busy pool they may all run on the caller.
// An exception thrown by fn (on any thread) is rethrown here, on the calling thread, once
// every item taken has finished; items not yet taken are then skipped.
void RunParallel(ThreadPool& pool, size_t n, size_t width, const std::function<void(size_t)>& fn);
// The same on `pool` when there is one, else every item on the calling thread in turn.
void RunParallel(ThreadPool* pool, size_t n, size_t width, const std::function<void(size_t)>& fn);

// The hardware threads this machine has (at least 1): the width of CPU-bound work.
size_t Cores();

// Item w's share of [0, n) when `items` items take contiguous runs: [first, second). Workers
// that read sequentially (the packer, the verifier) take one run each.
inline std::pair<size_t, size_t> ContiguousRun(size_t n, size_t items, size_t w) {
  return {n * w / items, n * (w + 1) / items};
}

}  // namespace spark
