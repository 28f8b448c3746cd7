// The Mia reader's one process-wide pool: DSV41_IO_THREADS (default 32) threads in all, the
// caller plus N-1 workers, read once when the pool is first needed (the first lookup or stats
// call). A job is a batch of tickets, one id each, taken in order from a shared counter by
// every thread until none is left; batches under 8 ids, or a pool of 1, run on the caller.
#pragma once
#include <cstdint>

namespace mia {

/** Runs ticket(i, buffer) for every i in [0, count); buffer: this thread's 8 KiB, 4 KiB-aligned. */
using TicketFn = void (*)(void* ctx, uint64_t i, uint8_t* buffer);

/** Threads of the pool (1 when DSV41_IO_THREADS <= 1); creates the pool on first use. */
unsigned PoolThreads();
/** Runs the job to completion; one job at a time process-wide. */
void RunTickets(uint64_t count, TicketFn fn, void* ctx);
/** The calling thread's aligned read buffer (allocated on its first use). */
uint8_t* ThreadBuffer();

constexpr uint64_t kBufferBytes = 8192;
constexpr uint64_t kSerialBelow = 8;

}  // namespace mia
