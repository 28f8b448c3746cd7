#include "core/format/json.h"
#include "core/base/utf8.h"

#include <ctime>
#include <string>

#include "test/testing.h"

using spark::json::Document;
using spark::json::Error;
using spark::json::Type;

namespace {

bool ParseText(const std::string& text, Document* doc, Error* err, size_t max_depth = 64) {
  spark::json::Options options;
  options.max_depth = max_depth;
  return spark::json::Parse(reinterpret_cast<const uint8_t*>(text.data()), text.size(), doc, err, options);
}

// Parses and returns the error kind (kNone on success).
Error::Kind KindOf(const std::string& text) {
  Document doc;
  Error err;
  ParseText(text, &doc, &err);
  return err.kind;
}

}  // namespace

TEST(ParsesScalarsAndContainers) {
  Document doc;
  Error err;
  CHECK(ParseText(R"( {"a": [1, 2.5, -3, true, false, null, "x"], "b": {}} )", &doc, &err));
  CHECK(doc.TypeOf(doc.Root()) == Type::kObject);
  CHECK_EQ(doc.At(doc.Root()).len, 2u);
  std::string seen;
  doc.ForEachMember(doc.Root(), [&](uint32_t k, uint32_t v) {
    seen += std::string(doc.Str(k)) + ":" + std::to_string(static_cast<int>(doc.TypeOf(v))) + ";";
    return true;
  });
  CHECK_EQ(seen, std::string("a:5;b:6;"));
  uint32_t arr = doc.Root() + 2;
  CHECK_EQ(doc.At(arr).len, 7u);
  std::string items;
  doc.ForEachElement(arr, [&](size_t, uint32_t e) {
    items += doc.Describe(e) + " ";
    return true;
  });
  CHECK_EQ(items, std::string("1 2.5 -3 true false null \"x\" "));
  CHECK(doc.IsU64(arr + 1));
  CHECK(!doc.IsU64(arr + 2));
  CHECK(!doc.IsU64(arr + 3));
}

TEST(IntegersStayExactPastTwoTo53) {
  Document doc;
  Error err;
  CHECK(ParseText("[9007199254740993, 18446744073709551615, 18446744073709551616, 0, 99999999999999999999999]", &doc,
                  &err));
  CHECK(doc.IsU64(1) && doc.U64(1) == 9007199254740993ULL);
  CHECK(doc.IsU64(2) && doc.U64(2) == 18446744073709551615ULL);
  CHECK(!doc.IsU64(3) && doc.IsU64Overflow(3));
  CHECK_EQ(doc.NumberText(3), std::string("18446744073709551616"));
  CHECK(doc.IsU64(4) && doc.U64(4) == 0);
  CHECK(doc.IsU64Overflow(5));
  CHECK_EQ(doc.NumberText(5), std::string("99999999999999999999999"));
}

TEST(NonIntegerNumbersKeepTheirText) {
  Document doc;
  Error err;
  CHECK(ParseText("[1e3, 1.0, -0, 2E-2, 0.5e+1]", &doc, &err));
  for (uint32_t i = 1; i <= 5; ++i) CHECK(!doc.IsU64(i) && !doc.IsU64Overflow(i));
  CHECK_EQ(doc.NumberText(1), std::string("1e3"));
  CHECK_EQ(doc.NumberText(3), std::string("-0"));
  CHECK_EQ(doc.NumberText(5), std::string("0.5e+1"));
}

TEST(RejectsMalformedNumbers) {
  for (const char* bad :
       {"01", "-", "1.", ".5", "1e", "1e+", "+1", "0x10", "NaN", "Infinity", "-Infinity", "1.5.2", "--1"}) {
    CHECK(KindOf(std::string("[") + bad + "]") == Error::Kind::kSyntax);
  }
}

TEST(RejectsExtensions) {
  CHECK(KindOf("[1,]") == Error::Kind::kSyntax);
  CHECK(KindOf("{\"a\":1,}") == Error::Kind::kSyntax);
  CHECK(KindOf("[1 2]") == Error::Kind::kSyntax);
  CHECK(KindOf("{\"a\" 1}") == Error::Kind::kSyntax);
  CHECK(KindOf("{a:1}") == Error::Kind::kSyntax);
  CHECK(KindOf("{'a':1}") == Error::Kind::kSyntax);
  CHECK(KindOf("[1] // c") == Error::Kind::kSyntax);
  CHECK(KindOf("/* c */ [1]") == Error::Kind::kSyntax);
  CHECK(KindOf("[1][2]") == Error::Kind::kSyntax);
  CHECK(KindOf("") == Error::Kind::kSyntax);
  CHECK(KindOf("   ") == Error::Kind::kSyntax);
  CHECK(KindOf("[tru]") == Error::Kind::kSyntax);
  CHECK(KindOf("[nul") == Error::Kind::kSyntax);
  CHECK(KindOf("[") == Error::Kind::kSyntax);
  CHECK(KindOf("{\"a\":") == Error::Kind::kSyntax);
  CHECK(KindOf("\"abc") == Error::Kind::kSyntax);
  CHECK(KindOf("\f[1]") == Error::Kind::kSyntax);        // form feed is not JSON whitespace
  CHECK(KindOf("[1]\xC2\xA0") == Error::Kind::kSyntax);  // nor is U+00A0
}

TEST(MaxNodesBoundsTheTape) {
  spark::json::Options options;
  options.max_nodes = 5;
  Document doc;
  Error err;
  const std::string ok = "[0,1,2,3]";  // 5 nodes: the array and its 4 elements
  CHECK(spark::json::Parse(reinterpret_cast<const uint8_t*>(ok.data()), ok.size(), &doc, &err, options));
  const std::string more = "[0,1,2,3,4,5,6,7]";
  CHECK(!spark::json::Parse(reinterpret_cast<const uint8_t*>(more.data()), more.size(), &doc, &err, options));
  CHECK(err.kind == Error::Kind::kTooLarge);
  CHECK_EQ(err.message, std::string("holds more than 5 JSON values"));
  CHECK(doc.NodeCount() <= 7u);
  spark::json::Options members;
  members.max_root_members = 2;
  const std::string two = R"({"a":[1,2,3],"b":{}})", three = R"({"a":1,"b":2,"c":3})";
  CHECK(spark::json::Parse(reinterpret_cast<const uint8_t*>(two.data()), two.size(), &doc, &err, members));
  CHECK(!spark::json::Parse(reinterpret_cast<const uint8_t*>(three.data()), three.size(), &doc, &err, members));
  CHECK(err.kind == Error::Kind::kTooLarge);
  CHECK_EQ(err.message, std::string("lists more than 2 entries"));
}

TEST(WhitespaceAroundTheValue) {
  CHECK(KindOf(" \t\r\n{}\n\r\t ") == Error::Kind::kNone);
  CHECK(KindOf("{} ") == Error::Kind::kNone);
}

TEST(RejectsNulAnywhere) {
  CHECK(KindOf(std::string("{}\0", 3)) == Error::Kind::kSyntax);
  CHECK(KindOf(std::string("{}   \0\0\0", 8)) == Error::Kind::kSyntax);
  CHECK(KindOf(std::string("[\"a\0b\"]", 7)) == Error::Kind::kSyntax);
  CHECK(KindOf(std::string("\0{}", 3)) == Error::Kind::kSyntax);
  Document doc;
  Error err;
  ParseText(std::string("{}  \0", 5), &doc, &err);
  CHECK_EQ(err.offset, 4u);
  CHECK(err.message.find("NUL") != std::string::npos);
}

TEST(StringsDecodeEscapes) {
  Document doc;
  Error err;
  CHECK(ParseText(R"(["a\"b\\c\/d\b\f\n\r\t", "\u00e9\u4e2d\ud83d\ude00", "é"])", &doc, &err));
  CHECK_EQ(std::string(doc.Str(1)), std::string("a\"b\\c/d\b\f\n\r\t"));
  CHECK_EQ(std::string(doc.Str(2)), std::string("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80"));
  CHECK_EQ(std::string(doc.Str(3)), std::string("\xC3\xA9"));
}

TEST(RejectsBadStrings) {
  CHECK(KindOf("[\"a\x01\"]") == Error::Kind::kSyntax);
  CHECK(KindOf("[\"a\nb\"]") == Error::Kind::kSyntax);
  CHECK(KindOf(R"(["\x"])") == Error::Kind::kSyntax);
  CHECK(KindOf(R"(["\u12"])") == Error::Kind::kSyntax);
  CHECK(KindOf(R"(["\u12g4"])") == Error::Kind::kSyntax);
  CHECK(KindOf(R"(["\ud800"])") == Error::Kind::kUtf8);
  CHECK(KindOf(R"(["\udc00"])") == Error::Kind::kUtf8);
  CHECK(KindOf(R"(["\ud800\u0041"])") == Error::Kind::kUtf8);
  CHECK(KindOf(R"(["\ud800x"])") == Error::Kind::kUtf8);
}

TEST(Utf8Validation) {
  auto bad_at = [](const std::string& s) {
    return spark::FindInvalidUtf8(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  };
  CHECK_EQ(bad_at("plain ascii text, long enough"), 29u);
  CHECK_EQ(bad_at("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF"), 13u);
  CHECK_EQ(bad_at("ab\xC0\xAF"), 2u);          // overlong '/'
  CHECK_EQ(bad_at("ab\xE0\x80\xAF"), 2u);      // overlong
  CHECK_EQ(bad_at("ab\xED\xA0\x80"), 2u);      // surrogate U+D800
  CHECK_EQ(bad_at("ab\xF4\x90\x80\x80"), 2u);  // past U+10FFFF
  CHECK_EQ(bad_at("ab\xF5\x80\x80\x80"), 2u);
  CHECK_EQ(bad_at("ab\xFF"), 2u);
  CHECK_EQ(bad_at("ab\x80"), 2u);            // stray continuation
  CHECK_EQ(bad_at("abcdefgh\xE4\xB8"), 8u);  // truncated at the end
  CHECK_EQ(bad_at("ab\xE4\x41\x41"), 2u);
  CHECK(KindOf("[\"\xFF\"]") == Error::Kind::kUtf8);
  Document doc;
  Error err;
  ParseText("{\"ok\": \"\xC3\xA9\", \"k\": \"\xC3\x28\"}", &doc, &err);
  CHECK(err.kind == Error::Kind::kUtf8);
  CHECK_EQ(err.offset, 19u);
}

TEST(NestingIsCapped) {
  CHECK(KindOf(std::string(100000, '[')) == Error::Kind::kNesting);
  std::string deep = std::string(64, '[') + std::string(64, ']');
  CHECK(KindOf(deep) == Error::Kind::kNone);
  CHECK(KindOf("[" + deep + "]") == Error::Kind::kNesting);
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += "{\"a\":";
  CHECK(KindOf(objects) == Error::Kind::kNesting);
  Document doc;
  Error err;
  CHECK(!ParseText("[[[1]]]", &doc, &err, 2));
  CHECK(err.kind == Error::Kind::kNesting);
  CHECK_EQ(err.offset, 2u);
}

TEST(DuplicateKeysAreRejectedWithTheirPath) {
  Document doc;
  Error err;
  CHECK(!ParseText(R"({"t": {"dtype": "F32", "shape": [], "dtype": "F16"}})", &doc, &err));
  CHECK(err.kind == Error::Kind::kDuplicateKey);
  CHECK_EQ(err.key, std::string("dtype"));
  CHECK_EQ(err.path.size(), 1u);
  CHECK_EQ(err.path[0], std::string("t"));
  CHECK_EQ(err.offset, 36u);
  // Same key in different objects is fine; escapes are compared decoded.
  CHECK(KindOf(R"({"a": {"x": 1}, "b": {"x": 2}})") == Error::Kind::kNone);
  CHECK(KindOf(R"({"a": 1, "\u0061": 2})") == Error::Kind::kDuplicateKey);
}

TEST(DuplicateKeysInLargeObjects) {
  std::string big = "{";
  for (int i = 0; i < 5000; ++i) big += "\"k" + std::to_string(i) + "\": {\"n\": [" + std::to_string(i) + "]},";
  std::string ok = big;
  ok.back() = '}';
  CHECK(KindOf(ok) == Error::Kind::kNone);
  CHECK(KindOf(big + "\"k4321\": 0}") == Error::Kind::kDuplicateKey);
  CHECK(KindOf(big + "\"k3\": 0}") == Error::Kind::kDuplicateKey);
  // Right at the switch from a linear scan to the hash set.
  for (int members = 14; members <= 18; ++members) {
    std::string obj = "{";
    for (int i = 0; i < members; ++i) obj += "\"k" + std::to_string(i) + "\":0,";
    std::string unique = obj;
    unique.back() = '}';
    CHECK(KindOf(unique) == Error::Kind::kNone);
    for (int d = 0; d < members; ++d)
      CHECK(KindOf(obj + "\"k" + std::to_string(d) + "\":1}") == Error::Kind::kDuplicateKey);
  }
}

TEST(ErrorPathNamesEnclosingKeys) {
  Document doc;
  Error err;
  CHECK(!ParseText(R"({"w": {"shape": [1, 2,]}})", &doc, &err));
  CHECK(err.kind == Error::Kind::kSyntax);
  CHECK_EQ(err.path.size(), 2u);
  CHECK_EQ(err.path[1], std::string("shape"));
  CHECK_EQ(err.offset, 21u);
}

TEST(SubtreesAreSkipped) {
  Document doc;
  Error err;
  CHECK(ParseText(R"({"a": [[1, [2]], {"x": {"y": 3}}], "b": 4})", &doc, &err));
  uint32_t b_value = 0;
  doc.ForEachMember(doc.Root(), [&](uint32_t k, uint32_t v) {
    if (doc.Str(k) == "b") b_value = v;
    return true;
  });
  CHECK(doc.IsU64(b_value) && doc.U64(b_value) == 4);
}

TEST(PrintableEscapesAndTruncates) {
  CHECK_EQ(spark::Printable("a\nb\x7F\xC3\xA9\xFF"), std::string("a\\x0Ab\\x7F\xC3\xA9\\xFF"));
  CHECK_EQ(spark::Printable(std::string(300, 'x'), 10), std::string(10, 'x') + "...");
}

TEST(LargeInputParsesQuickly) {
  // A safetensors-like header at the 100 MB cap (20 MB in slow builds).
#ifdef SPARK_TEST_SLOW_BUILD
  const size_t target = 20u << 20;
#else
  const size_t target = 100u << 20;
#endif
  std::string text = "{";
  text.reserve(target + (1 << 20));
  for (int i = 0; text.size() < target; ++i) {
    text += "\"model.layers." + std::to_string(i) +
            ".mlp.experts.gate_proj.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[2048,7168],"
            "\"data_offsets\":[" +
            std::to_string(uint64_t(i) * 14680064) + "," + std::to_string(uint64_t(i + 1) * 14680064) + "]},";
  }
  text.back() = '}';
  Document doc;
  Error err;
  // CPU time, not wall time: the machines this runs on are shared, and waiting for a core
  // says nothing about the parser.
  std::clock_t t0 = std::clock();
  bool ok = ParseText(text, &doc, &err);
  double secs = static_cast<double>(std::clock() - t0) / CLOCKS_PER_SEC;
  CHECK(ok);
  std::printf("  parsed %zu MB (%zu nodes) in %.3f s of CPU\n", text.size() >> 20, doc.NodeCount(), secs);
  // About 0.45 s on a quiet x86-64 core; the bound leaves room for slower cores while still
  // catching anything worse than linear.
#ifdef SPARK_TEST_SLOW_BUILD
  CHECK(secs < 20.0);
#else
  CHECK(secs < 2.0);
#endif
}

int main() { return spark_test::RunAll("json_test"); }
