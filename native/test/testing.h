// A minimal test harness for the standalone C++ tests: CHECK records a failure and goes on;
// each test binary prints "N passed, N failed" and exits non-zero on any failure.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

// SPARK_TEST_SLOW_BUILD: the sanitizers, or emulation (run.sh --arm64 passes
// -DSPARK_TEST_EMULATED), run several times slower than the hardware; tests with a time bound
// use a smaller input and a looser bound there.
#if defined(SPARK_TEST_EMULATED) || defined(__SANITIZE_ADDRESS__)
#define SPARK_TEST_SLOW_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPARK_TEST_SLOW_BUILD 1
#endif
#endif

namespace spark_test {

struct Case {
  const char* name;
  std::function<void()> fn;
};

inline std::vector<Case>& Cases() {
  static std::vector<Case> cases;
  return cases;
}
inline int& Failures() {
  static int failures = 0;
  return failures;
}

struct Register {
  Register(const char* name, std::function<void()> fn) { Cases().push_back({name, std::move(fn)}); }
};

inline int RunAll(const char* suite) {
  int passed = 0, failed = 0;
  // SPARK_TEST_TIMES=1 prints each case's wall time, to find the slow ones.
  const bool times = std::getenv("SPARK_TEST_TIMES") != nullptr;
  for (auto& c : Cases()) {
    int before = Failures();
    auto start = std::chrono::steady_clock::now();
    c.fn();
    if (times) {
      std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
      std::printf("  %s: %.3f s\n", c.name, took.count());
    }
    if (Failures() == before) {
      ++passed;
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", suite, c.name);
    }
  }
  std::printf("%s: %d passed, %d failed\n", suite, passed, failed);
  return failed == 0 ? 0 : 1;
}

}  // namespace spark_test

#define TEST(name)                                          \
  static void name();                                       \
  static spark_test::Register register_##name(#name, name); \
  static void name()

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::printf("  %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++spark_test::Failures();                                              \
    }                                                                        \
  } while (0)

#define CHECK_EQ(a, b)                                                                 \
  do {                                                                                 \
    if (!((a) == (b))) {                                                               \
      std::printf("  %s:%d: CHECK_EQ failed: %s != %s\n", __FILE__, __LINE__, #a, #b); \
      ++spark_test::Failures();                                                        \
    }                                                                                  \
  } while (0)
