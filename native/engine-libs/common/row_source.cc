#include "engine-libs/common/row_source.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "engine-libs/common/row_cache.h"

namespace spark::engines {

void Die(const char* prefix, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", prefix, what.c_str());
  std::fflush(stderr);
  std::abort();
}

void RowSource::ReadExact(ReadFile& f, uint64_t offset, size_t len, uint8_t* dst, uint8_t* staging) const {
  Status st;
  if (f.direct()) {
    const uint64_t start = offset - offset % kDirectAlign;
    const uint64_t end = (offset + len + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
    // The last block may run past the end of the file: only the row's bytes must come back.
    st = PreadAll(f, staging, end - start, offset + len - start, start, ctx_);
    if (st.ok()) std::memcpy(dst, staging + (offset - start), len);
  } else {
    st = PreadAll(f, dst, len, len, offset, ctx_);
  }
  if (!st.ok()) Die(prefix_, st.ToString());
}

unsigned RowSource::Read(uint64_t id, uint8_t* w, uint8_t* s, uint8_t* staging, const PinnedScales* pinned) const {
  if (mapped != nullptr) {
    std::memcpy(w, mapped + woff + id * kWeightBytes, kWeightBytes);
    std::memcpy(s, mapped + soff + id * kScaleBytes, kScaleBytes);
    return 0;
  }
  if (pack != nullptr) {
    uint8_t row[kRowBytes];
    ReadExact(*pack, pack_base + (id - pack_lo) * kRowBytes, kRowBytes, row, staging);
    std::memcpy(w, row, kWeightBytes);
    std::memcpy(s, row + kWeightBytes, kScaleBytes);
    return 1;
  }
  ReadExact(*file, woff + id * kWeightBytes, kWeightBytes, w, staging);
  if (pinned != nullptr && id >= pinned->lo && id < pinned->hi) {
    std::memcpy(s, pinned->data.get() + (id - pinned->lo) * kScaleBytes, kScaleBytes);
    return 1;
  }
  ReadExact(*file, soff + id * kScaleBytes, kScaleBytes, s, staging);
  return 2;
}

void RowSource::ReadSpan(ReadFile& f, uint64_t offset, uint64_t bytes, uint8_t* dst) const {
  constexpr uint64_t kChunk = 4 << 20;
  AlignedBuffer buffer;
  uint8_t* buf = buffer.Reserve(kChunk + 2 * kDirectAlign);
  if (buf == nullptr) Die(prefix_, "out of memory for a read buffer");
  for (uint64_t done = 0; done < bytes;) {
    const uint64_t at = offset + done;
    const uint64_t want = std::min(kChunk, bytes - done);
    const uint64_t start = f.direct() ? at - at % kDirectAlign : at;
    const uint64_t end = f.direct() ? (at + want + kDirectAlign - 1) / kDirectAlign * kDirectAlign : at + want;
    Status st = PreadAll(f, buf, end - start, at + want - start, start, ctx_);
    if (!st.ok()) Die(prefix_, st.ToString());
    std::memcpy(dst + done, buf + (at - start), want);
    done += want;
  }
}

std::unique_ptr<PinnedScales> PinScales(const RowSource& src, uint64_t lo, uint64_t hi) {
  auto p = std::make_unique<PinnedScales>();
  p->lo = lo;
  p->hi = hi;
  p->data.reset(new (std::nothrow) uint8_t[hi > lo ? (hi - lo) * kScaleBytes : 1]);
  if (!p->data) {
    errno = ENOMEM;
    return nullptr;
  }
  if (hi > lo) src.ReadSpan(*src.file, src.soff + lo * kScaleBytes, (hi - lo) * kScaleBytes, p->data.get());
  return p;
}

}  // namespace spark::engines
