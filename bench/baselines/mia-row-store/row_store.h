// The Mia stack's Engram row reader, re-implemented from its documented behaviour (see
// README.md in this directory) as a BASELINE for `spark bench gather`: the same C ABI, the
// same costs (a process-wide pool of DSV41_IO_THREADS preads, one aligned 4 or 8 KiB read per
// miss, a set-associative cache of whole rows), so spark's engines can be measured beside it.
// It is not part of spark's product core (native/core) and shares no code with it.
#pragma once
#include <cstdint>

#define MIA_API extern "C" __attribute__((visibility("default")))

struct Store;

/** row_store_lookup's argument; this field order is the ABI. */
struct LookupWork {
  Store* store;
  const int64_t* ids;
  uint8_t* weights;  // count * 256 bytes
  uint8_t* scales;   // count * 8 bytes
  uint64_t count;
};

/** The checkpoint shard, N rows, absolute offsets of row 0 of weight and scale, cache budget in bytes. */
MIA_API Store* row_store_open(const char* path, uint64_t rows, uint64_t woff, uint64_t soff, uint64_t budget);
/** Owned rows [lo, hi); pins the owned scale rows unless DSV41_RESIDENT_SCALES is 0/off/false. */
MIA_API void row_store_range(Store* s, uint64_t lo, uint64_t hi);
/** 0: no usable pack at path (absent, or O_DIRECT refused); 1: attached; abort() on a mismatch. */
MIA_API int row_store_attach_packed(Store* s, const char* path, uint64_t layer);
/** `work` is a LookupWork*. */
MIA_API void row_store_lookup(void* work);
/** hits, misses, reads, cache bytes, cache slots, pinned scale bytes, ways, threads, packed. */
MIA_API void row_store_stats(Store* s, uint64_t out[9]);
MIA_API void row_store_close(Store* s);
