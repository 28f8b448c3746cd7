#include "binding/async.h"

#include <exception>
#include <new>

#include "binding/addon_env.h"

namespace spark {

Baton::~Baton() {
  // DropJs() ran on the JS thread before we got here. Should a reference remain anyway, leak
  // it rather than call into Node-API from what may be a pool thread.
  for (auto& ref : kept_) ref.SuppressDestruct();
}

void Baton::DropJs() {
  if (js_dropped_) return;
  js_dropped_ = true;
  ReleaseJs();
  kept_.clear();
}

// A baton's place in a pool's queue. Run() executes it; a job destroyed without running (its
// pool was abandoned at shutdown) still hands the baton over, so it is never lost.
struct BatonJob {
  std::shared_ptr<BatonQueue> queue;
  Baton* baton;

  BatonJob(std::shared_ptr<BatonQueue> q, Baton* b) : queue(std::move(q)), baton(b) {}
  BatonJob(const BatonJob&) = delete;
  BatonJob& operator=(const BatonJob&) = delete;
  ~BatonJob() {
    if (baton == nullptr) return;
    baton->status_ = Status::Error(Code::E_INTERNAL, "the work was dropped before it started (shutting down)");
    queue->Finish(baton);
  }

  void Run() {
    Baton* b = baton;
    baton = nullptr;
    try {
      b->Execute();
    } catch (const std::bad_alloc&) {
      b->status_ = Status::Error(Code::E_INTERNAL, "out of memory");
    } catch (const std::exception& e) {
      b->status_ =
          Status::Error(Code::E_INTERNAL, std::string("internal error: ") + e.what() + " (a bug; please report it)");
    } catch (...) {
      b->status_ = Status::Error(Code::E_INTERNAL, "internal error: an unknown exception (a bug; please report it)");
    }
    queue->Finish(b);
  }
};

std::shared_ptr<BatonQueue> BatonQueue::Create(Napi::Env env) {
  std::shared_ptr<BatonQueue> q(new BatonQueue());
  napi_value name = Napi::String::New(env, "spark-baton");
  // Unbounded queue (max 0) and one owner (this object): calls never block, and only the
  // environment's teardown ends it. Unreferenced until a baton is in flight.
  napi_status st = napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr, q.get(),
                                                   &BatonQueue::Settle, &q->tsfn_);
  if (st != napi_ok) throw Napi::Error::New(env, "could not create the addon's thread-safe function");
  napi_unref_threadsafe_function(env, q->tsfn_);
  return q;
}

Napi::Promise BatonQueue::Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton) {
  Napi::Promise promise = baton->Promise();
  Baton* raw = baton.release();
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.insert(raw);
  }
  if (unsettled_++ == 0) napi_ref_threadsafe_function(env, tsfn_);
  auto job = std::make_shared<BatonJob>(shared_from_this(), raw);
  pool.Submit([job] { job->Run(); });
  return promise;
}

void BatonQueue::Finish(Baton* baton) {
  std::unique_ptr<Baton> orphan;
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_.erase(baton);
    if (closing_) {
      orphan.reset(baton);  // its JS side was dropped by Shutdown(); free the rest below
    } else if (napi_call_threadsafe_function(tsfn_, baton, napi_tsfn_nonblocking) != napi_ok) {
      // Unreachable while not closing: the queue is unbounded and only Shutdown() ends it.
      // Freeing the baton here would delete napi references off the JS thread: leak it.
    }
  }
}

void BatonQueue::Settle(napi_env raw_env, napi_value /*js_cb*/, void* context, void* data) {
  std::unique_ptr<Baton> baton(static_cast<Baton*>(data));
  if (raw_env == nullptr) {
    baton->DropJs();  // the environment is going away: nothing left to settle
    return;
  }
  auto* queue = static_cast<BatonQueue*>(context);
  Napi::Env env(raw_env);
  Napi::HandleScope scope(env);
  if (--queue->unsettled_ == 0) napi_unref_threadsafe_function(raw_env, queue->tsfn_);
  try {
    if (baton->status_.ok()) {
      baton->deferred_.Resolve(baton->OnOk(env));
    } else {
      baton->deferred_.Reject(baton->OnError(env));
    }
  } catch (const Napi::Error& e) {
    baton->deferred_.Reject(e.Value());
  } catch (const std::exception& e) {
    baton->deferred_.Reject(
        StatusToError(env, Status::Error(Code::E_INTERNAL, std::string("internal error: ") + e.what())).Value());
  }
  baton->DropJs();
}

void BatonQueue::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  closing_ = true;
  // Under the lock: a pool thread finishing one of these cannot free it before its JS side is gone.
  for (Baton* b : running_) b->DropJs();
}

Napi::Promise Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton) {
  return AddonEnv::Of(env).batons().Schedule(env, pool, std::move(baton));
}

}  // namespace spark
