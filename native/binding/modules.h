// Every binding file exposes one Init function; addon.cc calls each in this order.
#pragma once

#include <napi.h>

namespace spark {

using BindingInit = void (*)(Napi::Env env, Napi::Object exports);

void InitPack(Napi::Env env, Napi::Object exports);         // pack_binding.cc
void InitSafetensors(Napi::Env env, Napi::Object exports);  // safetensors_binding.cc
void InitTiling(Napi::Env env, Napi::Object exports);       // tiling_binding.cc
void InitExec(Napi::Env env, Napi::Object exports);         // exec_binding.cc
void InitRowStore(Napi::Env env, Napi::Object exports);     // row_store_binding.cc
void InitHoles(Napi::Env env, Napi::Object exports);        // holes_binding.cc
void InitPageCache(Napi::Env env, Napi::Object exports);    // page_cache_binding.cc

inline constexpr BindingInit kBindingModules[] = {
    InitSafetensors, InitTiling, InitExec, InitRowStore, InitPack, InitHoles, InitPageCache,
};

}  // namespace spark
