// The standard and system headers most tests include, precompiled by run.sh for the plain build
// (each test still includes what it uses, so the other builds, which do not precompile, check
// that). A header here that a test does not use costs that test nothing once precompiled.
// No #pragma once: the header is compiled on its own, and -include'd once per test.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
