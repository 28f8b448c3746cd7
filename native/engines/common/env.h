// The environment variables the engine libraries read, parsed without the C library's strto*
// family (whose C23 aliases on newer glibc would raise the libraries' glibc floor). Read only
// at open or setup time, never on a gather.
#pragma once

#include <cstdint>

namespace spark::engines {

// A decimal unsigned integer (no sign, digits only, at most 2^63 - 1), or `fallback` when the
// variable is unset, empty or not such a number.
uint64_t EnvUint(const char* name, uint64_t fallback);
// A decimal number such as "4", "0.5", "-1" (sign, digits, one optional fraction), or fallback.
double EnvNumber(const char* name, double fallback);
// False for "0", "off", "false", "no" (any case); true for any other set value; else fallback.
bool EnvFlag(const char* name, bool fallback);
// Whether the variable equals `value` exactly (case-insensitive).
bool EnvIs(const char* name, const char* value);

}  // namespace spark::engines
