// The engine libraries' stats lines reach stderr without waiting (native/engine-libs/common/
// stderr_line.h), whatever stderr is: a full pipe, a pipe with no reader, a full socket, a
// file, /dev/null, nothing. Each case makes fd 2 what it needs in a child process of its own;
// fd 2's own flags are left as they were.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "engine-libs/common/stderr_line.h"
#include "test/child.h"
#include "test/full_pipe.h"
#include "test/row_fixtures.h"
#include "test/testing.h"

using spark::engines::DroppedLines;
using spark::engines::WriteStderrLine;

namespace {

const char kLine[] = "libtest: one stats line\n";
constexpr size_t kLen = sizeof kLine - 1;

using full_pipe::Drain;
using full_pipe::Fill;

// Writes the line with `fd` as stderr; checks it went out (or was dropped and counted) at once
// and that fd 2's flags are what they were.
void ExpectWrite(int fd, bool written) {
  dup2(fd, 2);
  const int flags = fcntl(2, F_GETFL);
  const uint64_t dropped = DroppedLines();
  const auto start = std::chrono::steady_clock::now();
  CHECK_EQ(WriteStderrLine(kLine, kLen), written);
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(500));
  CHECK_EQ(DroppedLines(), dropped + (written ? 0 : 1));
  CHECK_EQ(fcntl(2, F_GETFL), flags);
}

void InChild(const char* what, const std::function<void()>& body) {
  const spark_test::ChildResult r = spark_test::RunChild(body, {}, 20);
  if (!r.ok())
    std::printf("  %s: %s (exit %d, signal %d)\n", what, r.timed_out ? "hung" : "failed", r.exit_code, r.signal);
  CHECK(r.ok());
}

}  // namespace

TEST(a_pipe_full_then_drained) {
  InChild("pipe", [] {
    int p[2];
    CHECK_EQ(pipe(p), 0);
    Fill(p[1]);
    ExpectWrite(p[1], false);
    ExpectWrite(p[1], false);
    Drain(p[0]);
    ExpectWrite(p[1], true);
    CHECK(Drain(p[0]) == kLine);
  });
}

// No reader: nothing is written, so no SIGPIPE (left at its default here: it would kill).
TEST(a_pipe_with_no_reader) {
  InChild("no reader", [] {
    signal(SIGPIPE, SIG_DFL);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    close(p[0]);
    ExpectWrite(p[1], false);
  });
}

TEST(a_socket_full_then_drained) {
  InChild("socket", [] {
    int sv[2];
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    Fill(sv[1]);
    ExpectWrite(sv[1], false);
    Drain(sv[0]);
    ExpectWrite(sv[1], true);
    CHECK(Drain(sv[0]) == kLine);
    close(sv[0]);
    signal(SIGPIPE, SIG_DFL);
    ExpectWrite(sv[1], false);  // the reader gone: no SIGPIPE
  });
}

TEST(a_file_and_dev_null) {
  InChild("file", [] {
    const std::string path = row_fixtures::TempDir() + "/stderr-" + std::to_string(getpid());
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ExpectWrite(fd, true);
    ExpectWrite(fd, true);
    const int in = open(path.c_str(), O_RDONLY);
    CHECK(Drain(in) == std::string(kLine) + kLine);
    ExpectWrite(open("/dev/null", O_WRONLY), true);
  });
}

TEST(no_stderr_at_all) {
  InChild("closed", [] {
    close(2);
    const uint64_t dropped = DroppedLines();
    CHECK(!WriteStderrLine(kLine, kLen));
    CHECK_EQ(DroppedLines(), dropped + 1);
  });
}

int main() { return spark_test::RunAll("engine_stderr_test"); }
