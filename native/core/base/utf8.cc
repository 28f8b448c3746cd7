#include "core/base/utf8.h"

#include <cstring>

namespace spark {

size_t FindInvalidUtf8(const uint8_t* s, size_t n) {
  size_t i = 0;
  while (i < n) {
    if (n - i >= 8) {  // ASCII fast path, eight bytes at a time
      uint64_t w;
      std::memcpy(&w, s + i, 8);
      if ((w & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Table 3-7 of the Unicode standard: the first continuation byte's range depends on
    // the lead byte (this rejects overlong forms, surrogates and code points > U+10FFFF).
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c == 0xE0) {
      need = 2, lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
      need = 2;
    } else if (c == 0xED) {
      need = 2, hi = 0x9F;
    } else if (c == 0xF0) {
      need = 3, lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3) {
      need = 3;
    } else if (c == 0xF4) {
      need = 3, hi = 0x8F;
    } else {
      return i;
    }
    if (n - i - 1 < need) return i;
    if (s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k <= need; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
    }
    i += need + 1;
  }
  return n;
}

std::string Printable(std::string_view text, size_t max_bytes) {
  static const char kHex[] = "0123456789ABCDEF";
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  size_t n = text.size();
  std::string out;
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    size_t len = 1;
    bool ok = c >= 0x20 && c != 0x7F;
    if (c >= 0x80) {
      len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
      ok = n - i >= len && FindInvalidUtf8(s + i, len) == len;
      if (!ok) len = 1;
    }
    if (out.size() + (ok ? len : 4) > max_bytes) {
      out += "...";
      break;
    }
    if (ok) {
      out.append(text.data() + i, len);
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
    i += len;
  }
  return out;
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace spark
