// The engine libraries' one parser of the environment (native/engine-libs/common/env.h): an
// integer is an optional sign and digits within int64, and a value too large to hold is no
// number (the fallback), never what it would wrap to.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "engine-libs/common/env.h"
#include "test/testing.h"

using spark::engines::EnvInt;
using spark::engines::EnvNumber;

namespace {

int64_t IntOf(const char* value, int64_t fallback = -42) {
  setenv("SPARK_TEST_ENV", value, 1);
  const int64_t v = EnvInt("SPARK_TEST_ENV", fallback);
  unsetenv("SPARK_TEST_ENV");
  return v;
}

double NumberOf(const char* value, double fallback = -42) {
  setenv("SPARK_TEST_ENV", value, 1);
  const double v = EnvNumber("SPARK_TEST_ENV", fallback);
  unsetenv("SPARK_TEST_ENV");
  return v;
}

}  // namespace

TEST(integers) {
  CHECK_EQ(EnvInt("SPARK_TEST_ENV_UNSET", 7), 7);
  CHECK_EQ(IntOf("0"), 0);
  CHECK_EQ(IntOf("32"), 32);
  CHECK_EQ(IntOf("+8"), 8);
  CHECK_EQ(IntOf("-3"), -3);
  CHECK_EQ(IntOf("007"), 7);
  CHECK_EQ(IntOf("9223372036854775807"), INT64_MAX);
  CHECK_EQ(IntOf("-9223372036854775808"), INT64_MIN);
}

TEST(integers_that_overflow_are_no_number) {
  for (const char* v : {"9223372036854775808", "-9223372036854775809", "18446744073709551615", "18446744073709551616",
                        "18446744073709551618", "36893488147419103234", "99999999999999999999999999999999",
                        "-99999999999999999999999999999999"}) {
    if (IntOf(v) != -42) std::printf("  %s gave %lld\n", v, static_cast<long long>(IntOf(v)));
    CHECK_EQ(IntOf(v), -42);
  }
}

TEST(integers_that_are_not_numbers) {
  for (const char* v : {"", "-", "+", "4x", "x4", " 4", "4 ", "4.0", "1e3", "--4", "+-4", "0x10"}) {
    CHECK_EQ(IntOf(v), -42);
  }
}

TEST(numbers) {
  CHECK_EQ(NumberOf("4"), 4.0);
  CHECK_EQ(NumberOf("0.5"), 0.5);
  CHECK_EQ(NumberOf("-1"), -1.0);
  CHECK_EQ(NumberOf("+2.25"), 2.25);
  CHECK_EQ(NumberOf("1000000000000000"), 1e15);
  for (const char* v : {"", ".", "-", "1.2.3", "4x", "1e3", " 4", "18446744073709551618", "1000000000000001"}) {
    CHECK_EQ(NumberOf(v), -42.0);
  }
}

int main() { return spark_test::RunAll("engine_env_test"); }
