// A base for classes that own something a copy would release twice or share by accident (a
// descriptor, a thread, aligned memory, a mapping): `class X : NonCopyable { ... };` says it
// once instead of two deleted members in every such class. Not movable either.
#pragma once

namespace spark {

class NonCopyable {
 public:
  NonCopyable(const NonCopyable&) = delete;
  NonCopyable& operator=(const NonCopyable&) = delete;

 protected:
  NonCopyable() = default;
  ~NonCopyable() = default;
};

}  // namespace spark
