// Status: how core code reports failure. Core code never throws across the binding; the
// binding turns a Status into a JS error whose `code` is the name from error_codes.h.
#pragma once

#include <cstdint>
#include <string>

#include "core/base/error_codes.h"

namespace spark {

enum class Code : uint16_t {
  OK = 0,
#define SPARK_X(name, exit_code) name,
  SPARK_ERROR_CODES(SPARK_X)
#undef SPARK_X
};

const char* CodeName(Code code);
int CodeExit(Code code);

struct Status {
  Code code = Code::OK;
  std::string message;  // what went wrong and, when known, the fix
  std::string path;     // file concerned, if any
  std::string tensor;   // tensor concerned, if any
  uint64_t offset = 0;  // byte offset concerned, valid when has_offset
  bool has_offset = false;

  bool ok() const { return code == Code::OK; }
  static Status Ok() { return Status{}; }
  static Status Error(Code code, std::string message, std::string path = {}, std::string tensor = {});
  Status& At(uint64_t off) {
    offset = off;
    has_offset = true;
    return *this;
  }
  // One line: "path: tensor 'x': message (at byte N)".
  std::string ToString() const;
};

// An errno from a system call, as a Status naming the call, the file and the offset.
Status ErrnoStatus(int err, const std::string& what, const std::string& path);

}  // namespace spark
