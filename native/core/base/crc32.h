// CRC-32 as zlib computes it (ISO-HDLC: reflected polynomial 0xEDB88320, init and final
// xor 0xFFFFFFFF; crc32("123456789") = 0xCBF43926), the checksum of packed Engram chunks.
//
// Why this one: Python's zlib.crc32 (stdlib, native speed) verifies it on the serving side
// with no extra package, and it runs at disk speed or better on both targets:
//   arm64   the ARMv8 CRC32 instructions (crc32x), ~8 bytes per 2-3 cycles;
//   x86-64  carry-less multiply folding (PCLMULQDQ), 4 lanes of 128 bits;
//   other   slice-by-8 tables (~1 byte per cycle), also the reference the fast paths are
//           tested against.
// The fast paths are chosen at run time (cpuid / AT_HWCAP), so one binary runs everywhere;
// SPARK_CRC32_PORTABLE=1 in the environment forces slice-by-8.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spark {

// crc32(crc, data, n) continues `crc` (0 to start) over n bytes, exactly like zlib's crc32().
uint32_t Crc32(uint32_t crc, const void* data, size_t n);

// The table-driven implementation alone (what Crc32 falls back to).
uint32_t Crc32Portable(uint32_t crc, const void* data, size_t n);

// "pclmulqdq", "armv8-crc32" or "slice-by-8": which path Crc32 takes in this process.
const char* Crc32Implementation();

}  // namespace spark
