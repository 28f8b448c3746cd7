// Batons: the one way the binding runs work off the JS thread.
//
// The JS thread validates arguments and copies them into a Baton (plain C++ data plus
// references that keep every JS buffer the work touches alive). Execute() runs on one of the
// addon's own thread pools, never libuv's. The result comes back through a thread-safe
// function and settles exactly one Promise on the JS thread, where the references are dropped.
#pragma once

#include <napi.h>

#include <memory>
#include <vector>

#include "binding/errors.h"
#include "core/status.h"
#include "core/thread_pool.h"

namespace spark {

class Baton {
 public:
  explicit Baton(Napi::Env env) : deferred_(Napi::Promise::Deferred::New(env)) {}
  virtual ~Baton() = default;

  // Pool thread. Sets status_ on failure; must not touch any napi value.
  virtual void Execute() = 0;
  // JS thread, after a successful Execute(): the value the Promise resolves with.
  virtual Napi::Value OnOk(Napi::Env env) { return env.Undefined(); }
  // JS thread, after a failed Execute(): the Error the Promise rejects with.
  virtual Napi::Value OnError(Napi::Env env) { return StatusToError(env, status_).Value(); }

  // Keeps a JS value (typically a Buffer the work writes into) alive until the batch settles.
  void Keep(Napi::Value value) { kept_.emplace_back(Napi::Persistent(value)); }

  Napi::Promise Promise() const { return deferred_.Promise(); }

  Status status_;

 private:
  friend struct BatonRunner;
  Napi::Promise::Deferred deferred_;
  std::vector<Napi::Reference<Napi::Value>> kept_;
};

// Queues baton->Execute() on `pool` and returns the Promise it will settle.
Napi::Promise Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton);

}  // namespace spark
