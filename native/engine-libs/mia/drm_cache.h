// row_store_next_cache_on_drm (docs/engine-libs.md): the next Mia store's row cache in a DRM
// dumb buffer. On GB10 such a buffer is carved from the firmware's display reservation, memory
// the kernel does not count in MemAvailable (nor CUDA in its pool), so the cache stops taking
// memory from the KV pool. The stack's own library behaves so, and this one the same way:
//   - the call only records the device node and the buffer's size, for the next store that
//     opens with a cache (a store without one, OFFLOAD_MODE=ram or budget 0, leaves it
//     pending); that store takes the request whether or not it succeeds (one store only);
//   - the buffer holds the cache's row bytes (slots x 264); it is used only when they fit in
//     `bytes` and `bytes` is a whole number of 16 MiB (4096 pixels x 32 bpp x 1024 lines);
//   - on any failure the cache is ordinary anonymous memory, as without the call, and one
//     line on stderr says why (the stack says so for a device that does not open or a buffer
//     that cannot be made; this library for every refusal but bytes == 0, which is "off").
// Before any ioctl the node must be a character device of the DRM major (226), so no request
// is ever sent to another kind of device. The success path needs a DRM driver with dumb
// buffers (nvidia-drm modeset=1); it is not tested here, where there is none.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/base/noncopyable.h"

namespace spark::engines {

// Records the request for the next store (thread-safe; node is copied, up to 255 bytes).
void SetNextCacheOnDrm(const char* node, uint64_t bytes);

// A mapped dumb buffer, released (unmapped, destroyed, closed) with its owner.
class DrmRowMemory : NonCopyable {
 public:
  DrmRowMemory() = default;
  ~DrmRowMemory();
  // Takes the pending request, if any, and maps a buffer for `need` bytes of rows. False (with
  // the stderr line, unless nothing was asked) when the cache stays in ordinary memory.
  bool TakeFor(uint64_t need, const char* prefix);
  uint8_t* data() const { return data_; }

 private:
  int fd_ = -1;
  uint32_t handle_ = 0;
  uint8_t* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace spark::engines
