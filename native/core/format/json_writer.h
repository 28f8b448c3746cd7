// Writing JSON text (the reading side is core/format/json.h). The writer places the commas and
// colons; strings are escaped as RFC 8259 requires ('"', '\\' and control characters) and
// otherwise copied, so they must already be valid UTF-8.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spark::json {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  // The next value is this member of the open object.
  void Key(std::string_view key) {
    Separate();
    Quote(key);
    *out_ += ':';
    after_key_ = true;
  }
  void String(std::string_view s) {
    Separate();
    Quote(s);
  }
  void U64(uint64_t v) {
    Separate();
    if (v > kMaxSafeInteger) exact_in_double_ = false;
    *out_ += std::to_string(v);
  }

  // False once a number past 2^53-1 was written: JSON.parse (a double) would round it.
  bool exact_in_double() const { return exact_in_double_; }

 private:
  static constexpr uint64_t kMaxSafeInteger = (uint64_t{1} << 53) - 1;

  void Open(char c) {
    Separate();
    *out_ += c;
    first_.push_back(true);
  }
  void Close(char c) {
    *out_ += c;
    first_.pop_back();
  }
  // A comma before every value but the first of its container, none after a key.
  void Separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) *out_ += ',';
    first_.back() = false;
  }
  void Quote(std::string_view s) {
    static const char kHex[] = "0123456789abcdef";
    *out_ += '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') {
        *out_ += '\\';
        *out_ += static_cast<char>(c);
      } else if (c < 0x20) {
        *out_ += "\\u00";
        *out_ += kHex[c >> 4];
        *out_ += kHex[c & 15];
      } else {
        *out_ += static_cast<char>(c);
      }
    }
    *out_ += '"';
  }

  std::string* out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
  bool exact_in_double_ = true;
};

}  // namespace spark::json
