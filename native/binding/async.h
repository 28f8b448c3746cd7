// Batons: the one way the binding runs work off the JS thread.
//
// The JS thread validates arguments and copies them into a Baton (plain C++ data plus
// references that keep JS objects alive). Execute() runs on one of the addon's own thread
// pools, never libuv's, and must not touch JS memory: work that produces bytes writes them
// into memory the baton owns, and OnOk() hands them to JS on the JS thread. The result comes
// back through the environment's BatonQueue and settles exactly one Promise.
//
// Lifetime: a baton is destroyed on the JS thread after it settled, except when the Node
// environment shuts down while it runs. Then the environment drops its JS side (ReleaseJs, on
// the JS thread) and the pool thread destroys the rest when Execute() returns, so a baton's
// destructor must only free plain C++ state.
#pragma once

#include <napi.h>

#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "binding/errors.h"
#include "core/base/status.h"
#include "core/threads/thread_pool.h"

namespace spark {

class Baton {
 public:
  explicit Baton(Napi::Env env) : deferred_(Napi::Promise::Deferred::New(env)) {}
  virtual ~Baton();

  // Pool thread. Sets status_ on failure; must not touch any napi value. An exception that
  // escapes becomes an E_INTERNAL rejection, never a terminated process.
  virtual void Execute() = 0;
  // JS thread, after a successful Execute(): the value the Promise resolves with.
  virtual Napi::Value OnOk(Napi::Env env) { return env.Undefined(); }
  // JS thread, after a failed Execute(): the Error the Promise rejects with.
  virtual Napi::Value OnError(Napi::Env env) { return StatusToError(env, status_).Value(); }

  // Keeps a JS value alive until the batch settles.
  void Keep(Napi::Value value) { kept_.emplace_back(Napi::Persistent(value)); }

  Napi::Promise Promise() const { return deferred_.Promise(); }

  Status status_;

 protected:
  // JS thread, once, before destruction: undo what the baton did to JS-side objects (counters
  // on a wrapper...). The kept references are dropped right after.
  virtual void ReleaseJs() {}

 private:
  friend class BatonQueue;
  void DropJs();

  Napi::Promise::Deferred deferred_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
  bool js_dropped_ = false;
};

// One per Node environment (see binding/addon_env.h): carries finished batons back to the JS
// thread through one thread-safe function, and knows which batons are still running so that
// a shutting-down environment can let go of them without waiting.
class BatonQueue : public std::enable_shared_from_this<BatonQueue> {
 public:
  static std::shared_ptr<BatonQueue> Create(Napi::Env env);

  // JS thread: runs baton->Execute() on `pool` and returns the Promise it will settle.
  Napi::Promise Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton);

  // JS thread, environment cleanup: batons still running are let go (their JS side dropped
  // now; their pool threads free the rest), and nothing is handed to JS any more.
  void Shutdown();

 private:
  friend struct BatonJob;
  BatonQueue() = default;
  // Any thread: a baton's work is over (or will never start); hand it to the JS thread.
  void Finish(Baton* baton);
  static void Settle(napi_env env, napi_value js_cb, void* context, void* data);

  napi_threadsafe_function tsfn_ = nullptr;
  size_t unsettled_ = 0;  // JS thread only: while > 0 the event loop is kept alive
  std::mutex mu_;
  bool closing_ = false;                // guarded by mu_
  std::unordered_set<Baton*> running_;  // guarded by mu_: scheduled, not yet handed over
};

// Schedules `baton` on `pool` through the environment's BatonQueue.
Napi::Promise Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton);

}  // namespace spark
