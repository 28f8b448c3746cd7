#include "engine-libs/common/env.h"

#include <cstdlib>

namespace spark::engines {

namespace {

char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

bool SameText(const char* a, const char* b) {
  for (; *a != '\0' && *b != '\0'; ++a, ++b) {
    if (Lower(*a) != Lower(*b)) return false;
  }
  return *a == *b;
}

}  // namespace

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* p = std::getenv(name);
  if (p == nullptr) return fallback;
  const bool negative = *p == '-';
  if (*p == '-' || *p == '+') ++p;
  if (*p == '\0') return fallback;
  // The magnitude, checked before each step: 2^63 itself fits only negative.
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  uint64_t n = 0;
  for (; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return fallback;
    const uint64_t digit = static_cast<uint64_t>(*p - '0');
    if (n > (limit - digit) / 10) return fallback;
    n = n * 10 + digit;
  }
  return negative ? static_cast<int64_t>(0 - n) : static_cast<int64_t>(n);
}

double EnvNumber(const char* name, double fallback) {
  const char* p = std::getenv(name);
  if (p == nullptr || *p == '\0') return fallback;
  double sign = 1;
  if (*p == '-' || *p == '+') sign = *p++ == '-' ? -1 : 1;
  double n = 0, scale = 1;
  bool digits = false, fraction = false;
  for (; *p != '\0'; ++p) {
    if (*p == '.' && !fraction) {
      fraction = true;
    } else if (*p >= '0' && *p <= '9') {
      digits = true;
      if (fraction) {
        scale /= 10;
        n += (*p - '0') * scale;
      } else {
        n = n * 10 + (*p - '0');
      }
      if (n > 1e15) return fallback;
    } else {
      return fallback;
    }
  }
  return digits ? sign * n : fallback;
}

bool EnvFlag(const char* name, bool fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return !(SameText(v, "0") || SameText(v, "off") || SameText(v, "false") || SameText(v, "no"));
}

bool EnvIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && SameText(v, value);
}

}  // namespace spark::engines
