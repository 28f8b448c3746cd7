// Every binding file exposes one Init function; addon.cc calls each in this order.
#pragma once

#include <napi.h>

namespace spark {

using BindingInit = void (*)(Napi::Env env, Napi::Object exports);

void InitSafetensors(Napi::Env env, Napi::Object exports);  // safetensors_binding.cc

inline constexpr BindingInit kBindingModules[] = {
    InitSafetensors,
};

}  // namespace spark
