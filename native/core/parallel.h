// Fan one piece of work out over a thread pool without blocking on threads that have not
// started. Safe to call from one of the pool's own threads: the caller works too, and only
// waits for items that another thread has already taken.
#pragma once

#include <cstddef>
#include <functional>

#include "core/thread_pool.h"

namespace spark {

// Runs fn(i) for every i in [0, n) on the calling thread plus up to width - 1 helpers queued
// on `pool`; returns when every call has returned. Helpers that start late find nothing left
// and return at once, so fn (and whatever it refers to) is never used after this returns.
void RunParallel(ThreadPool& pool, size_t n, size_t width, const std::function<void(size_t)>& fn);

}  // namespace spark
