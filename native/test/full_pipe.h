// Pipes and sockets full to the last byte, for the tests that hold a stderr line to never
// blocking the engine's callback.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace full_pipe {

// Fills the write end `fd` (a pipe or a socket) to the last byte, leaving it blocking again,
// as a stderr nobody reads is.
inline void Fill(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  static const char block[4096] = {};
  while (write(fd, block, sizeof block) > 0) {
  }
  while (write(fd, block, 1) > 0) {
  }
  fcntl(fd, F_SETFL, 0);
}

// Makes fd 2 a full pipe nobody reads; returns the read end (-1 if no pipe could be made).
inline int FullStderrPipe() {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return -1;
  Fill(p[1]);
  dup2(p[1], 2);
  close(p[1]);
  return p[0];
}

// Everything the pipe or socket holds now, without waiting.
inline std::string Drain(int fd) {
  fcntl(fd, F_SETFL, O_NONBLOCK);
  std::string got;
  char buf[4096];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  return got;
}

}  // namespace full_pipe
