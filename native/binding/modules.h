// Every binding file exposes one Init function; addon.cc calls each in this order.
#pragma once

#include <napi.h>

namespace spark {

using BindingInit = void (*)(Napi::Env env, Napi::Object exports);

void InitTiling(Napi::Env env, Napi::Object exports);
void InitExec(Napi::Env env, Napi::Object exports);

inline constexpr BindingInit kBindingModules[] = {
    InitTiling,
    InitExec,
};

}  // namespace spark
