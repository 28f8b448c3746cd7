// A small strict JSON (RFC 8259) parser for untrusted headers.
//
// Why our own: safetensors headers need things general parsers do not give together:
// integers kept exact as uint64 (never via double, so offsets past 2^53 survive and values
// past 2^64-1 are seen as overflow, not rounded), duplicate keys rejected (the reference
// reader silently keeps the last one, so two readers can disagree), a hard nesting limit
// (the parser is iterative: deep input cannot exhaust the stack), strict UTF-8, NUL bytes
// rejected everywhere, and no extensions (comments, trailing commas, NaN).
//
// The document is a flat "tape" of 16-byte nodes in document order. A container node
// records the index one past its last descendant, so a subtree is skipped in O(1). An
// object's children alternate key (a String node) and value. Decoded strings and the text
// of numbers that are not exact uint64 values live in one string pool.
//
// The parser is core/format/json_parser.cc (its duplicate-key set core/format/json_key_set.h); writing JSON
// text is core/format/json_writer.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spark::json {

enum class Type : uint8_t { kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };

// Number flags.
inline constexpr uint8_t kIsU64 = 1;        // a non-negative integer literal that fits uint64
inline constexpr uint8_t kU64Overflow = 2;  // a non-negative integer literal past 2^64-1

struct Node {
  Type type;
  uint8_t flags;
  uint16_t reserved;
  // String: byte length. Number: text length. Array: elements. Object: members.
  uint32_t len;
  // String: pool offset. Number: the value (kIsU64) or the pool offset of its text.
  // Array/Object: the index one past the last node of the subtree.
  uint64_t x;
};
static_assert(sizeof(Node) == 16, "the tape stays compact");

class Document {
 public:
  using Index = uint32_t;

  Index Root() const { return 0; }
  size_t NodeCount() const { return nodes_.size(); }
  const Node& At(Index i) const { return nodes_[i]; }
  Type TypeOf(Index i) const { return nodes_[i].type; }

  // The next sibling of node i (skipping its subtree).
  Index Next(Index i) const {
    const Node& n = nodes_[i];
    return (n.type == Type::kArray || n.type == Type::kObject) ? static_cast<Index>(n.x) : i + 1;
  }

  // Decoded string (String nodes only).
  std::string_view Str(Index i) const { return {pool_.data() + nodes_[i].x, nodes_[i].len}; }
  bool IsU64(Index i) const { return nodes_[i].type == Type::kNumber && (nodes_[i].flags & kIsU64); }
  bool IsU64Overflow(Index i) const { return nodes_[i].type == Type::kNumber && (nodes_[i].flags & kU64Overflow); }
  uint64_t U64(Index i) const { return nodes_[i].x; }
  // The number exactly as written (Number nodes only).
  std::string NumberText(Index i) const;
  // A short rendering of any value for error messages: 1.5, "3", an array, an object, ...
  std::string Describe(Index i) const;

  // Calls fn(key_index, value_index) for each member of object i; stops when fn returns false.
  template <typename Fn>
  void ForEachMember(Index i, Fn&& fn) const {
    Index end = static_cast<Index>(nodes_[i].x);
    for (Index k = i + 1; k < end;) {
      Index v = k + 1;
      if (!fn(k, v)) return;
      k = Next(v);
    }
  }
  // Calls fn(position, value_index) for each element of array i; stops when fn returns false.
  template <typename Fn>
  void ForEachElement(Index i, Fn&& fn) const {
    Index end = static_cast<Index>(nodes_[i].x);
    size_t pos = 0;
    for (Index e = i + 1; e < end; e = Next(e)) {
      if (!fn(pos++, e)) return;
    }
  }

 private:
  friend class Parser;
  std::vector<Node> nodes_;
  std::string pool_;
};

struct Error {
  enum class Kind { kNone, kSyntax, kUtf8, kNesting, kDuplicateKey, kTooLarge };
  Kind kind = Kind::kNone;
  std::string message;  // one line, without the offset
  size_t offset = 0;    // byte offset in the input
  // Keys of the enclosing object members, outermost first (arrays add nothing). For a
  // duplicate key the path ends with the enclosing member, and `key` is the duplicate.
  std::vector<std::string> path;
  std::string key;
};

struct Options {
  size_t max_depth = 64;  // containers open at once
  // Nodes (values and keys) at most: the tape costs 16 bytes a node, so this bounds memory
  // for input that is all tiny values ("[0,0,0,..."), whatever its byte length.
  size_t max_nodes = SIZE_MAX;
  // Members (or elements) of the outermost container at most: a header of a million tensors
  // is refused after this many, not after all of them.
  size_t max_root_members = SIZE_MAX;
};

// Parses the whole input as one JSON value surrounded by optional whitespace
// (space, tab, CR, LF). Returns false and fills *err on any deviation from RFC 8259.
bool Parse(const uint8_t* data, size_t len, Document* doc, Error* err, const Options& options = {});

}  // namespace spark::json
