#include "core/base/status.h"

#include <cerrno>
#include <cstring>
#include <iterator>

namespace spark {

namespace {

// The code table as data, indexed by Code (OK first).
struct CodeRow {
  const char* name;
  int exit_code;
};
constexpr CodeRow kCodes[] = {{"OK", 0},
#define SPARK_X(name, exit_code) {#name, exit_code},
                              SPARK_ERROR_CODES(SPARK_X)
#undef SPARK_X
};

}  // namespace

const char* CodeName(Code code) {
  size_t i = static_cast<size_t>(code);
  return i < std::size(kCodes) ? kCodes[i].name : "E_INTERNAL";
}

int CodeExit(Code code) {
  size_t i = static_cast<size_t>(code);
  return i < std::size(kCodes) ? kCodes[i].exit_code : 3;
}

Status Status::Error(Code code, std::string message, std::string path, std::string tensor) {
  Status s;
  s.code = code;
  s.message = std::move(message);
  s.path = std::move(path);
  s.tensor = std::move(tensor);
  return s;
}

std::string Status::ToString() const {
  std::string out;
  if (!path.empty()) out += path + ": ";
  if (!tensor.empty()) out += "tensor '" + tensor + "': ";
  out += message;
  if (has_offset) out += " (at byte " + std::to_string(offset) + ")";
  return out;
}

Status ErrnoStatus(int err, const std::string& what, const std::string& path) {
  Code code = Code::E_IO;
  if (err == ENOENT) code = Code::E_FILE_NOT_FOUND;
  if (err == ENOSPC || err == EDQUOT) code = Code::E_NO_SPACE;
  return Status::Error(code, what + " failed: " + std::strerror(err), path);
}

}  // namespace spark
