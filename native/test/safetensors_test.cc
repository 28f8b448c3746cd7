#include "core/format/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <string>

#include "test/scratch.h"
#include "test/testing.h"

using spark::Code;
using spark::Status;
using spark::safetensors::Header;

namespace {

Status Parse(const std::string& json, uint64_t data_length, Header* out) {
  return spark::safetensors::ParseHeaderBytes(reinterpret_cast<const uint8_t*>(json.data()), json.size(), data_length,
                                              "m.safetensors", out);
}

Code CodeOf(const std::string& json, uint64_t data_length) {
  Header h;
  return Parse(json, data_length, &h).code;
}

std::string Entry(const std::string& dtype, const std::string& shape, uint64_t begin, uint64_t end) {
  return "{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) + "," +
         std::to_string(end) + "]}";
}

// A scratch directory for files; removed by the OS's tmp cleaning, names are unique per run.
std::string TempDir() {
  static std::string dir = spark_test::ScratchDir("/tmp", "spark-safetensors-test");
  return dir.empty() ? std::string("/tmp") : dir;
}

// Writes 8-byte length + header + data_length bytes (a hole, so large sizes cost nothing).
std::string WriteFile(const std::string& name, const std::string& header, uint64_t data_length,
                      uint64_t length_field = UINT64_MAX) {
  std::string path = TempDir() + "/" + name;
  int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  uint64_t n = length_field == UINT64_MAX ? header.size() : length_field;
  uint8_t prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<uint8_t>(n >> (8 * i));
  bool ok = write(fd, prefix, 8) == 8 &&
            write(fd, header.data(), header.size()) == static_cast<ssize_t>(header.size()) &&
            ftruncate(fd, static_cast<off_t>(8 + header.size() + data_length)) == 0;
  close(fd);
  CHECK(ok);
  return path;
}

}  // namespace

TEST(ValidHeaderIsSortedWithFileOffsets) {
  Header h;
  std::string json = "  {\"b\":" + Entry("F32", "[2,3]", 8, 32) +
                     ",\"__metadata__\":{\"format\":\"pt\"},\"a\":" + Entry("BF16", "[4]", 0, 8) +
                     ",\"z\":" + Entry("U8", "[0]", 8, 8) + "}  ";
  Status s = Parse(json, 32, &h);
  CHECK(s.ok());
  CHECK_EQ(h.tensors.size(), 3u);
  CHECK_EQ(h.tensors[0].name, std::string("a"));
  CHECK_EQ(h.tensors[1].name, std::string("z"));  // zero-size at 8 sorts before [8, 32)
  CHECK_EQ(h.tensors[2].name, std::string("b"));
  CHECK_EQ(h.tensors[2].file_offset, 8 + json.size() + 8);
  CHECK_EQ(h.tensors[2].bytes, 24u);
  CHECK(h.tensors[2].shape == (std::vector<uint64_t>{2, 3}));
  CHECK(h.tensors[2].dtype == spark::safetensors::Dtype::F32);
  CHECK_EQ(h.metadata.size(), 1u);
  CHECK_EQ(h.metadata[0].second, std::string("pt"));
  CHECK_EQ(h.header_length, json.size());
  CHECK_EQ(h.data_start, 8 + json.size());
  CHECK_EQ(h.file_size, 8 + json.size() + 32);
}

TEST(EveryDtypeHasItsBitSize) {
  const std::pair<const char*, unsigned> table[] = {
      {"BOOL", 8},    {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6},     {"U8", 8},          {"I8", 8},
      {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8}, {"I16", 16},
      {"U16", 16},    {"F16", 16},    {"BF16", 16},   {"I32", 32},        {"U32", 32},        {"F32", 32},
      {"C64", 64},    {"F64", 64},    {"I64", 64},    {"U64", 64}};
  std::string json = "{";
  uint64_t at = 0;
  for (auto [name, bits] : table) {
    uint64_t bytes = 8 * bits / 8;  // shape [8]
    json += std::string(at ? "," : "") + "\"t_" + name + "\":" + Entry(name, "[8]", at, at + bytes);
    at += bytes;
    spark::safetensors::Dtype d;
    CHECK(spark::safetensors::ParseDtype(name, &d));
    CHECK_EQ(spark::safetensors::DtypeBits(d), bits);
  }
  json += "}";
  Header h;
  CHECK(Parse(json, at, &h).ok());
  CHECK_EQ(h.tensors.size(), 22u);
  CHECK(CodeOf("{\"a\":" + Entry("F6_E2M3", "[4]", 0, 3) + "}", 3) == Code::OK);
  CHECK(CodeOf("{\"a\":" + Entry("f32", "[1]", 0, 4) + "}", 4) == Code::E_SAFETENSORS_DTYPE);
  CHECK(CodeOf("{\"a\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,1]}}", 1) == Code::E_SAFETENSORS_DTYPE);
}

TEST(EmptyAndZeroSize) {
  CHECK(CodeOf("{}", 0) == Code::OK);
  CHECK(CodeOf("{\"__metadata__\":{}}", 0) == Code::OK);
  CHECK(CodeOf("{\"__metadata__\":null}", 0) == Code::OK);
  CHECK(CodeOf("{}", 1) == Code::E_SAFETENSORS_DATA_LENGTH);
  CHECK(CodeOf("{\"a\":" + Entry("F32", "[0,5]", 0, 0) + "}", 0) == Code::OK);
  CHECK(CodeOf("{\"a\":" + Entry("F32", "[]", 0, 4) + "}", 4) == Code::OK);  // a scalar
  // A zero-size tensor inside another's range is an overlap, as in the reference.
  CHECK(CodeOf("{\"a\":" + Entry("U8", "[8]", 0, 8) + ",\"b\":" + Entry("U8", "[0]", 4, 4) + "}", 8) ==
        Code::E_SAFETENSORS_LAYOUT);
}

TEST(SchemaErrors) {
  CHECK(CodeOf("[]", 0) == Code::E_SAFETENSORS_JSON);
  CHECK(CodeOf("\"x\"", 0) == Code::E_SAFETENSORS_JSON);
  CHECK(CodeOf("{\"a\":[1]}", 0) == Code::E_SAFETENSORS_ENTRY);
  CHECK(CodeOf("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":1}}", 1) ==
        Code::E_SAFETENSORS_ENTRY);
  CHECK(CodeOf("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1) == Code::E_SAFETENSORS_ENTRY);
  CHECK(CodeOf("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"dtype\":\"U8\"}}", 1) ==
        Code::E_SAFETENSORS_DUPLICATE);
  CHECK(CodeOf("{\"a\":" + Entry("U8", "[1]", 0, 1) + ",\"a\":" + Entry("U8", "[1]", 1, 2) + "}", 2) ==
        Code::E_SAFETENSORS_DUPLICATE);
  CHECK(CodeOf("{\"__metadata__\":{\"k\":1}}", 0) == Code::E_SAFETENSORS_METADATA);
  CHECK(CodeOf("{\"__metadata__\":[]}", 0) == Code::E_SAFETENSORS_METADATA);
  CHECK(CodeOf("{\"__metadata__\":{\"k\":\"a\",\"k\":\"b\"}}", 0) == Code::E_SAFETENSORS_DUPLICATE);
}

TEST(ErrorsNameTheTensor) {
  Header h;
  Status s = Parse("{\"a\":" + Entry("U8", "[1]", 0, 1) + ",\"a\":" + Entry("U8", "[1]", 1, 2) + "}", 2, &h);
  CHECK_EQ(s.tensor, std::string("a"));
  CHECK_EQ(s.path, std::string("m.safetensors"));
  CHECK(h.tensors.empty());
  s = Parse("{\"w\":{\"dtype\":\"U8\",\"shape\":[1,],\"data_offsets\":[0,1]}}", 1, &h);
  CHECK(s.code == Code::E_SAFETENSORS_JSON);
  CHECK_EQ(s.tensor, std::string("w"));
  CHECK(s.has_offset && s.offset == 8 + 29);
  s = Parse("{\"w\\n2\":" + Entry("U8", "[1]", 0, 2) + "}", 2, &h);
  CHECK(s.code == Code::E_SAFETENSORS_OFFSETS);
  CHECK_EQ(s.tensor, std::string("w\\x0A2"));  // printable, one line
  CHECK(s.ToString().find('\n') == std::string::npos);
}

TEST(ShapeErrors) {
  for (const char* shape : {"[-1]", "[1.5]", "[\"3\"]", "[1e3]", "[null]", "[[2]]", "3", "{}"}) {
    CHECK(CodeOf(std::string("{\"a\":{\"dtype\":\"U8\",\"shape\":") + shape + ",\"data_offsets\":[0,3]}}", 3) ==
          Code::E_SAFETENSORS_SHAPE);
  }
  CHECK(CodeOf("{\"a\":" + Entry("U8", "[18446744073709551616]", 0, 0) + "}", 0) == Code::E_SAFETENSORS_OVERFLOW);
  CHECK(CodeOf("{\"a\":" + Entry("U8", "[4294967296,4294967296]", 0, 0) + "}", 0) == Code::E_SAFETENSORS_OVERFLOW);
  CHECK(CodeOf("{\"a\":" + Entry("F32", "[4611686018427387904]", 0, 0) + "}", 0) == Code::E_SAFETENSORS_OVERFLOW);
  // F4 with an odd count is a fractional byte count, even when the offsets round it.
  CHECK(CodeOf("{\"a\":" + Entry("F4", "[3]", 0, 2) + "}", 2) == Code::E_SAFETENSORS_SHAPE);
  CHECK(CodeOf("{\"a\":" + Entry("F4", "[3,2]", 0, 3) + "}", 3) == Code::OK);
  CHECK(CodeOf("{\"a\":" + Entry("F6_E3M2", "[1]", 0, 1) + "}", 1) == Code::E_SAFETENSORS_SHAPE);
}

TEST(OffsetErrors) {
  auto with = [](const std::string& offsets) {
    return CodeOf("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":" + offsets + "}}", 4);
  };
  CHECK(with("[0,4]") == Code::OK);
  CHECK(with("[0,4,8]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[4]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("{}") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[-1,4]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[0,4.0]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[[0],4]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[4,0]") == Code::E_SAFETENSORS_OFFSETS);
  CHECK(with("[0,18446744073709551616]") == Code::E_SAFETENSORS_OVERFLOW);
  CHECK(with("[0,5]") == Code::E_SAFETENSORS_OFFSETS);  // 5 bytes for 4 elements of U8
}

TEST(LayoutErrors) {
  Header h;
  Status s = Parse("{\"a\":" + Entry("U8", "[8]", 0, 8) + ",\"b\":" + Entry("U8", "[8]", 4, 12) + "}", 12, &h);
  CHECK(s.code == Code::E_SAFETENSORS_LAYOUT);
  CHECK_EQ(s.tensor, std::string("b"));
  CHECK(s.message.find("overlaps tensor 'a' at data offset 4") != std::string::npos);
  s = Parse("{\"a\":" + Entry("U8", "[8]", 0, 8) + ",\"b\":" + Entry("U8", "[8]", 16, 24) + "}", 24, &h);
  CHECK(s.code == Code::E_SAFETENSORS_LAYOUT);
  CHECK(s.message.find("8 bytes belong to no tensor") != std::string::npos);
  CHECK(CodeOf("{\"a\":" + Entry("U8", "[8]", 8, 16) + "}", 16) == Code::E_SAFETENSORS_LAYOUT);
  s = Parse("{\"a\":" + Entry("U8", "[8]", 0, 8) + "}", 20, &h);
  CHECK(s.code == Code::E_SAFETENSORS_DATA_LENGTH);
  CHECK(s.message.find("12 trailing bytes") != std::string::npos);
  s = Parse("{\"a\":" + Entry("U8", "[8]", 0, 8) + ",\"b\":" + Entry("U8", "[98304000]", 8, 98304008) + "}", 4096, &h);
  CHECK(s.code == Code::E_SHARD_TRUNCATED);
  CHECK_EQ(s.tensor, std::string("b"));
  CHECK(s.message.find("the header implies 98304008 bytes of data, the file holds 4096") != std::string::npos);
}

TEST(JsonErrorsMapToCodes) {
  CHECK(CodeOf("{\"a\":1,}", 0) == Code::E_SAFETENSORS_JSON);
  CHECK(CodeOf(std::string(100000, '['), 0) == Code::E_SAFETENSORS_NESTING);
  CHECK(CodeOf("{\"\xFF\":1}", 0) == Code::E_SAFETENSORS_UTF8);
  CHECK(CodeOf("", 0) == Code::E_SAFETENSORS_JSON);
  Header h;
  Status s = Parse(std::string("{}\0\0\0\0", 6), 0, &h);
  CHECK(s.code == Code::E_SAFETENSORS_JSON);
  CHECK(s.message.find("NUL") != std::string::npos);
  CHECK(s.has_offset && s.offset == 10);
}

TEST(OffsetsPastTwoTo53StayExact) {
  Header h;
  uint64_t big = (uint64_t{1} << 60) + 3;
  Status s = Parse(
      "{\"a\":" + Entry("U8", "[3]", 0, 3) + ",\"b\":" + Entry("U8", "[" + std::to_string(big) + "]", 3, big + 3) + "}",
      big + 3, &h);
  CHECK(s.ok());
  CHECK_EQ(h.tensors[1].bytes, big);
  CHECK_EQ(h.tensors[1].file_offset, h.data_start + 3);
  CHECK_EQ(h.file_size, h.data_start + big + 3);
  CHECK(CodeOf("{}", UINT64_MAX) == Code::E_SAFETENSORS_OVERFLOW);
}

TEST(ReadHeaderFromFiles) {
  Header h;
  std::string json = "{\"a\":" + Entry("U8", "[4294967301]", 0, 4294967301) +
                     ",\"b\":" + Entry("F32", "[2]", 4294967301, 4294967309) + "}";
  std::string path = WriteFile("sparse.safetensors", json, 4294967309);
  Status s = spark::safetensors::ReadHeader(path, &h);
  CHECK(s.ok());
  CHECK_EQ(h.tensors[1].file_offset, 8 + json.size() + 4294967301);
  CHECK_EQ(h.file_size, 8 + json.size() + 4294967309);

  CHECK(spark::safetensors::ReadHeader(TempDir() + "/missing.safetensors", &h).code == Code::E_FILE_NOT_FOUND);
  // A directory or FIFO where a shard belongs is bad input (exit 2), and a FIFO never blocks.
  CHECK(spark::safetensors::ReadHeader(TempDir(), &h).code == Code::E_NOT_A_FILE);
  std::string fifo = TempDir() + "/fifo.safetensors";
  CHECK(mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(spark::safetensors::ReadHeader(fifo, &h).code == Code::E_NOT_A_FILE);
  CHECK(spark::safetensors::ReadHeader(path + std::string(1, '\0') + "x", &h).code == Code::E_USAGE);
  std::string tiny = TempDir() + "/tiny.safetensors";
  int fd = open(tiny.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  CHECK(write(fd, "abc", 3) == 3);
  close(fd);
  CHECK(spark::safetensors::ReadHeader(tiny, &h).code == Code::E_SAFETENSORS_TRUNCATED);
  CHECK(spark::safetensors::ReadHeader(WriteFile("cap.safetensors", "{}", 0, 100000001), &h).code ==
        Code::E_SAFETENSORS_HEADER_SIZE);
  CHECK(spark::safetensors::ReadHeader(WriteFile("huge.safetensors", "{}", 0, UINT64_MAX - 1), &h).code ==
        Code::E_SAFETENSORS_HEADER_SIZE);
  CHECK(spark::safetensors::ReadHeader(WriteFile("short.safetensors", "{}", 0, 3), &h).code ==
        Code::E_SAFETENSORS_TRUNCATED);
  s = spark::safetensors::ReadHeader(WriteFile("cut.safetensors", json, 100), &h);
  CHECK(s.code == Code::E_SHARD_TRUNCATED);
  CHECK_EQ(s.tensor, std::string("a"));
  CHECK(spark::safetensors::ReadHeader(WriteFile("long.safetensors", json, 4294967310), &h).code ==
        Code::E_SAFETENSORS_DATA_LENGTH);
  std::string cmd = "rm -rf '" + TempDir() + "'";
  CHECK(std::system(cmd.c_str()) == 0);
}

TEST(HeaderAtTheCapsValidatesQuickly) {
  // kMaxTensors entries filling close to the 100,000,000-byte cap (in slow builds as few bytes
  // as the names allow), in reverse offset order so the sort has work to do.
#ifdef SPARK_TEST_SLOW_BUILD
  const size_t target = 20'000'000;
#else
  const size_t target = 99'000'000;
#endif
  const uint64_t n = spark::safetensors::kMaxTensors;
  const uint64_t bytes = 2048 * 7168;
  auto entry = [&](uint64_t i, const std::string& pad) {
    return "\"model.layers." + std::to_string(i) + ".mlp.experts." + pad +
           ".weight\":" + Entry("F8_E4M3", "[2048,7168]", i * bytes, (i + 1) * bytes);
  };
  // Long names, so the byte cap and the tensor cap are reached at once (slow builds: short names).
  const size_t bare = entry(n, "").size() + 1;
  const std::string pad(target / n > bare ? target / n - bare : 0, 'x');
  std::vector<std::string> entries;
  size_t total = 2;
  for (uint64_t i = 0; i < n; ++i) {
    entries.push_back(entry(i, pad));
    total += entries.back().size() + 1;
  }
  CHECK(total <= spark::safetensors::kMaxHeaderLength);
  std::string json = "{";
  for (size_t i = entries.size(); i-- > 0;) json += entries[i] + (i ? "," : "}");
  Header h;
  std::clock_t t0 = std::clock();
  Status s = Parse(json, entries.size() * bytes, &h);
  double secs = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
  if (!s.ok()) std::printf("  %s\n", s.message.c_str());
  CHECK(s.ok());
  CHECK_EQ(h.tensors.size(), entries.size());
  CHECK(!h.tensors.empty() && h.tensors.back().end == entries.size() * bytes);
  std::printf("  validated a %zu-byte header (%zu tensors) in %.3f s of CPU\n", json.size(), entries.size(), secs);
#ifdef SPARK_TEST_SLOW_BUILD
  CHECK(secs < 30.0);
#else
  CHECK(secs < 3.0);
#endif
}

TEST(TensorAndValueCapsAreOneLineErrors) {
  // Entries past kMaxTensors and __metadata__ (empty entries: the parser stops counting first).
  std::string json = "{";
  for (uint64_t i = 0; i <= spark::safetensors::kMaxTensors + 1; ++i)
    json += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{}";
  json += "}";
  Header h;
  Status s = Parse(json, 0, &h);
  CHECK(s.code == Code::E_SAFETENSORS_HEADER_SIZE);
  CHECK_EQ(s.message, std::string("the header lists more than 262145 entries; spark reads at most 262144 tensors from "
                                  "one file (a checkpoint shard lists a few thousand)"));
  CHECK(h.tensors.empty());
  // One tensor past the cap with no __metadata__: within the parser's member cap, still refused.
  json = "{";
  for (uint64_t i = 0; i <= spark::safetensors::kMaxTensors; ++i)
    json += (i ? ",\"t" : "\"t") + std::to_string(i) + "\":{}";
  s = Parse(json + "}", 0, &h);
  CHECK(s.code == Code::E_SAFETENSORS_HEADER_SIZE);
  CHECK_EQ(s.message, std::string("the header lists 262145 tensors; spark reads at most 262144 tensors from one file "
                                  "(a checkpoint shard lists a few thousand)"));
  // At the cap with __metadata__ beside it: counted, then refused only for what its entries are.
  json.replace(1, json.find(',') - 1, "\"__metadata__\":{}");
  s = Parse(json + "}", 0, &h);
  CHECK(s.code != Code::E_SAFETENSORS_HEADER_SIZE);
  // A shape of millions of zeros: few tensors, but past the values a header may hold.
  std::string zeros;
  zeros.reserve(2 * spark::safetensors::kMaxHeaderValues + 8);
  zeros = "[0";
  for (uint64_t i = 0; i < spark::safetensors::kMaxHeaderValues; ++i) zeros += ",0";
  zeros += "]";
  s = Parse("{\"a\":" + Entry("U8", zeros, 0, 0) + "}", 0, &h);
  CHECK(s.code == Code::E_SAFETENSORS_HEADER_SIZE);
  CHECK_EQ(s.message.rfind("the header holds more than 4194304 JSON values; spark reads at most 262144 tensors", 0),
           0u);
}

int main() { return spark_test::RunAll("safetensors_test"); }
