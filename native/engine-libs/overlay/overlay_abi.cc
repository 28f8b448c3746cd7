// libengram_rows.so: the overlay stack's row library ABI, version 3 (docs/engine-libs.md),
// over OverlayStore. Only these eight symbols are exported (exports.map).
#include <cstdint>

#include "engine-libs/overlay/overlay_store.h"

using spark::engines::OverlayStore;

namespace {
// The ABI version engram_rows_abi_version() returns.
constexpr int32_t kAbiVersion = 3;

// The same number as an ELF note (name "spark", type 1, a little-endian int32), so a node's
// copy of the file can be checked for it by reading it (spark preflight, engine-lib.abi),
// without running code built for another machine. GAS makes a ".note.*" section SHT_NOTE; the
// version script leaves it alone (it is no symbol). test/engine-lib/engine-lib-reader.test.ts checks the
// note against what the function returns.
struct AbiNote {
  uint32_t namesz;
  uint32_t descsz;
  uint32_t type;
  char name[8];
  int32_t version;
};
__attribute__((section(".note.spark.abi"), used, aligned(4))) const AbiNote kAbiNote = {6, 4, 1, "spark", kAbiVersion};

// The gather call's argument; this field order is the ABI.
struct GatherWork {
  uint64_t count;
  OverlayStore* store;
  uint8_t* w_out;
  uint8_t* s_out;
  const int64_t* ids;
};
}  // namespace

extern "C" {

__attribute__((visibility("default"))) int engram_rows_abi_version(void) { return kAbiVersion; }

__attribute__((visibility("default"))) OverlayStore* engram_rows_open(const char* path, uint64_t weight_off,
                                                                      uint64_t scale_off, uint64_t row_lo,
                                                                      uint64_t row_hi, int threads) {
  return OverlayStore::Open(path, weight_off, scale_off, row_lo, row_hi, threads);
}

__attribute__((visibility("default"))) void engram_rows_gather(void* work) {
  auto* w = static_cast<GatherWork*>(work);
  if (w == nullptr || w->store == nullptr) return;
  if (w->count != 0 && (w->w_out == nullptr || w->s_out == nullptr || w->ids == nullptr)) return;
  w->store->Gather(w->ids, w->count, w->w_out, w->s_out);
}

__attribute__((visibility("default"))) uint64_t engram_rows_prefetch(OverlayStore* s, const int64_t* ids, uint64_t n) {
  return s == nullptr ? 0 : s->Prefetch(ids, n);
}

__attribute__((visibility("default"))) void engram_rows_stats(OverlayStore* s, uint64_t out[4]) {
  if (s != nullptr && out != nullptr) s->Stats(out);
}

__attribute__((visibility("default"))) uint64_t engram_rows_resident(OverlayStore* s) {
  return s == nullptr ? 0 : s->Resident();
}

__attribute__((visibility("default"))) void engram_rows_release(OverlayStore* s) {
  if (s != nullptr) s->Release();
}

__attribute__((visibility("default"))) void engram_rows_close(OverlayStore* s) { delete s; }

}  // extern "C"
