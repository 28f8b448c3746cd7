// Module entry: each binding file registers its functions on `exports`.
#include <napi.h>

#include "binding/addon_env.h"
#include "binding/modules.h"
#include "core/base/status.h"

namespace spark {
namespace {

// The code table as JS sees it: { E_X: exitCode, ... }; test/errors/error-codes.test.ts compares it to TS.
Napi::Object ErrorCodes(Napi::Env env) {
  Napi::Object codes = Napi::Object::New(env);
#define SPARK_X(name, exit_code) codes.Set(#name, exit_code);
  SPARK_ERROR_CODES(SPARK_X)
#undef SPARK_X
  return codes;
}

}  // namespace

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  AddonEnv::Init(env);  // once per environment: every load in a worker thread gets its own
  exports.Set("errorCodes", ErrorCodes(env));
  for (auto init : kBindingModules) {
    if (init != nullptr) init(env, exports);
  }
  return exports;
}

}  // namespace spark

static Napi::Object InitModule(Napi::Env env, Napi::Object exports) { return spark::Init(env, exports); }

NODE_API_MODULE(NODE_GYP_MODULE_NAME, InitModule)
