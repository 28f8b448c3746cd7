// Node-API glue for finding holes in sparse copies (core/io/holes.h).
//
//   findHole(path, start, end)      first byte of [start, end) in a hole, or null (synchronous:
//                                   one open and one lseek)
#include <fcntl.h>
#include <napi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <optional>
#include <string>

#include "binding/args.h"
#include "binding/errors.h"
#include "binding/modules.h"
#include "core/io/holes.h"

namespace spark {
namespace {

Napi::Value FindHoleJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = StringValue(info[0], "path");
  uint64_t start = U64Value(info[1], "start"), end = U64Value(info[2], "end");
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw StatusToError(env, ErrnoStatus(errno, "open", path));
  struct stat st;
  Status s = fstat(fd, &st) != 0    ? ErrnoStatus(errno, "fstat", path)
             : !S_ISREG(st.st_mode) ? Status::Error(Code::E_SHARD_MISSING, "is not a regular file", path)
                                    : Status::Ok();
  std::optional<uint64_t> hole;
  if (s.ok()) s = FirstHole(fd, start, end, path, &hole);
  close(fd);
  if (!s.ok()) throw StatusToError(env, s);
  return hole ? FromU64(env, *hole) : env.Null();
}

}  // namespace

void InitHoles(Napi::Env env, Napi::Object exports) {
  exports.Set("findHole", Napi::Function::New(env, FindHoleJs, "findHole"));
}

}  // namespace spark
