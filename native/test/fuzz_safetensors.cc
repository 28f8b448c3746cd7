// libFuzzer target for the safetensors header parser and the JSON parser under it.
// Built and run by native/test/fuzz.sh (clang++ -fsanitize=fuzzer,address,undefined).
//
// Input: 8 bytes little-endian data length, then the header bytes. Besides "no crash, no
// sanitizer report", it checks properties any accepted header must have, and that the JSON
// parser's document survives a write/parse round trip unchanged.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/format/json.h"
#include "core/format/safetensors.h"

namespace {

void Require(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckAccepted(const spark::safetensors::Header& h, size_t header_len, uint64_t data_length) {
  uint64_t expected = 0;
  for (const auto& t : h.tensors) {
    Require(t.begin == expected);
    Require(t.end >= t.begin && t.bytes == t.end - t.begin);
    Require(t.file_offset == 8 + header_len + t.begin);
    unsigned __int128 bits = spark::safetensors::DtypeBits(t.dtype);
    for (uint64_t d : t.shape) bits *= d;  // may wrap only if the parser missed an overflow
    Require(bits % 8 == 0 && bits / 8 == t.bytes);
    expected = t.end;
  }
  Require(expected == data_length);
  Require(h.data_start == 8 + header_len && h.file_size == h.data_start + data_length);
}

void AppendEscaped(std::string& out, std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      out += "\\u00";
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 15]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// Canonical JSON text of the subtree at i.
void Write(const spark::json::Document& d, uint32_t i, std::string& out) {
  using spark::json::Type;
  switch (d.TypeOf(i)) {
    case Type::kNull:
      out += "null";
      break;
    case Type::kFalse:
      out += "false";
      break;
    case Type::kTrue:
      out += "true";
      break;
    case Type::kNumber:
      out += d.NumberText(i);
      break;
    case Type::kString:
      AppendEscaped(out, d.Str(i));
      break;
    case Type::kArray: {
      out.push_back('[');
      bool first = true;
      d.ForEachElement(i, [&](size_t, uint32_t e) {
        if (!first) out.push_back(',');
        first = false;
        Write(d, e, out);
        return true;
      });
      out.push_back(']');
      break;
    }
    case Type::kObject: {
      out.push_back('{');
      bool first = true;
      d.ForEachMember(i, [&](uint32_t k, uint32_t v) {
        if (!first) out.push_back(',');
        first = false;
        AppendEscaped(out, d.Str(k));
        out.push_back(':');
        Write(d, v, out);
        return true;
      });
      out.push_back('}');
      break;
    }
  }
}

void CheckJsonRoundTrip(const uint8_t* data, size_t size) {
  spark::json::Document doc;
  spark::json::Error err;
  if (!spark::json::Parse(data, size, &doc, &err)) {
    Require(err.kind != spark::json::Error::Kind::kNone && err.offset <= size && !err.message.empty());
    return;
  }
  std::string once;
  Write(doc, doc.Root(), once);
  spark::json::Document again;
  Require(spark::json::Parse(reinterpret_cast<const uint8_t*>(once.data()), once.size(), &again, &err));
  Require(again.NodeCount() == doc.NodeCount());
  std::string twice;
  Write(again, again.Root(), twice);
  Require(once == twice);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint64_t data_length = 0;
  if (size >= 8) {
    for (int i = 7; i >= 0; --i) data_length = data_length << 8 | data[i];
    data += 8;
    size -= 8;
  }
  spark::safetensors::Header header;
  spark::Status status = spark::safetensors::ParseHeaderBytes(data, size, data_length, "fuzz.safetensors", &header);
  if (status.ok()) {
    CheckAccepted(header, size, data_length);
  } else {
    std::string line = status.ToString();
    Require(!status.message.empty() && line.find('\n') == std::string::npos);
    Require(header.tensors.empty());
  }
  CheckJsonRoundTrip(data, size);
  return 0;
}
