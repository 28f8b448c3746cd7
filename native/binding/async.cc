#include "binding/async.h"

namespace spark {

struct BatonRunner {
  // JS thread: settle the promise and free the baton (and with it the kept references).
  static void Settle(napi_env raw_env, napi_value /*js_cb*/, void* /*context*/, void* data) {
    std::unique_ptr<Baton> baton(static_cast<Baton*>(data));
    if (raw_env == nullptr) return;  // environment shutting down: nothing left to settle
    Napi::Env env(raw_env);
    Napi::HandleScope scope(env);
    try {
      if (baton->status_.ok()) {
        baton->deferred_.Resolve(baton->OnOk(env));
      } else {
        baton->deferred_.Reject(baton->OnError(env));
      }
    } catch (const Napi::Error& e) {
      baton->deferred_.Reject(e.Value());
    }
  }
};

Napi::Promise Schedule(Napi::Env env, ThreadPool& pool, std::unique_ptr<Baton> baton) {
  Napi::Promise promise = baton->Promise();
  napi_threadsafe_function tsfn = nullptr;
  napi_value name = Napi::String::New(env, "spark-baton");
  napi_status st = napi_create_threadsafe_function(env, nullptr, nullptr, name, 0, 1, nullptr, nullptr,
                                                   nullptr, &BatonRunner::Settle, &tsfn);
  if (st != napi_ok) {
    Napi::Error::New(env, "could not create a thread-safe function").ThrowAsJavaScriptException();
    return promise;
  }
  Baton* raw = baton.release();
  pool.Submit([raw, tsfn] {
    raw->Execute();
    // Blocking call: the queue is unbounded (max size 0), so this never waits.
    if (napi_call_threadsafe_function(tsfn, raw, napi_tsfn_blocking) != napi_ok) delete raw;
    napi_release_threadsafe_function(tsfn, napi_tsfn_release);
  });
  return promise;
}

}  // namespace spark
