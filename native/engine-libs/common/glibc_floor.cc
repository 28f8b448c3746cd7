// Keeps the engine libraries loadable on glibc 2.35 (Ubuntu 22.04, the stacks' oldest base
// image) when built against a newer one. The C++ runtime is linked in statically, and its
// std::random_device (never used here, but in an object file the runtime's string code pulls
// in) calls arc4random, which glibc has exported only since 2.36. This hidden definition
// satisfies that reference inside the library, so the built file imports nothing newer than
// 2.35; native/engine-libs/check-lib.sh checks the versions of every import.
#include <sys/random.h>

#include <cstdint>

extern "C" __attribute__((visibility("hidden"))) uint32_t arc4random(void) {
  uint32_t v = 0;
  [[maybe_unused]] ssize_t got = getrandom(&v, sizeof v, 0);  // nothing here relies on it
  return v;
}
