// One task at a time on a thread of its own: a packer or verifier worker reads chunk k + 1
// there while it checksums, compares or writes chunk k itself (double buffering). The thread
// starts with the first task and is joined by the destructor.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "core/base/noncopyable.h"
#include "core/base/status.h"

namespace spark {

class Background : NonCopyable {
 public:
  ~Background();

  // Starts `task`; the previous one must have been waited for.
  void Start(std::function<Status()> task);
  // Waits for the task started last and returns its status (Ok when none is outstanding).
  Status Wait();

 private:
  void Loop();

  std::mutex mu_;
  std::condition_variable cv_;
  std::function<Status()> task_;  // guarded by mu_
  bool pending_ = false, running_ = false, quit_ = false;
  Status result_;
  std::thread thread_;
};

}  // namespace spark
