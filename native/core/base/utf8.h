// UTF-8 validation and message-safe text.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace spark {

// Offset of the first byte that is not well-formed UTF-8 (overlong forms, surrogates and
// code points past U+10FFFF are rejected), or len when all of it is.
size_t FindInvalidUtf8(const uint8_t* data, size_t len);

// Appends code point cp (at most U+10FFFF, not a surrogate) as UTF-8.
void AppendUtf8(std::string& out, uint32_t cp);

// Text made safe for a one-line message: control characters and bytes that are not UTF-8
// become \xNN, and text longer than max_bytes is cut (on a character boundary) with "...".
std::string Printable(std::string_view text, size_t max_bytes = 200);

}  // namespace spark
