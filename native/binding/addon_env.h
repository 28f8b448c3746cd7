// What the addon keeps per Node environment (the main thread, and each worker thread that
// loads it), as Node-API instance data: the baton queue, the job pool (pack, verify, header
// reads) and the pools of the row stores and mmap gathers. Nothing is process-global, so
// worker threads never share pools and an environment's teardown stops exactly its own work.
//
// Teardown (an environment cleanup hook, run before Node tears down the thread-safe
// function): running batons are let go, row stores closed (their batches stop at the next
// read), pools cancelled (a pack stops at its next chunk) and abandoned: threads that finish
// within a short grace period are joined, the rest are left to finish on their own, so a read
// stuck on a dead NFS server cannot hang a process or worker exit.
#pragma once

#include <napi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "binding/async.h"
#include "core/base/status.h"
#include "core/row_store/row_store.h"
#include "core/threads/thread_pool.h"

namespace spark {

class AddonEnv {
 public:
  static void Init(Napi::Env env);
  static AddonEnv& Of(Napi::Env env);
  AddonEnv(const AddonEnv&) = delete;
  AddonEnv& operator=(const AddonEnv&) = delete;
  ~AddonEnv();

  BatonQueue& batons() { return *batons_; }

  // JS thread. The job pool grows so that every job in flight keeps `width` threads (its
  // Execute plus RunParallel helpers): a long pack never starves a header read. Threads are
  // kept once started. On E_THREAD_START nothing is reserved.
  Status ReserveJobThreads(size_t width, std::shared_ptr<ThreadPool>* pool);
  void ReleaseJobThreads(size_t width);

  // JS thread. A pool of `threads` for one row reader (a RowStore, an MmapGather), stopped with
  // this environment. When a
  // thread will not start the others are stopped too and the error names it (E_THREAD_START).
  // fail_start_at: tests only (ThreadPool::FailThreadStartForTesting).
  Status NewStorePool(size_t threads, size_t fail_start_at, std::shared_ptr<ThreadPool>* out);
  // JS thread. A store to close when this environment goes away.
  void TrackStore(const std::shared_ptr<RowStore>& store);

 private:
  AddonEnv() = default;
  static void Shutdown(void* self);

  std::shared_ptr<BatonQueue> batons_;
  std::shared_ptr<ThreadPool> jobs_ = std::make_shared<ThreadPool>();
  size_t jobs_reserved_ = 0;
  std::vector<std::weak_ptr<ThreadPool>> store_pools_;
  std::vector<std::weak_ptr<RowStore>> stores_;
};

// A baton that runs on the job pool with `width` threads kept for it while it is in flight.
class JobBaton : public Baton {
 public:
  // Throws the E_THREAD_START error (a JS exception) when the pool cannot grow.
  JobBaton(Napi::Env env, size_t width);

 protected:
  ThreadPool& pool() { return *pool_; }
  void ReleaseJs() override;

 private:
  friend Napi::Promise ScheduleJob(Napi::Env env, std::unique_ptr<JobBaton> baton);
  AddonEnv* env_;
  size_t width_;
  std::shared_ptr<ThreadPool> pool_;
};

Napi::Promise ScheduleJob(Napi::Env env, std::unique_ptr<JobBaton> baton);

}  // namespace spark
