#include "engine-libs/mia/mia_pack.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "core/base/checked.h"
#include "engine-libs/common/row_cache.h"
#include "engine-libs/common/row_source.h"

namespace spark::engines {

namespace {

constexpr const char* kPrefix = "librow_store";

[[noreturn]] void Mismatch(const char* path, const std::string& what) {
  Die(kPrefix, std::string(path) + ": packed shard " + what + "; delete it or pack it again for this split");
}

uint64_t Le64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

std::unique_ptr<ReadFile> OpenMiaPack(const char* path, uint64_t layer, uint64_t lo, uint64_t hi, uint64_t rows) {
  // Present means: opens with O_DIRECT. Checked to be a regular file before any read.
  int fd = open(path, O_RDONLY | O_DIRECT | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return nullptr;
  struct stat st;
  const bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  close(fd);
  if (!regular) Mismatch(path, "is not a regular file");
  auto pack = std::make_unique<ReadFile>();
  Status opened = pack->Open(path, true, 0, false);
  if (!opened.ok()) return nullptr;     // gone or changed since: absent
  if (!pack->direct()) return nullptr;  // the probe read refused O_DIRECT: absent, as for the stack
  if (pack->size() < kMiaHeaderBytes) Mismatch(path, "is shorter than its 4096-byte header");
  AlignedBuffer buffer;
  uint8_t* header = buffer.Reserve(kMiaHeaderBytes);
  if (header == nullptr) Die(kPrefix, "out of memory for a pack header");
  Status st_read = PreadAll(*pack, header, kMiaHeaderBytes, kMiaHeaderBytes, 0, ReadContext{});
  if (!st_read.ok()) Die(kPrefix, st_read.ToString());
  const uint64_t want[6] = {kMiaMagic, layer, lo, hi, rows, kRowBytes};
  const char* names[6] = {"magic", "layer", "lo", "hi", "N (rows of the layer)", "row bytes"};
  for (int i = 0; i < 6; ++i) {
    const uint64_t got = Le64(header + 8 * i);
    if (got != want[i]) {
      Mismatch(path,
               std::string("has ") + names[i] + " " + std::to_string(got) + ", expected " + std::to_string(want[i]));
    }
  }
  auto body = CheckedMul(hi - lo, kRowBytes);
  if (body) body = CheckedAdd(*body, kMiaHeaderBytes);
  if (!body || pack->size() < *body) {
    Mismatch(path, "is " + std::to_string(pack->size()) + " bytes, shorter than its rows (" +
                       (body ? std::to_string(*body) : std::string("overflow")) + ")");
  }
  return pack;
}

}  // namespace spark::engines
