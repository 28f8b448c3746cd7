// Running one case in a forked child: a fresh process for what is read once per process (the
// Mia library's pool and its DSV41_IO_THREADS), an environment of its own, a case expected to
// abort, or one that might hang (a deadline, then SIGKILL). The child runs `body`, flushes
// stdout (where CHECK prints) and exits 0 when no CHECK failed in it, 1 otherwise; its stderr
// goes to a file the parent reads back.
//
// Fork from a process whose other threads may hold locks only where the child touches none of
// them: the tests fork before they start stores, or with only idle workers around.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "test/scratch.h"
#include "test/testing.h"

namespace spark_test {

struct ChildResult {
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string err;     // its stderr
  bool ok() const { return !timed_out && signal == 0 && exit_code == 0; }
};

using Env = std::vector<std::pair<std::string, std::string>>;

// A child started and not yet waited for: RunChild's two halves, for cases that start several
// children at once (each waiting seconds of its own) and then finish them in turn.
struct StartedChild {
  pid_t pid = -1;
  std::string err_path;
  std::chrono::steady_clock::time_point until;
};

inline StartedChild StartChild(const std::function<void()>& body, const Env& env = {}, double deadline_s = 60) {
  static const std::string dir = ScratchDir("/tmp", "spark-child");
  static int serial = 0;
  StartedChild c;
  c.err_path = dir + "/stderr-" + std::to_string(++serial);
  c.until = std::chrono::steady_clock::now() +
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(deadline_s));
  std::fflush(stdout);
  std::fflush(stderr);
  c.pid = fork();
  if (c.pid == 0) {
    // A new file, never a link planted under its name (the scratch directory is the test's own).
    const int fd = ::open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) ::dup2(fd, 2);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    const int before = Failures();
    body();
    std::fflush(stdout);
    _exit(Failures() == before ? 0 : 1);
  }
  return c;
}

// Waits for the child until its deadline (then SIGKILL) and reads back its stderr.
inline ChildResult FinishChild(const StartedChild& c) {
  ChildResult r;
  if (c.pid < 0) {
    r.exit_code = -2;
    return r;
  }
  int status = 0;
  for (;;) {
    const pid_t got = waitpid(c.pid, &status, WNOHANG);
    if (got == c.pid) break;
    if (std::chrono::steady_clock::now() > c.until) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!r.timed_out) {
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  }
  std::ifstream in(c.err_path);
  std::stringstream ss;
  ss << in.rdbuf();
  r.err = ss.str();
  return r;
}

inline ChildResult RunChild(const std::function<void()>& body, const Env& env = {}, double deadline_s = 60) {
  return FinishChild(StartChild(body, env, deadline_s));
}

// The lines of `text` that begin with `prefix`.
inline std::vector<std::string> LinesStarting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  }
  return out;
}

}  // namespace spark_test
