// Reading a file through a mapping can fault where a read(2) would return an error: the file
// was truncated under the mapping, or the page had been evicted and reading it back failed.
// The kernel reports both as SIGBUS, which would end the process. RunFaultGuarded runs code
// that reads mapped files so that such a fault ends that code instead: the caller gets false
// and reads the same bytes again with read calls, which report the error properly.
#pragma once

namespace spark {

// Runs fn(ctx) on this thread. Returns true when it returned, false when a SIGBUS raised on
// this thread cut it short. fn is abandoned mid-way then, so it must own nothing that needs a
// destructor or an unlock (plain loops of copies over memory owned elsewhere), and whatever it
// wrote so far is unspecified. SIGBUS outside a guarded call goes to the handler that was
// installed before (by default: the process ends, as it would have). Nesting is not allowed.
bool RunFaultGuarded(void (*fn)(void*), void* ctx);

// Whether the SIGBUS handler could be installed; without it nothing may be read through a mapping.
bool FaultGuardAvailable();

}  // namespace spark
