// The libraries' stats lines reach stderr without ever waiting for it. They are written on
// the thread that ran the gather (no workers: the overlay's threads = 0, the Mia stack's
// DSV41_IO_THREADS <= 1) or on a worker the gather handed them to, and a stderr nobody drains
// (a full pipe, a stopped terminal, a log socket that stalls) must stall neither: a line that
// cannot go out at once is dropped and counted, and the next line that does go out says how
// many were (lines_dropped=).
//
// Without touching fd 2's own flags: O_NONBLOCK set on it would hold for every writer in the
// process and in every process sharing its open file description (the engine's Python
// logging would get EAGAIN). Instead, per kind of stderr:
//   - a socket: send() with MSG_DONTWAIT (and MSG_NOSIGNAL), a flag of this call alone;
//   - a pipe, FIFO or terminal: written through a description of our own, opened anew from
//     /proc/self/fd/2 with O_NONBLOCK (the same pipe or terminal, another open file
//     description, so the flag is ours alone), with SIGPIPE held back from the thread for the
//     write (a pipe with no reader fails it with EPIPE, and the signal it raised is taken back:
//     the engine would otherwise die of it where nothing ignores it);
//   - where that open is refused (no /proc, a pipe of another user), poll() with a zero
//     timeout first and write only when it reports room: a line is at most 512 bytes, less than
//     a pipe's atomic write (4096), so it goes whole or waits; only another writer filling the
//     last room between the poll and the write could make it wait;
//   - a regular file or a block device: write(), which waits for no reader.
// A pipe takes a line whole or not at all (up to 4096 bytes go at once); a line a terminal
// takes only part of counts as dropped.
#pragma once

#include <cstddef>
#include <cstdint>

namespace spark::engines {

// Writes line[0..len) to stderr now or never: true when it went out whole, false (counted)
// when it was dropped.
bool WriteStderrLine(const char* line, size_t len);
// Counts a line dropped before it reached the writer (the previous one was still waiting).
void CountDroppedLine();
// Lines dropped since the library was loaded.
uint64_t DroppedLines();

}  // namespace spark::engines
