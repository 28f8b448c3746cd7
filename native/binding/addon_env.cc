#include "binding/addon_env.h"

#include <algorithm>
#include <chrono>

#include "binding/errors.h"

namespace spark {

namespace {

// How long an exiting environment waits for its threads to finish what they are doing.
constexpr std::chrono::milliseconds kShutdownGrace{1000};

template <class T>
void Prune(std::vector<std::weak_ptr<T>>* list) {
  list->erase(std::remove_if(list->begin(), list->end(), [](const std::weak_ptr<T>& w) { return w.expired(); }),
              list->end());
}

}  // namespace

void AddonEnv::Init(Napi::Env env) {
  auto* self = new AddonEnv();
  self->batons_ = BatonQueue::Create(env);
  env.SetInstanceData<AddonEnv>(self);  // deleted by Node after every cleanup hook has run
  // Added after the queue's thread-safe function, so it runs before Node closes that function
  // (cleanup hooks run last-added first).
  napi_add_env_cleanup_hook(env, &AddonEnv::Shutdown, self);
}

AddonEnv& AddonEnv::Of(Napi::Env env) { return *env.GetInstanceData<AddonEnv>(); }

AddonEnv::~AddonEnv() = default;

void AddonEnv::Shutdown(void* arg) {
  auto* self = static_cast<AddonEnv*>(arg);
  self->batons_->Shutdown();
  for (auto& w : self->stores_) {
    if (auto store = w.lock()) store->Close();
  }
  const auto deadline = std::chrono::steady_clock::now() + kShutdownGrace;
  auto left = [&] {
    auto d = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return std::max(d, std::chrono::milliseconds(0));
  };
  self->jobs_->Abandon(left());
  for (auto& w : self->store_pools_) {
    if (auto pool = w.lock()) pool->Abandon(left());
  }
}

Status AddonEnv::ReserveJobThreads(size_t width, std::shared_ptr<ThreadPool>* pool) {
  if (width == 0) width = 1;
  Status st = jobs_->Grow(jobs_reserved_ + width);
  if (!st.ok()) return st;
  jobs_reserved_ += width;
  *pool = jobs_;
  return Status::Ok();
}

void AddonEnv::ReleaseJobThreads(size_t width) { jobs_reserved_ -= std::min(jobs_reserved_, width == 0 ? 1 : width); }

Status AddonEnv::NewStorePool(size_t threads, size_t fail_start_at, std::shared_ptr<ThreadPool>* out) {
  auto pool = std::make_shared<ThreadPool>();
  pool->FailThreadStartForTesting(fail_start_at);
  Status st = pool->Grow(threads);
  if (!st.ok()) return st;  // the pool's destructor joins the threads that did start
  Prune(&store_pools_);
  store_pools_.push_back(pool);
  *out = std::move(pool);
  return Status::Ok();
}

void AddonEnv::TrackStore(const std::shared_ptr<RowStore>& store) {
  Prune(&stores_);
  stores_.push_back(store);
}

JobBaton::JobBaton(Napi::Env env, size_t width) : Baton(env), env_(&AddonEnv::Of(env)), width_(width) {
  Status st = env_->ReserveJobThreads(width_, &pool_);
  if (!st.ok()) throw StatusToError(env, st);
}

void JobBaton::ReleaseJs() {
  env_->ReleaseJobThreads(width_);
  env_ = nullptr;
}

Napi::Promise ScheduleJob(Napi::Env env, std::unique_ptr<JobBaton> baton) {
  ThreadPool& pool = *baton->pool_;
  return Schedule(env, pool, std::move(baton));
}

}  // namespace spark
