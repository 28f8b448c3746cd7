// execEngine(file, argv, env): replaces this process with the engine (execve), the way `exec`
// does in a shell entrypoint. Used by `spark wrapper` so that, as a container's PID 1, the
// engine itself receives docker's signals and its exit status is the container's, and no Node
// process stays resident (host RAM is GPU memory on these machines).
//
// Node leaves state behind that would reach the engine: SIGPIPE and SIGXFSZ ignored (ignored
// signals survive execve), possibly a non-empty signal mask, O_NONBLOCK on stdio pipes
// (libuv), and FD_CLOEXEC on fds 0-2 (set at startup), which would start the engine with no
// stdin, stdout or stderr. All are reset right before execve and restored if it fails.
#include <napi.h>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "binding/args.h"
#include "binding/errors.h"

namespace spark {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

std::vector<std::string> StringArray(Napi::Value v, const char* what) {
  std::vector<std::string> out = StringList(v, what);
  for (const auto& s : out) {
    if (s.find('\0') != std::string::npos) ThrowType(v.Env(), std::string(what) + " must not contain NUL bytes");
  }
  return out;
}

std::vector<char*> CStrings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Candidate paths for `file` the way execvp searches, but over the PATH of the environment
// the engine will get (not this process's). An empty PATH element means the current directory.
std::vector<std::string> Candidates(const std::string& file, const std::vector<std::string>& env) {
  if (file.find('/') != std::string::npos) return {file};
  std::string path = kDefaultPath;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    size_t colon = path.find(':', begin);
    std::string dir = path.substr(begin, colon == std::string::npos ? std::string::npos : colon - begin);
    out.push_back(dir.empty() ? file : dir + "/" + file);
    if (colon == std::string::npos) break;
    begin = colon + 1;
  }
  return out;
}

struct SavedProcessState {
  struct sigaction actions[NSIG];
  bool saved[NSIG] = {};
  sigset_t mask;
  int stdio_flags[3] = {-1, -1, -1};
  int stdio_fd_flags[3] = {-1, -1, -1};

  // Everything the engine should start with: default dispositions, nothing blocked, blocking stdio.
  void ResetForExec() {
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sig == SIGKILL || sig == SIGSTOP) continue;
      if (sigaction(sig, &dfl, &actions[sig]) == 0) saved[sig] = true;
    }
    sigset_t empty;
    sigemptyset(&empty);
    pthread_sigmask(SIG_SETMASK, &empty, &mask);
    for (int fd = 0; fd < 3; ++fd) {
      stdio_flags[fd] = fcntl(fd, F_GETFL);
      if (stdio_flags[fd] >= 0 && (stdio_flags[fd] & O_NONBLOCK)) fcntl(fd, F_SETFL, stdio_flags[fd] & ~O_NONBLOCK);
      stdio_fd_flags[fd] = fcntl(fd, F_GETFD);
      if (stdio_fd_flags[fd] >= 0 && (stdio_fd_flags[fd] & FD_CLOEXEC))
        fcntl(fd, F_SETFD, stdio_fd_flags[fd] & ~FD_CLOEXEC);
    }
  }

  // execve failed: give Node back its handlers so it can report the error and exit normally.
  void Restore() {
    for (int fd = 0; fd < 3; ++fd) {
      if (stdio_flags[fd] >= 0) fcntl(fd, F_SETFL, stdio_flags[fd]);
      if (stdio_fd_flags[fd] >= 0) fcntl(fd, F_SETFD, stdio_fd_flags[fd]);
    }
    pthread_sigmask(SIG_SETMASK, &mask, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (saved[sig]) sigaction(sig, &actions[sig], nullptr);
    }
  }
};

Napi::Value ExecEngine(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 3 || !info[0].IsString()) ThrowType(env, "execEngine(file, argv, env)");
  std::string file = info[0].As<Napi::String>().Utf8Value();
  if (file.empty()) ThrowType(env, "execEngine: the engine command is empty");
  std::vector<std::string> argv = StringArray(info[1], "argv");
  std::vector<std::string> envp = StringArray(info[2], "env");
  if (argv.empty()) ThrowType(env, "execEngine: argv must hold at least the program name");
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_envp = CStrings(envp);

  std::vector<std::string> candidates = Candidates(file, envp);
  // Like execvp: EACCES on one candidate is remembered but the search goes on; ENOENT and
  // ENOTDIR just move on; any other error stops the search.
  int last_err = ENOENT;
  bool saw_eacces = false;
  static SavedProcessState state;  // NSIG sigactions: too large for a comfortable stack frame
  for (const auto& path : candidates) {
    state = SavedProcessState{};
    state.ResetForExec();
    execve(path.c_str(), c_argv.data(), c_envp.data());
    int err = errno;
    state.Restore();
    if (err == EACCES) saw_eacces = true;
    last_err = err;
    if (err != ENOENT && err != ENOTDIR && err != EACCES) break;
  }
  if (saw_eacces && (last_err == ENOENT || last_err == ENOTDIR)) last_err = EACCES;
  std::string where = file.find('/') != std::string::npos ? file : "'" + file + "' in PATH";
  Napi::Error err = StatusToError(
      env, Status::Error(Code::E_EXEC, "cannot run the engine " + where + ": " + std::strerror(last_err)));
  err.Value().Set("errno", last_err);
  throw err;
}

}  // namespace

void InitExec(Napi::Env env, Napi::Object exports) {
  exports.Set("execEngine", Napi::Function::New(env, ExecEngine, "execEngine"));
}

}  // namespace spark
