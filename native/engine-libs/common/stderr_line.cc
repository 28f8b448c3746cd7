#include "engine-libs/common/stderr_line.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <ctime>

namespace spark::engines {

namespace {

std::atomic<uint64_t> dropped{0};

ssize_t WriteAll(int fd, const char* line, size_t len) {
  ssize_t n;
  do {
    n = write(fd, line, len);
  } while (n < 0 && errno == EINTR);
  return n;
}

// SIGPIPE held back from this thread while it lives; Raised() after a write failed with EPIPE
// takes back the signal that write raised (unless the thread held SIGPIPE back itself: then
// what is pending is its own business).
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  void Raised() {
    if (sigismember(&old_, SIGPIPE) == 1) return;
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
    }
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
};

// A pipe, FIFO or terminal: through a non-blocking description of our own, else after a
// zero-timeout poll. -1: dropped.
ssize_t WriteNonBlocking(const char* line, size_t len) {
  NoSigpipe no_sigpipe;
  ssize_t n = -1;
  int err = 0;
  // O_NONBLOCK on the open itself: a FIFO's open for writing then fails at once (ENXIO) when
  // it has no reader, instead of waiting for one. O_NOCTTY: a terminal never becomes ours.
  const int own = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (own >= 0) {
    n = WriteAll(own, line, len);
    err = errno;
    close(own);
  } else if (errno != ENXIO) {  // ENXIO: no reader
    pollfd p{2, POLLOUT, 0};
    int ready;
    do {
      ready = poll(&p, 1, 0);
    } while (ready < 0 && errno == EINTR);
    if (ready == 1 && (p.revents & (POLLERR | POLLHUP | POLLNVAL)) == 0) {
      n = WriteAll(2, line, len);
      err = errno;
    }
  }
  if (n < 0 && err == EPIPE) no_sigpipe.Raised();
  return n;
}

}  // namespace

bool WriteStderrLine(const char* line, size_t len) {
  struct stat st;
  ssize_t n = -1;
  if (fstat(2, &st) == 0) {
    if (S_ISSOCK(st.st_mode)) {
      do {
        n = send(2, line, len, MSG_DONTWAIT | MSG_NOSIGNAL);
      } while (n < 0 && errno == EINTR);
    } else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode)) {
      n = WriteAll(2, line, len);
    } else {
      n = WriteNonBlocking(line, len);
    }
  }
  if (n == static_cast<ssize_t>(len)) return true;
  CountDroppedLine();
  return false;
}

void CountDroppedLine() { dropped.fetch_add(1, std::memory_order_relaxed); }

uint64_t DroppedLines() { return dropped.load(std::memory_order_relaxed); }

}  // namespace spark::engines
