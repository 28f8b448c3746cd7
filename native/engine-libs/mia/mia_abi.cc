// librow_store.so: the Mia stack's row library ABI (docs/engine-libs.md), over MiaStore. Only
// these seven symbols are exported (exports.map).
#include <cstdint>

#include "engine-libs/mia/mia_store.h"

using spark::engines::MiaStore;

namespace {
// The lookup call's argument; this field order is the ABI.
struct LookupWork {
  MiaStore* store;
  const int64_t* ids;
  uint8_t* weights;
  uint8_t* scales;
  uint64_t count;
};
}  // namespace

extern "C" {

__attribute__((visibility("default"))) MiaStore* row_store_open(const char* path, uint64_t rows, uint64_t woff,
                                                                uint64_t soff, uint64_t budget) {
  return MiaStore::Open(path, rows, woff, soff, budget);
}

__attribute__((visibility("default"))) void row_store_range(MiaStore* s, uint64_t lo, uint64_t hi) {
  if (s != nullptr) s->Range(lo, hi);
}

__attribute__((visibility("default"))) int row_store_attach_packed(MiaStore* s, const char* path, uint64_t layer) {
  return s == nullptr ? 0 : s->AttachPacked(path, layer);
}

__attribute__((visibility("default"))) void row_store_lookup(void* work) {
  auto* w = static_cast<LookupWork*>(work);
  if (w == nullptr || w->store == nullptr) return;
  if (w->count != 0 && (w->ids == nullptr || w->weights == nullptr || w->scales == nullptr)) return;
  w->store->Lookup(w->ids, w->count, w->weights, w->scales);
}

__attribute__((visibility("default"))) void row_store_stats(MiaStore* s, uint64_t out[9]) {
  if (s != nullptr && out != nullptr) s->Stats(out);
}

__attribute__((visibility("default"))) void row_store_close(MiaStore* s) { delete s; }

// Optional in the ABI: the next store's row cache in a DRM dumb buffer (drm_cache.h).
__attribute__((visibility("default"))) void row_store_next_cache_on_drm(const char* node, uint64_t bytes) {
  spark::engines::SetNextCacheOnDrm(node, bytes);
}

}  // extern "C"
