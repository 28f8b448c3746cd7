#include "core/format/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <iterator>
#include <new>

#include "core/base/checked.h"
#include "core/base/utf8.h"
#include "core/format/json.h"
#include "core/format/safetensors_check.h"
#include "core/io/durable_file.h"

namespace spark::safetensors {

namespace {

// The dtype table as data, indexed by Dtype.
struct DtypeRow {
  const char* name;
  unsigned bits;
};
constexpr DtypeRow kDtypes[] = {
#define SPARK_X(name, bits) {#name, bits},
    SPARK_SAFETENSORS_DTYPES(SPARK_X)
#undef SPARK_X
};

const DtypeRow* RowOf(Dtype dtype) {
  size_t i = static_cast<size_t>(dtype);
  return i < std::size(kDtypes) ? &kDtypes[i] : nullptr;
}

}  // namespace

const char* DtypeName(Dtype dtype) { return RowOf(dtype) ? RowOf(dtype)->name : "?"; }

unsigned DtypeBits(Dtype dtype) { return RowOf(dtype) ? RowOf(dtype)->bits : 0; }

bool ParseDtype(std::string_view name, Dtype* out) {
  for (size_t i = 0; i < std::size(kDtypes); ++i) {
    if (name == kDtypes[i].name) {
      *out = static_cast<Dtype>(i);
      return true;
    }
  }
  return false;
}

std::string DtypeList() {
  std::string out;
  for (const DtypeRow& row : kDtypes) out += out.empty() ? row.name : std::string(", ") + row.name;
  return out;
}

namespace {

using json::Document;
using Index = Document::Index;

class HeaderParser {
 public:
  HeaderParser(const Document& doc, const std::string& path, Header* out) : doc_(doc), path_(path), out_(out) {}

  Status Run();

 private:
  Status ParseMetadata(Index value);
  Status ParseTensor(std::string_view name, Index value);
  Status ParseShape(std::string_view name, Index value, Tensor* t);
  Status ParseOffsets(std::string_view name, Index value, Tensor* t);

  const Document& doc_;
  const std::string& path_;
  Header* out_;
};

Status HeaderParser::Run() {
  Index root = doc_.Root();
  if (doc_.TypeOf(root) != json::Type::kObject) {
    return TensorError(path_, Code::E_SAFETENSORS_JSON,
                       "the header is " + doc_.Describe(root) +
                           ", expected a JSON object mapping tensor names to entries; " + kReexport);
  }
  // The parser's cap counts __metadata__ as a member; the limit is on tensors.
  uint64_t tensors = doc_.At(root).len;
  doc_.ForEachMember(root, [&](Index k, Index) {
    if (doc_.Str(k) == "__metadata__") --tensors;
    return true;
  });
  if (tensors > kMaxTensors) {
    return Status::Error(Code::E_SAFETENSORS_HEADER_SIZE,
                         "the header lists " + std::to_string(tensors) + " tensors; spark reads at most " +
                             std::to_string(kMaxTensors) +
                             " tensors from one file (a checkpoint shard lists a few thousand)",
                         path_);
  }
  out_->tensors.reserve(tensors);
  Status status;
  doc_.ForEachMember(root, [&](Index k, Index v) {
    std::string_view name = doc_.Str(k);
    status = name == "__metadata__" ? ParseMetadata(v) : ParseTensor(name, v);
    return status.ok();
  });
  if (!status.ok()) return status;
  return CheckLayout(out_);
}

Status HeaderParser::ParseMetadata(Index value) {
  // The reference reads __metadata__ as an optional map, so null means "none".
  if (doc_.TypeOf(value) == json::Type::kNull) return Status::Ok();
  if (doc_.TypeOf(value) != json::Type::kObject) {
    return TensorError(
        path_, Code::E_SAFETENSORS_METADATA,
        "__metadata__ is " + doc_.Describe(value) + ", expected an object of string values; " + kReexport);
  }
  Status status;
  doc_.ForEachMember(value, [&](Index k, Index v) {
    if (doc_.TypeOf(v) != json::Type::kString) {
      status = TensorError(path_, Code::E_SAFETENSORS_METADATA,
                           "__metadata__ key " + Quoted(doc_.Str(k)) + " has the value " + doc_.Describe(v) +
                               "; metadata values must be strings, " + kReexport);
      return false;
    }
    out_->metadata.emplace_back(doc_.Str(k), doc_.Str(v));
    return true;
  });
  return status;
}

Status HeaderParser::ParseTensor(std::string_view name, Index value) {
  if (doc_.TypeOf(value) != json::Type::kObject) {
    return TensorError(path_, Code::E_SAFETENSORS_ENTRY,
                       "the entry is " + doc_.Describe(value) +
                           ", expected an object with dtype, shape and data_offsets; " + kReexport,
                       name);
  }
  Index dtype = 0, shape = 0, offsets = 0;  // 0 is the root, never a member value: "absent"
  Status status;
  doc_.ForEachMember(value, [&](Index k, Index v) {
    std::string_view key = doc_.Str(k);
    if (key == "dtype") {
      dtype = v;
    } else if (key == "shape") {
      shape = v;
    } else if (key == "data_offsets") {
      offsets = v;
    } else {
      status = TensorError(
          path_, Code::E_SAFETENSORS_ENTRY,
          "unknown key " + Quoted(key) + " in the entry (allowed: dtype, shape, data_offsets); " + kReexport, name);
      return false;
    }
    return true;
  });
  if (!status.ok()) return status;
  for (auto [index, key] : {std::pair{dtype, "dtype"}, std::pair{shape, "shape"}, std::pair{offsets, "data_offsets"}}) {
    if (index == 0) {
      return TensorError(
          path_, Code::E_SAFETENSORS_ENTRY,
          std::string("the entry has no '") + key + "' (it needs dtype, shape and data_offsets); " + kReexport, name);
    }
  }

  Tensor t;
  t.name.assign(name);
  if (doc_.TypeOf(dtype) != json::Type::kString) {
    return TensorError(path_, Code::E_SAFETENSORS_DTYPE,
                       "dtype is " + doc_.Describe(dtype) + ", expected a string such as \"BF16\"; " + kReexport, name);
  }
  if (!ParseDtype(doc_.Str(dtype), &t.dtype)) {
    return TensorError(path_, Code::E_SAFETENSORS_DTYPE,
                       "unknown dtype " + doc_.Describe(dtype) + " (expected one of " + DtypeList() + "); " + kReexport,
                       name);
  }
  if (Status s = ParseShape(name, shape, &t); !s.ok()) return s;
  if (Status s = ParseOffsets(name, offsets, &t); !s.ok()) return s;

  if (Status s = CheckTensorBytes(path_, &t); !s.ok()) return s;
  out_->tensors.push_back(std::move(t));
  return Status::Ok();
}

Status HeaderParser::ParseShape(std::string_view name, Index value, Tensor* t) {
  if (doc_.TypeOf(value) != json::Type::kArray) {
    return TensorError(
        path_, Code::E_SAFETENSORS_SHAPE,
        "shape is " + doc_.Describe(value) + ", expected an array of non-negative integers; " + kReexport, name);
  }
  t->shape.reserve(doc_.At(value).len);
  Status status;
  doc_.ForEachElement(value, [&](size_t i, Index e) {
    if (doc_.IsU64(e)) {
      t->shape.push_back(doc_.U64(e));
      return true;
    }
    std::string where = "shape[" + std::to_string(i) + "] ";
    if (doc_.IsU64Overflow(e)) {
      status = TensorError(path_, Code::E_SAFETENSORS_OVERFLOW,
                           where + doc_.Describe(e) + " does not fit in 64 bits; " + kReexport, name);
    } else {
      status = TensorError(path_, Code::E_SAFETENSORS_SHAPE,
                           where + "is " + doc_.Describe(e) +
                               "; dimensions must be non-negative integers written without a fraction or exponent; " +
                               kReexport,
                           name);
    }
    return false;
  });
  return status;
}

Status HeaderParser::ParseOffsets(std::string_view name, Index value, Tensor* t) {
  if (doc_.TypeOf(value) != json::Type::kArray || doc_.At(value).len != 2) {
    std::string found = doc_.TypeOf(value) == json::Type::kArray ? std::to_string(doc_.At(value).len) + " values"
                                                                 : doc_.Describe(value);
    return TensorError(path_, Code::E_SAFETENSORS_OFFSETS,
                       "data_offsets is " + found + ", expected exactly two integers [begin, end]; " + kReexport, name);
  }
  uint64_t v[2];
  for (Index i = 0; i < 2; ++i) {
    Index e = value + 1 + i;  // both elements are scalars or the checks below fail on the first
    if (doc_.IsU64(e)) {
      v[i] = doc_.U64(e);
      continue;
    }
    std::string where = "data_offsets[" + std::to_string(i) + "] ";
    if (doc_.IsU64Overflow(e)) {
      return TensorError(path_, Code::E_SAFETENSORS_OVERFLOW,
                         where + doc_.Describe(e) + " does not fit in 64 bits; " + kReexport, name);
    }
    return TensorError(path_, Code::E_SAFETENSORS_OFFSETS,
                       where + "is " + doc_.Describe(e) + ", expected a non-negative integer; " + kReexport, name);
  }
  if (v[0] > v[1]) {
    return TensorError(
        path_, Code::E_SAFETENSORS_OFFSETS,
        "data_offsets [" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + "] end before they begin; " + kReexport,
        name);
  }
  t->begin = v[0];
  t->end = v[1];
  return Status::Ok();
}

// A JSON error as a safetensors status: the right code, the tensor when the error sits
// inside an entry, and the file offset of the offending byte.
Status JsonErrorStatus(const json::Error& err, const uint8_t* bytes, size_t len, const std::string& path) {
  std::string tensor;
  if (!err.path.empty() && err.path[0] != "__metadata__") tensor = Printable(err.path[0], 200);
  bool in_metadata = !err.path.empty() && err.path[0] == "__metadata__";
  Status s;
  switch (err.kind) {
    case json::Error::Kind::kUtf8:
      s = Status::Error(Code::E_SAFETENSORS_UTF8, "the header is not valid UTF-8: " + err.message + "; " + kReexport,
                        path, tensor);
      break;
    case json::Error::Kind::kNesting:
      s = Status::Error(
          Code::E_SAFETENSORS_NESTING,
          "the header JSON is " + err.message + " (a safetensors header needs 3); this is not a safetensors header",
          path, tensor);
      break;
    case json::Error::Kind::kDuplicateKey:
      if (err.path.empty() && err.key == "__metadata__") {
        s = Status::Error(Code::E_SAFETENSORS_DUPLICATE,
                          "__metadata__ appears twice in the header; " + std::string(kReexport), path);
      } else if (err.path.empty()) {
        s = Status::Error(Code::E_SAFETENSORS_DUPLICATE,
                          "the tensor name appears twice in the header, so readers may disagree on its bytes; " +
                              std::string(kReexport),
                          path, Printable(err.key, 200));
      } else if (in_metadata && err.path.size() == 1) {
        s = Status::Error(Code::E_SAFETENSORS_DUPLICATE,
                          "__metadata__ has the key " + Quoted(err.key) + " twice; " + kReexport, path);
      } else {
        s = Status::Error(Code::E_SAFETENSORS_DUPLICATE,
                          "the key " + Quoted(err.key) + " appears twice in the entry; " + kReexport, path, tensor);
      }
      break;
    case json::Error::Kind::kTooLarge:
      s = Status::Error(Code::E_SAFETENSORS_HEADER_SIZE,
                        "the header " + err.message + "; spark reads at most " + std::to_string(kMaxTensors) +
                            " tensors from one file (a checkpoint shard lists a few thousand)",
                        path);
      break;
    default: {
      // A header padded with NUL bytes instead of spaces is a known writer bug: say so.
      size_t i = err.offset;
      bool nul_padding = i < len && bytes[i] == 0;
      for (; nul_padding && i < len; ++i) nul_padding = bytes[i] == 0 || bytes[i] == ' ';
      std::string message = nul_padding
                                ? "the header ends in NUL bytes; safetensors headers may only be padded with spaces"
                                : "the header is not valid JSON: " + err.message;
      s = Status::Error(Code::E_SAFETENSORS_JSON, message + "; " + kReexport, path, tensor);
    }
  }
  return s.At(8 + static_cast<uint64_t>(err.offset));
}

}  // namespace

Status ParseHeaderBytes(const uint8_t* bytes, size_t len, uint64_t data_length, const std::string& path, Header* out) {
  *out = Header();
  out->path = path;
  out->header_length = len;
  out->data_start = 8 + static_cast<uint64_t>(len);
  out->data_length = data_length;
  auto file_size = CheckedAdd(out->data_start, data_length);
  if (!file_size) return Status::Error(Code::E_SAFETENSORS_OVERFLOW, "the file size passes 2^64-1", path);
  out->file_size = *file_size;
  if (len > kMaxHeaderLength) {
    return Status::Error(Code::E_SAFETENSORS_HEADER_SIZE,
                         "the header is " + std::to_string(len) + " bytes, more than the " +
                             std::to_string(kMaxHeaderLength) + " allowed",
                         path);
  }
  json::Document doc;
  json::Error err;
  json::Options options;
  options.max_nodes = kMaxHeaderValues;
  options.max_root_members = kMaxTensors + 1;  // and __metadata__
  if (!json::Parse(bytes, len, &doc, &err, options)) return JsonErrorStatus(err, bytes, len, path);
  Status status = HeaderParser(doc, path, out).Run();
  if (!status.ok()) {
    Header empty;
    std::swap(*out, empty);
  }
  return status;
}

Status ReadHeader(const std::string& path, Header* out) {
  *out = Header();
  out->path = path;
  // open() would stop at the NUL and read some other file.
  if (path.find('\0') != std::string::npos)
    return Status::Error(Code::E_USAGE, "the path contains a NUL byte", Printable(path, 200));
  Fd file;
  // O_NONBLOCK: opening a FIFO by mistake must not hang; it is refused below.
  if (Status s = OpenFile(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK, &file); !s.ok()) return s;
  struct stat st;
  if (fstat(file.get(), &st) != 0) return ErrnoStatus(errno, "fstat", path);
  if (!S_ISREG(st.st_mode)) {
    // Bad input, like a missing file (exit 2), not an I/O failure.
    return Status::Error(Code::E_NOT_A_FILE,
                         std::string(S_ISDIR(st.st_mode)    ? "is a directory"
                                     : S_ISFIFO(st.st_mode) ? "is a named pipe (FIFO)"
                                                            : "is not a regular file") +
                             ", expected a .safetensors file",
                         path);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    return Status::Error(
        Code::E_SAFETENSORS_TRUNCATED,
        "the file is " + std::to_string(size) +
            " bytes, shorter than the 8-byte header length every safetensors file starts with; re-download this file",
        path);
  }
  uint8_t prefix[8];
  size_t got = 0;
  if (Status s = PreadFull(file.get(), prefix, 8, 0, path, &got); !s.ok()) return s;
  if (got < 8)
    return Status::Error(Code::E_SAFETENSORS_TRUNCATED, "the file shrank while being read; re-download this file",
                         path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = n << 8 | prefix[i];
  if (n > kMaxHeaderLength) {
    return Status::Error(Code::E_SAFETENSORS_HEADER_SIZE,
                         "the header length field says " + std::to_string(n) + " bytes, more than the " +
                             std::to_string(kMaxHeaderLength) +
                             " the format allows; this is not a safetensors file or its first bytes are damaged",
                         path)
        .At(0);
  }
  if (n > size - 8) {
    return Status::Error(Code::E_SAFETENSORS_TRUNCATED,
                         "truncated: the header length field says " + std::to_string(n) + " bytes but only " +
                             std::to_string(size - 8) + " follow it; re-download this file",
                         path)
        .At(size);
  }
  std::vector<uint8_t> header;
  try {
    header.resize(n);
  } catch (const std::bad_alloc&) {
    return Status::Error(Code::E_INTERNAL, "out of memory reading a " + std::to_string(n) + "-byte header", path);
  }
  if (Status s = PreadFull(file.get(), header.data(), n, 8, path, &got); !s.ok()) return s;
  if (got < n)
    return Status::Error(Code::E_SAFETENSORS_TRUNCATED, "the file shrank while being read; re-download this file",
                         path);
  return ParseHeaderBytes(header.data(), header.size(), size - 8 - n, path, out);
}

}  // namespace spark::safetensors
