#include "core/format/json.h"

#include "core/base/utf8.h"

namespace spark::json {

std::string Document::NumberText(Index i) const {
  const Node& n = nodes_[i];
  if (n.flags & kIsU64) return std::to_string(n.x);
  return std::string(pool_.data() + n.x, n.len);
}

std::string Document::Describe(Index i) const {
  switch (nodes_[i].type) {
    case Type::kNull:
      return "null";
    case Type::kFalse:
      return "false";
    case Type::kTrue:
      return "true";
    case Type::kNumber:
      return Printable(NumberText(i), 40);
    case Type::kString:
      return "\"" + Printable(Str(i), 40) + "\"";
    case Type::kArray:
      return "an array";
    case Type::kObject:
      return "an object";
  }
  return "a value";
}

}  // namespace spark::json
