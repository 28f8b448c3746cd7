// Node-API glue for page-cache advice behind a reader that streams a large file once.
//
//   dropCache(fd, offset, length)   posix_fadvise(DONTNEED) behind a reader (page cache is GPU
//                                   memory on the target machines); advice only, never fails
#include <fcntl.h>
#include <napi.h>

#include <cstdint>

#include "binding/args.h"
#include "binding/modules.h"

namespace spark {
namespace {

Napi::Value DropCacheJs(const Napi::CallbackInfo& info) {
  uint64_t fd = U64Value(info[0], "fd");
  uint64_t offset = U64Value(info[1], "offset"), length = U64Value(info[2], "length");
  if (fd <= INT32_MAX && offset <= INT64_MAX && length <= INT64_MAX) {
    posix_fadvise(static_cast<int>(fd), static_cast<off_t>(offset), static_cast<off_t>(length), POSIX_FADV_DONTNEED);
  }
  return info.Env().Undefined();
}

}  // namespace

void InitPageCache(Napi::Env env, Napi::Object exports) {
  exports.Set("dropCache", Napi::Function::New(env, DropCacheJs, "dropCache"));
}

}  // namespace spark
