// The environment variables the engine libraries read, parsed without the C library's strto*
// family (whose C23 aliases on newer glibc would raise the libraries' glibc floor). Read only
// at open or setup time, never on a gather.
//
// One rule for every number: a value that is not exactly a number of the kind asked for is no
// number, and the caller's fallback applies; a value too large to hold is no number either
// (18446744073709551618, 2^64 + 2, is not 2). A number that is one but lies outside what the
// setting allows is the caller's to clamp.
#pragma once

#include <cstdint>

namespace spark::engines {

// A decimal integer: an optional sign, then digits only, within int64 ([-2^63, 2^63 - 1]); or
// `fallback` when the variable is unset, empty, anything else, or past that range.
int64_t EnvInt(const char* name, int64_t fallback);
// A decimal number such as "4", "0.5", "-1" (sign, digits, one optional fraction) of at most
// 10^15 in size, or fallback.
double EnvNumber(const char* name, double fallback);
// False for "0", "off", "false", "no" (any case); true for any other set value; else fallback.
bool EnvFlag(const char* name, bool fallback);
// Whether the variable equals `value` exactly (case-insensitive).
bool EnvIs(const char* name, const char* value);

}  // namespace spark::engines
