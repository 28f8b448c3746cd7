// The parser behind json::Parse (core/format/json.h): one pass over the input, iterative (an explicit
// stack of open containers), writing the tape as it goes.
#include <algorithm>
#include <cstring>
#include <memory>

#include "core/base/utf8.h"
#include "core/format/json.h"
#include "core/format/json_key_set.h"

namespace spark::json {

namespace {

bool IsWs(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(uint8_t c) { return c >= '0' && c <= '9'; }

int HexValue(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// How a byte reads in a message: 'x', or NUL, or byte 0xNN.
std::string ByteName(uint8_t c) {
  if (c == 0) return "a NUL byte";
  if (c >= 0x20 && c < 0x7F) return std::string("'") + static_cast<char>(c) + "'";
  static const char kHex[] = "0123456789ABCDEF";
  return std::string("byte 0x") + kHex[c >> 4] + kHex[c & 15];
}

}  // namespace

class Parser {
 public:
  Parser(const uint8_t* s, size_t n, Document* doc, Error* err, const Options& options)
      : s_(s), n_(n), doc_(doc), err_(err), options_(options) {}

  bool Run();

 private:
  using Index = Document::Index;
  // Objects with more members than this switch from a linear scan to a hash set.
  static constexpr uint32_t kLinearKeys = 16;

  struct Frame {
    Index node = 0;
    bool object = false;
    bool has_key = false;
    uint32_t count = 0;  // members (or elements) completed
    KeyRef key{0, 0};    // the current member's key
    std::unique_ptr<KeySet> keys;
  };

  bool Fail(Error::Kind kind, std::string message, size_t offset);
  void SkipWs() {
    while (pos_ < n_ && IsWs(s_[pos_])) ++pos_;
  }
  bool Open(bool object);
  void Close();
  bool ParseKey();
  bool IsDuplicate(Frame& f, KeyRef key);
  bool ParseString(KeyRef* out);
  bool ParseScalar();
  bool ParseNumber();
  bool ParseLiteral(const char* word, Type type);
  void Push(Type type, uint8_t flags, uint32_t len, uint64_t x) {
    doc_->nodes_.push_back(Node{type, flags, 0, len, x});
  }

  const uint8_t* s_;
  size_t n_;
  size_t pos_ = 0;
  Document* doc_;
  Error* err_;
  Options options_;
  std::vector<Frame> stack_;
};

bool Parser::Fail(Error::Kind kind, std::string message, size_t offset) {
  err_->kind = kind;
  err_->message = std::move(message);
  err_->offset = offset;
  err_->path.clear();
  const std::string& pool = doc_->pool_;
  for (const Frame& f : stack_) {
    if (f.object && f.has_key) err_->path.emplace_back(pool.data() + f.key.off, f.key.len);
  }
  return false;
}

bool Parser::Run() {
  if (n_ >= UINT32_MAX) return Fail(Error::Kind::kTooLarge, "is larger than 4 GiB", 0);
  // Reserving address space up front avoids copying the tape as it grows; pages are only
  // touched as nodes are written. Header-like text needs about one node per 10 bytes.
  doc_->nodes_.reserve(std::min(n_ / 8, options_.max_nodes) + 2);
  doc_->pool_.reserve(n_);
  size_t bad = FindInvalidUtf8(s_, n_);
  if (bad < n_) return Fail(Error::Kind::kUtf8, "invalid UTF-8 (" + ByteName(s_[bad]) + ")", bad);
  SkipWs();
  if (pos_ >= n_) return Fail(Error::Kind::kSyntax, n_ == 0 ? "empty input" : "only whitespace, no JSON value", pos_);
  bool need_value = true;
  for (;;) {
    // Each turn adds at most a key and a value, so the tape never passes the cap by more.
    if (doc_->nodes_.size() > options_.max_nodes) {
      return Fail(Error::Kind::kTooLarge, "holds more than " + std::to_string(options_.max_nodes) + " JSON values",
                  pos_);
    }
    if (need_value) {
      SkipWs();
      if (pos_ >= n_) return Fail(Error::Kind::kSyntax, "unexpected end of input, expected a value", pos_);
      uint8_t c = s_[pos_];
      if (c == '{' || c == '[') {
        if (!Open(c == '{')) return false;
        SkipWs();
        Frame& f = stack_.back();
        if (pos_ < n_ && s_[pos_] == (f.object ? '}' : ']')) {
          ++pos_;
          Close();
          need_value = false;
        } else if (f.object && !ParseKey()) {
          return false;
        }
        continue;
      }
      if (!ParseScalar()) return false;
      need_value = false;
      continue;
    }
    // A value just completed.
    if (stack_.empty()) {
      SkipWs();
      if (pos_ != n_)
        return Fail(Error::Kind::kSyntax, "unexpected " + ByteName(s_[pos_]) + " after the JSON value", pos_);
      return true;
    }
    Frame& f = stack_.back();
    ++f.count;
    if (stack_.size() == 1 && f.count > options_.max_root_members) {
      return Fail(Error::Kind::kTooLarge, "lists more than " + std::to_string(options_.max_root_members) + " entries",
                  pos_);
    }
    SkipWs();
    const char close = f.object ? '}' : ']';
    if (pos_ >= n_) {
      return Fail(Error::Kind::kSyntax, std::string("unexpected end of input, expected ',' or '") + close + "'", pos_);
    }
    uint8_t c = s_[pos_];
    if (c == ',') {
      size_t comma = pos_++;
      SkipWs();
      if (pos_ < n_ && s_[pos_] == close) return Fail(Error::Kind::kSyntax, "trailing comma", comma);
      if (f.object && !ParseKey()) return false;
      need_value = true;
    } else if (c == close) {
      ++pos_;
      Close();
    } else {
      return Fail(Error::Kind::kSyntax, "unexpected " + ByteName(c) + ", expected ',' or '" + close + "'", pos_);
    }
  }
}

bool Parser::Open(bool object) {
  if (stack_.size() >= options_.max_depth) {
    return Fail(Error::Kind::kNesting, "nested deeper than " + std::to_string(options_.max_depth) + " levels", pos_);
  }
  ++pos_;
  Index node = static_cast<Index>(doc_->nodes_.size());
  Push(object ? Type::kObject : Type::kArray, 0, 0, 0);
  Frame frame;
  frame.node = node;
  frame.object = object;
  stack_.push_back(std::move(frame));
  return true;
}

void Parser::Close() {
  Frame& f = stack_.back();
  Node& n = doc_->nodes_[f.node];
  n.len = f.count;
  n.x = doc_->nodes_.size();
  stack_.pop_back();
}

bool Parser::ParseKey() {
  Frame& f = stack_.back();
  f.has_key = false;
  if (pos_ >= n_ || s_[pos_] != '"') {
    return Fail(Error::Kind::kSyntax,
                pos_ >= n_ ? "unexpected end of input, expected a key"
                           : "unexpected " + ByteName(s_[pos_]) + ", expected a string key",
                pos_);
  }
  size_t at = pos_;
  KeyRef key;
  if (!ParseString(&key)) return false;
  if (IsDuplicate(f, key)) {
    err_->key.assign(doc_->pool_.data() + key.off, key.len);
    return Fail(Error::Kind::kDuplicateKey, "duplicate key \"" + Printable(err_->key, 120) + "\"", at);
  }
  Push(Type::kString, 0, key.len, key.off);
  f.key = key;
  f.has_key = true;
  SkipWs();
  if (pos_ >= n_ || s_[pos_] != ':') {
    return Fail(
        Error::Kind::kSyntax,
        pos_ >= n_ ? "unexpected end of input, expected ':'" : "unexpected " + ByteName(s_[pos_]) + ", expected ':'",
        pos_);
  }
  ++pos_;
  return true;
}

bool Parser::IsDuplicate(Frame& f, KeyRef key) {
  if (f.keys) return !f.keys->Insert(key);
  // Small object: compare with the keys already on the tape (every earlier member is complete).
  const Document& d = *doc_;
  Index k = f.node + 1;
  for (uint32_t m = 0; m < f.count; ++m) {
    KeyRef prev{d.nodes_[k].x, d.nodes_[k].len};
    if (prev.len == key.len && std::memcmp(d.pool_.data() + prev.off, d.pool_.data() + key.off, key.len) == 0)
      return true;
    k = d.Next(k + 1);
  }
  if (f.count + 1 >= kLinearKeys) {
    f.keys = std::make_unique<KeySet>(&d.pool_);
    k = f.node + 1;
    for (uint32_t m = 0; m < f.count; ++m) {
      f.keys->Insert(KeyRef{d.nodes_[k].x, d.nodes_[k].len});
      k = d.Next(k + 1);
    }
    f.keys->Insert(key);
  }
  return false;
}

namespace {

// The character a one-letter escape stands for (\" \\ \/ \b \f \n \r \t), or nullptr.
const char* SimpleEscape(uint8_t e) {
  switch (e) {
    case '"':
      return "\"";
    case '\\':
      return "\\";
    case '/':
      return "/";
    case 'b':
      return "\b";
    case 'f':
      return "\f";
    case 'n':
      return "\n";
    case 'r':
      return "\r";
    case 't':
      return "\t";
    default:
      return nullptr;
  }
}

}  // namespace

bool Parser::ParseString(KeyRef* out) {
  std::string& pool = doc_->pool_;
  size_t open = pos_++;
  uint64_t start = pool.size();
  for (;;) {
    size_t run = pos_;
    // Eight bytes at a time while none is '"', '\\' or a control character.
    while (n_ - run >= 8) {
      uint64_t w;
      std::memcpy(&w, s_ + run, 8);
      constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
      uint64_t quote = w ^ (kOnes * '"'), backslash = w ^ (kOnes * '\\');
      uint64_t special = ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | ((w - kOnes * 0x20) & ~w);
      if (special & kHigh) break;
      run += 8;
    }
    while (run < n_ && s_[run] != '"' && s_[run] != '\\' && s_[run] >= 0x20) ++run;
    pool.append(reinterpret_cast<const char*>(s_ + pos_), run - pos_);
    pos_ = run;
    if (pos_ >= n_) return Fail(Error::Kind::kSyntax, "unterminated string", open);
    uint8_t c = s_[pos_];
    if (c == '"') {
      ++pos_;
      break;
    }
    if (c < 0x20)
      return Fail(Error::Kind::kSyntax, ByteName(c) + " inside a string (control characters must be escaped)", pos_);
    // An escape.
    if (n_ - pos_ < 2) return Fail(Error::Kind::kSyntax, "unterminated string", open);
    uint8_t e = s_[pos_ + 1];
    const char* simple = SimpleEscape(e);
    if (simple != nullptr) {
      pool.push_back(*simple);
      pos_ += 2;
      continue;
    }
    if (e != 'u')
      return Fail(Error::Kind::kSyntax, "invalid escape '\\" + Printable(std::string(1, static_cast<char>(e)), 4) + "'",
                  pos_);
    auto hex4 = [&](size_t at, uint32_t* cp) {
      if (n_ - at < 4) return false;
      uint32_t v = 0;
      for (size_t k = 0; k < 4; ++k) {
        int h = HexValue(s_[at + k]);
        if (h < 0) return false;
        v = v << 4 | static_cast<uint32_t>(h);
      }
      *cp = v;
      return true;
    };
    uint32_t cp;
    if (!hex4(pos_ + 2, &cp)) return Fail(Error::Kind::kSyntax, "invalid \\u escape (needs four hex digits)", pos_);
    size_t esc = pos_;
    pos_ += 6;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail(Error::Kind::kUtf8, "lone low surrogate in a \\u escape", esc);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t low;
      if (n_ - pos_ < 6 || s_[pos_] != '\\' || s_[pos_ + 1] != 'u' || !hex4(pos_ + 2, &low) || low < 0xDC00 ||
          low > 0xDFFF) {
        return Fail(Error::Kind::kUtf8, "lone high surrogate in a \\u escape", esc);
      }
      pos_ += 6;
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(pool, cp);
  }
  // Decoded text never exceeds the input, which is below 4 GiB.
  *out = KeyRef{start, static_cast<uint32_t>(pool.size() - start)};
  return true;
}

bool Parser::ParseScalar() {
  uint8_t c = s_[pos_];
  if (c == '"') {
    KeyRef str;
    if (!ParseString(&str)) return false;
    Push(Type::kString, 0, str.len, str.off);
    return true;
  }
  if (c == '-' || IsDigit(c)) return ParseNumber();
  if (c == 't') return ParseLiteral("true", Type::kTrue);
  if (c == 'f') return ParseLiteral("false", Type::kFalse);
  if (c == 'n') return ParseLiteral("null", Type::kNull);
  return Fail(Error::Kind::kSyntax, "unexpected " + ByteName(c) + ", expected a value", pos_);
}

bool Parser::ParseLiteral(const char* word, Type type) {
  size_t len = std::strlen(word);
  if (n_ - pos_ < len || std::memcmp(s_ + pos_, word, len) != 0) {
    return Fail(Error::Kind::kSyntax, "invalid literal (expected '" + std::string(word) + "')", pos_);
  }
  pos_ += len;
  Push(type, 0, 0, 0);
  return true;
}

bool Parser::ParseNumber() {
  size_t start = pos_;
  bool negative = s_[pos_] == '-';
  if (negative) ++pos_;
  if (pos_ >= n_ || !IsDigit(s_[pos_])) return Fail(Error::Kind::kSyntax, "invalid number: '-' without digits", start);
  if (s_[pos_] == '0') {
    ++pos_;
    if (pos_ < n_ && IsDigit(s_[pos_])) return Fail(Error::Kind::kSyntax, "invalid number: leading zero", start);
  } else {
    while (pos_ < n_ && IsDigit(s_[pos_])) ++pos_;
  }
  size_t int_end = pos_;
  bool integer = true;
  if (pos_ < n_ && s_[pos_] == '.') {
    ++pos_;
    if (pos_ >= n_ || !IsDigit(s_[pos_]))
      return Fail(Error::Kind::kSyntax, "invalid number: no digits after '.'", start);
    while (pos_ < n_ && IsDigit(s_[pos_])) ++pos_;
    integer = false;
  }
  if (pos_ < n_ && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
    ++pos_;
    if (pos_ < n_ && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
    if (pos_ >= n_ || !IsDigit(s_[pos_]))
      return Fail(Error::Kind::kSyntax, "invalid number: no digits in the exponent", start);
    while (pos_ < n_ && IsDigit(s_[pos_])) ++pos_;
    integer = false;
  }
  size_t text_len = pos_ - start;
  if (integer && !negative) {
    uint64_t v = 0;
    bool overflow = false;
    for (size_t k = start; k < int_end && !overflow; ++k) {
      overflow = __builtin_mul_overflow(v, uint64_t{10}, &v) || __builtin_add_overflow(v, uint64_t(s_[k] - '0'), &v);
    }
    if (!overflow) {
      Push(Type::kNumber, kIsU64, static_cast<uint32_t>(text_len), v);
      return true;
    }
  }
  std::string& pool = doc_->pool_;
  uint64_t off = pool.size();
  pool.append(reinterpret_cast<const char*>(s_ + start), text_len);
  Push(Type::kNumber, integer && !negative ? kU64Overflow : 0, static_cast<uint32_t>(text_len), off);
  return true;
}

bool Parse(const uint8_t* data, size_t len, Document* doc, Error* err, const Options& options) {
  *doc = Document();
  *err = Error();
  Parser parser(data, len, doc, err, options);
  if (parser.Run()) return true;
  *doc = Document();
  return false;
}

}  // namespace spark::json
