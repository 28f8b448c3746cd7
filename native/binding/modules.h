// Every binding file exposes one Init function; addon.cc calls each in this order.
#pragma once

#include <napi.h>

namespace spark {

using BindingInit = void (*)(Napi::Env env, Napi::Object exports);

void InitPack(Napi::Env env, Napi::Object exports);         // pack_binding.cc
void InitSafetensors(Napi::Env env, Napi::Object exports);  // safetensors_binding.cc

inline constexpr BindingInit kBindingModules[] = {
    InitSafetensors,
    InitPack,
};

}  // namespace spark
