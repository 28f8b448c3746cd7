#include "core/format/safetensors_check.h"

#include <algorithm>
#include <vector>

#include "core/base/checked.h"
#include "core/base/utf8.h"

namespace spark::safetensors {

namespace {

// "[2, 3]", shortened for absurd ranks.
std::string ShapeText(const std::vector<uint64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i == 8) {
      out += ", ... (" + std::to_string(shape.size()) + " dimensions)";
      break;
    }
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace

std::string Quoted(std::string_view name) { return "'" + Printable(name, 200) + "'"; }

Status TensorError(const std::string& path, Code code, std::string message, std::string_view tensor) {
  return Status::Error(code, std::move(message), path, tensor.empty() ? std::string() : Printable(tensor, 200));
}

Status CheckTensorBytes(const std::string& path, Tensor* t) {
  uint64_t elements = 1;
  for (uint64_t dim : t->shape) {
    auto product = CheckedMul(elements, dim);
    if (!product) {
      return TensorError(path, Code::E_SAFETENSORS_OVERFLOW,
                         "shape " + ShapeText(t->shape) + " has more than 2^64-1 elements; " + kReexport, t->name);
    }
    elements = *product;
  }
  unsigned bits = DtypeBits(t->dtype);
  unsigned __int128 total_bits = static_cast<unsigned __int128>(elements) * bits;
  if (total_bits % 8 != 0) {
    return TensorError(path, Code::E_SAFETENSORS_SHAPE,
                       "shape " + ShapeText(t->shape) + " of " + DtypeName(t->dtype) + " is " +
                           std::to_string(elements) + " elements x " + std::to_string(bits) +
                           " bits, not a whole number of bytes; " + kReexport,
                       t->name);
  }
  unsigned __int128 need = total_bits / 8;
  if (need > UINT64_MAX) {
    return TensorError(
        path, Code::E_SAFETENSORS_OVERFLOW,
        "shape " + ShapeText(t->shape) + " of " + DtypeName(t->dtype) + " needs more than 2^64-1 bytes; " + kReexport,
        t->name);
  }
  t->bytes = t->end - t->begin;
  if (t->bytes != static_cast<uint64_t>(need)) {
    return TensorError(path, Code::E_SAFETENSORS_OFFSETS,
                       "data_offsets [" + std::to_string(t->begin) + ", " + std::to_string(t->end) + "] hold " +
                           std::to_string(t->bytes) + " bytes but shape " + ShapeText(t->shape) + " of " +
                           DtypeName(t->dtype) + " needs " + std::to_string(static_cast<uint64_t>(need)) + "; " +
                           kReexport,
                       t->name);
  }
  return Status::Ok();
}

Status CheckLayout(Header* h) {
  std::vector<Tensor>& tensors = h->tensors;
  // Sort small keys, not the tensors (each holds a name and a shape), then move each tensor
  // once. Ties keep header order, so zero-size tensors sort before the tensor they touch.
  struct Key {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Key> keys(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) keys[i] = Key{tensors[i].begin, tensors[i].end, i};
  auto by_offset = [](const Key& a, const Key& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; };
  if (!std::is_sorted(keys.begin(), keys.end(), by_offset)) {
    std::stable_sort(keys.begin(), keys.end(), by_offset);
    std::vector<Tensor> sorted;
    sorted.reserve(tensors.size());
    for (const Key& k : keys) sorted.push_back(std::move(tensors[k.index]));
    tensors.swap(sorted);
  }
  uint64_t expected = 0;
  const Tensor* prev = nullptr;
  for (Tensor& t : tensors) {
    if (t.begin > expected) {
      std::string what = prev == nullptr
                             ? "the first tensor begins at data offset " + std::to_string(t.begin) + ", not 0"
                             : "begins at data offset " + std::to_string(t.begin) + " but tensor " +
                                   Quoted(prev->name) + " ends at " + std::to_string(expected);
      return TensorError(h->path, Code::E_SAFETENSORS_LAYOUT,
                         what + ": " + std::to_string(t.begin - expected) + " bytes belong to no tensor; " + kReexport,
                         t.name)
          .At(h->data_start + expected);
    }
    if (t.begin < expected) {
      return TensorError(h->path, Code::E_SAFETENSORS_LAYOUT,
                         "overlaps tensor " + Quoted(prev->name) + " at data offset " + std::to_string(t.begin) + " (" +
                             Quoted(prev->name) + " spans [" + std::to_string(prev->begin) + ", " +
                             std::to_string(prev->end) + ")); " + kReexport,
                         t.name)
          .At(h->data_start + t.begin);
    }
    auto file_offset = CheckedAdd(h->data_start, t.begin);
    if (!file_offset)
      return TensorError(h->path, Code::E_SAFETENSORS_OVERFLOW,
                         "the file offset passes 2^64-1; " + std::string(kReexport), t.name);
    t.file_offset = *file_offset;
    expected = t.end;
    prev = &t;
  }
  uint64_t have = h->data_length;
  if (expected > have) {
    const Tensor* cut = nullptr;
    for (const Tensor& t : tensors) {
      if (t.end > have) {
        cut = &t;
        break;
      }
    }
    return TensorError(h->path, Code::E_SHARD_TRUNCATED,
                       "truncated: the header implies " + std::to_string(expected) + " bytes of data, the file holds " +
                           std::to_string(have) + "; re-download this file",
                       cut->name)
        .At(h->data_start + have);
  }
  if (expected < have) {
    return TensorError(h->path, Code::E_SAFETENSORS_DATA_LENGTH,
                       "the file holds " + std::to_string(have) + " bytes of data but the tensors end at " +
                           std::to_string(expected) + ": " + std::to_string(have - expected) +
                           " trailing bytes belong to no tensor; " + kReexport)
        .At(h->data_start + expected);
  }
  return Status::Ok();
}

}  // namespace spark::safetensors
