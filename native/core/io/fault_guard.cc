#include "core/io/fault_guard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>

#include <cstring>
#include <mutex>

namespace spark {

namespace {

// Where this thread's guarded call resumes, or null outside one.
thread_local sigjmp_buf* t_resume = nullptr;
struct sigaction g_previous;
bool g_installed = false;

void OnSigbus(int sig, siginfo_t* info, void* uctx) {
  sigjmp_buf* resume = t_resume;
  if (resume != nullptr) {
    t_resume = nullptr;
    siglongjmp(*resume, 1);
  }
  // Not ours: behave as if this handler had never been installed.
  if (g_previous.sa_flags & SA_SIGINFO) {
    g_previous.sa_sigaction(sig, info, uctx);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
    return;
  }
  // Default (or ignored, which the kernel does not honour for a fault): restore the default
  // and return, so the faulting instruction runs again and the process ends with SIGBUS. A
  // SIGBUS sent by kill() (si_code <= 0) has no instruction to run again: raise it anew.
  signal(SIGBUS, SIG_DFL);
  if (info != nullptr && info->si_code <= 0) raise(SIGBUS);
}

void Install() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = OnSigbus;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  g_installed = sigaction(SIGBUS, &sa, &g_previous) == 0;
}

}  // namespace

bool FaultGuardAvailable() {
  static std::once_flag once;
  std::call_once(once, Install);
  return g_installed;
}

bool RunFaultGuarded(void (*fn)(void*), void* ctx) {
  if (!FaultGuardAvailable() || t_resume != nullptr) return false;
  sigjmp_buf resume;
  // savemask 0: no system call on every guarded call. SA_NODEFER leaves SIGBUS unblocked at
  // the jump, but a runtime that wraps signal handlers (ThreadSanitizer's does) may block it
  // anyway, so the rare path that lands here unblocks it: a second fault must not kill.
  if (sigsetjmp(resume, 0) != 0) {  // t_resume was cleared by the handler
    sigset_t bus;
    sigemptyset(&bus);
    sigaddset(&bus, SIGBUS);
    pthread_sigmask(SIG_UNBLOCK, &bus, nullptr);
    return false;
  }
  t_resume = &resume;
  fn(ctx);
  t_resume = nullptr;
  return true;
}

}  // namespace spark
