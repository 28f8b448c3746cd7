#include "engine-libs/common/gatherer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "engine-libs/common/call_log.h"

namespace spark::engines {

namespace {
// Distinct rows looked up on the calling thread before deciding the batch is warm, and how
// many lookups a warm batch may do there in all (a cache lookup copies 264 bytes: ~100 ns).
constexpr size_t kProbe = 64;
constexpr size_t kWarmSerial = 8192;
// AIO reads in flight per store: past the drive's best queue depth (~64 on GB10 NVMe).
constexpr unsigned kAioDepth = 256;
// Rows are read together when the bytes between their blocks are at most this (one block):
// measured with fio on the bench disk (random reads of blocks never read before, queue depth
// 64, bench/RESULTS.md), an 8 KiB read costs 1.4 4 KiB reads, 12 KiB 1.6 and 16 KiB 1.8, so
// two rows with one block between them cost less as one 12 KiB read than as two; with two
// blocks between them (16 KiB for two rows) the saving is within the noise, and a read of
// 32 KiB (2.3) costs more than the rows it could hold are worth at a rank's density.
constexpr uint64_t kMergeHole = kDirectAlign;

[[noreturn]] void ReadFailed(const Status& st) { Die("spark engine library", st.ToString()); }

// The aligned read around [offset, offset + len) of an O_DIRECT file.
AioReader::Op Around(ReadFile* f, uint64_t offset, uint32_t len, uint32_t tag) {
  const uint64_t start = offset - offset % kDirectAlign;
  const uint64_t end = (offset + len + kDirectAlign - 1) / kDirectAlign * kDirectAlign;
  return {f, start, static_cast<uint32_t>(end - start), static_cast<uint32_t>(offset + len - start), tag};
}
}  // namespace

bool Gatherer::Init(RowSource* source, RowCache* cache) {
  source_ = source;
  cache_ = cache;
  try {
    owned_ids_.reserve(kChunk);
    owned_pos_.reserve(kChunk);
    rows_.reserve(kChunk);
    copies_.reserve(kChunk);
    sort_.rows.reserve(kChunk);
    sort_.counts.reserve(6 * 2048);  // radix passes over 64-bit ids, 2^11 buckets each
    todo_.reserve(kChunk);
    ops_.reserve(2 * kChunk);
    parts_.reserve(2 * kChunk);
    op_head_.resize(2 * kChunk);
    op_tail_.resize(2 * kChunk);
    pending_.resize(kChunk);
    staged_ids_.resize(kDeferRows);
    staged_rows_.resize(kDeferRows * kRowBytes);
  } catch (const std::bad_alloc&) {
    errno = ENOMEM;
    return false;
  }
  aio_ok_ = aio_.Init(kAioDepth);
  return true;
}

void Gatherer::MissItem(void* ctx, size_t item, unsigned thread) {
  auto* g = static_cast<Gatherer*>(ctx);
  const DistinctRow& r = g->rows_[g->todo_[item]];
  const uint64_t pos = g->owned_pos_[r.pos];
  uint8_t* w = g->w_ + pos * kWeightBytes;
  uint8_t* s = g->s_ + pos * kScaleBytes;
  // Rows the calling thread looked up already (todo_ before looked_) were counted there.
  if (g->cache_->Lookup(r.id, w, s, item >= g->looked_)) {
    g->counters_.hits.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const unsigned reads = g->source_->Read(r.id, w, s, g->team_->staging(thread), g->pinned_);
  g->cache_->Insert(r.id, w, s);
  g->counters_.misses.fetch_add(1, std::memory_order_relaxed);
  g->counters_.reads.fetch_add(reads, std::memory_order_relaxed);
}

bool Gatherer::ReadDirect() {
  const RowSource& src = *source_;
  if (!aio_ok_ || src.mapped != nullptr || todo_.empty()) return false;
  if (src.pack != nullptr ? !src.pack->direct() : !src.file->direct()) return false;
  ops_.clear();
  parts_.clear();
  int64_t last[2] = {-1, -1};  // the open read of the row (or weight) stream and of the scale stream
  // Adds the bytes [offset, offset + len) of todo_[k] (part 0: the row or its weight, 1: its
  // scale) to the stream's last read when their blocks start at most kMergeHole after its end
  // and the read stays within one slot (ids come sorted, so offsets rise), else to a new read.
  auto add = [&](int stream, ReadFile* f, uint64_t offset, uint32_t len, uint32_t k, uint8_t part) {
    const AioReader::Op around = Around(f, offset, len, 0);
    const uint32_t index = static_cast<uint32_t>(parts_.size());
    parts_.push_back({k, part, -1});
    if (last[stream] >= 0) {
      AioReader::Op& op = ops_[static_cast<size_t>(last[stream])];
      const uint64_t end = std::max(op.offset + op.len, around.offset + around.len);
      if (around.offset >= op.offset && around.offset <= op.offset + op.len + kMergeHole &&
          end - op.offset <= AioReader::kSlotBytes) {
        op.len = static_cast<uint32_t>(end - op.offset);
        op.need = std::max<uint32_t>(op.need, static_cast<uint32_t>(offset + len - op.offset));
        parts_[op_tail_[op.tag]].next = static_cast<int32_t>(index);
        op_tail_[op.tag] = index;
        return;
      }
    }
    const uint32_t tag = static_cast<uint32_t>(ops_.size());
    ops_.push_back({f, around.offset, around.len, around.need, tag});
    op_head_[tag] = op_tail_[tag] = index;
    last[stream] = tag;
  };
  uint64_t hits = 0;
  for (size_t k = 0; k < todo_.size(); ++k) {
    const DistinctRow& r = rows_[todo_[k]];
    const uint64_t pos = owned_pos_[r.pos];
    const uint32_t kk = static_cast<uint32_t>(k);
    pending_[k] = 0;
    if (k >= looked_ && cache_->Lookup(r.id, w_ + pos * kWeightBytes, s_ + pos * kScaleBytes)) {
      ++hits;
      continue;
    }
    if (src.pack != nullptr) {
      pending_[k] = 1;
      add(0, src.pack, src.pack_base + (r.id - src.pack_lo) * kRowBytes, kRowBytes, kk, 0);
      continue;
    }
    const bool pinned = pinned_ != nullptr && r.id >= pinned_->lo && r.id < pinned_->hi;
    pending_[k] = pinned ? 1 : 2;
    add(0, src.file, src.woff + r.id * kWeightBytes, kWeightBytes, kk, 0);
    if (pinned) {
      std::memcpy(s_ + pos * kScaleBytes, pinned_->data.get() + (r.id - pinned_->lo) * kScaleBytes, kScaleBytes);
    } else {
      add(1, src.file, src.soff + r.id * kScaleBytes, kScaleBytes, kk, 1);
    }
  }
  counters_.hits.fetch_add(hits, std::memory_order_relaxed);
  counters_.reads.fetch_add(ops_.size(), std::memory_order_relaxed);
  aio_.Run(ops_.data(), ops_.size(), &ReadDone, this, &ReadFailed);
  return true;
}

void Gatherer::ReadDone(void* ctx, uint32_t tag, const uint8_t* data) {
  auto* g = static_cast<Gatherer*>(ctx);
  const RowSource& src = *g->source_;
  const uint64_t base = g->ops_[tag].offset;
  for (int32_t p = static_cast<int32_t>(g->op_head_[tag]); p >= 0; p = g->parts_[static_cast<size_t>(p)].next) {
    const Part& part = g->parts_[static_cast<size_t>(p)];
    const DistinctRow& r = g->rows_[g->todo_[part.k]];
    const uint64_t pos = g->owned_pos_[r.pos];
    uint8_t* w = g->w_ + pos * kWeightBytes;
    uint8_t* s = g->s_ + pos * kScaleBytes;
    if (src.pack != nullptr) {
      const uint8_t* row = data + (src.pack_base + (r.id - src.pack_lo) * kRowBytes - base);
      std::memcpy(w, row, kWeightBytes);
      std::memcpy(s, row + kWeightBytes, kScaleBytes);
    } else if (part.part == 0) {
      std::memcpy(w, data + (src.woff + r.id * kWeightBytes - base), kWeightBytes);
    } else {
      std::memcpy(s, data + (src.soff + r.id * kScaleBytes - base), kScaleBytes);
    }
    if (--g->pending_[part.k] == 0) g->Landed(part.k);
  }
}

void Gatherer::Landed(uint32_t k) {
  const DistinctRow& r = rows_[todo_[k]];
  const uint64_t pos = owned_pos_[r.pos];
  const uint8_t* w = w_ + pos * kWeightBytes;
  const uint8_t* s = s_ + pos * kScaleBytes;
  if (defer_ && staged_ < kDeferRows) {
    uint8_t* row = staged_rows_.data() + staged_ * kRowBytes;
    std::memcpy(row, w, kWeightBytes);
    std::memcpy(row + kWeightBytes, s, kScaleBytes);
    staged_ids_[staged_++] = r.id;
  } else {
    cache_->Insert(r.id, w, s);
  }
  counters_.misses.fetch_add(1, std::memory_order_relaxed);
}

void Gatherer::InsertStaged(void* ctx) {
  auto* g = static_cast<Gatherer*>(ctx);
  for (size_t i = 0; i < g->staged_; ++i) {
    const uint8_t* row = g->staged_rows_.data() + i * kRowBytes;
    g->cache_->Insert(g->staged_ids_[i], row, row + kWeightBytes);
  }
  g->staged_ = 0;
}

void Gatherer::Gather(WorkerTeam& team, const int64_t* ids, uint64_t count, uint8_t* w, uint8_t* s, uint64_t lo,
                      uint64_t hi) {
  const uint64_t start = CallLog::NowNs();
  for (uint64_t done = 0; done < count;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, count - done));
    Chunk(team, ids + done, n, w + done * kWeightBytes, s + done * kScaleBytes, lo, hi);
    done += n;
  }
  counters_.calls.fetch_add(1, std::memory_order_relaxed);
  counters_.ns.fetch_add(CallLog::NowNs() - start, std::memory_order_relaxed);
}

void Gatherer::Chunk(WorkerTeam& team, const int64_t* ids, size_t n, uint8_t* w, uint8_t* s, uint64_t lo, uint64_t hi) {
  Settle();  // the last chunk's staged rows are in the cache, and the staging is free
  defer_ = team.workers() > 0 && cache_->enabled();
  owned_ids_.clear();
  owned_pos_.clear();
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    if (id >= 0 && static_cast<uint64_t>(id) >= lo && static_cast<uint64_t>(id) < hi) {
      owned_ids_.push_back(static_cast<uint64_t>(id));
      owned_pos_.push_back(static_cast<uint32_t>(i));
    } else {
      std::memset(w + i * kWeightBytes, 0, kWeightBytes);
      std::memset(s + i * kScaleBytes, 0, kScaleBytes);
    }
  }
  counters_.owned.fetch_add(owned_ids_.size(), std::memory_order_relaxed);
  counters_.zeroed.fetch_add(n - owned_ids_.size(), std::memory_order_relaxed);
  if (owned_ids_.empty()) return;
  DistinctRows(owned_ids_.data(), owned_ids_.size(), true, &rows_, &copies_, &sort_);
  w_ = w;
  s_ = s;
  team_ = &team;
  pinned_ = source_->scales.load(std::memory_order_acquire);
  todo_.clear();
  // The calling thread looks up the first rows; a warm batch goes on looking up there.
  size_t looked = 0, hits = 0;
  const size_t distinct = rows_.size();
  while (looked < distinct) {
    const bool warm = looked >= kProbe && hits * 4 >= looked * 3;
    if (looked >= kProbe && (!warm || looked >= kWarmSerial)) break;
    const DistinctRow& r = rows_[looked];
    const uint64_t pos = owned_pos_[r.pos];
    if (cache_->Lookup(r.id, w + pos * kWeightBytes, s + pos * kScaleBytes)) {
      ++hits;
    } else {
      todo_.push_back(static_cast<uint32_t>(looked));
    }
    ++looked;
  }
  for (size_t k = looked; k < distinct; ++k) todo_.push_back(static_cast<uint32_t>(k));
  counters_.hits.fetch_add(hits + copies_.size(), std::memory_order_relaxed);
  looked_ = todo_.size() - (distinct - looked);
  if (!ReadDirect()) team.Run(&MissItem, this, todo_.size());
  for (const auto& [to, from] : copies_) {
    const uint64_t dst = owned_pos_[to], src = owned_pos_[from];
    std::memcpy(w + dst * kWeightBytes, w + src * kWeightBytes, kWeightBytes);
    std::memcpy(s + dst * kScaleBytes, s + src * kScaleBytes, kScaleBytes);
  }
  if (staged_ > 0) {
    posted_to_.store(&team, std::memory_order_release);
    team.Post(&InsertStaged, this);
  }
  w_ = s_ = nullptr;
  team_ = nullptr;
  pinned_ = nullptr;
}

}  // namespace spark::engines
