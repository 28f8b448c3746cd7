#include "core/threads/background.h"

#include <exception>

namespace spark {

Background::~Background() {
  {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !pending_ && !running_; });
    quit_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Background::Start(std::function<Status()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    task_ = std::move(task);
    pending_ = true;
    result_ = Status::Ok();
    if (!thread_.joinable()) thread_ = std::thread([this] { Loop(); });
  }
  cv_.notify_all();
}

Status Background::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_ && !running_; });
  Status s = result_;
  result_ = Status::Ok();
  return s;
}

void Background::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return pending_ || quit_; });
    if (!pending_) return;  // quit
    std::function<Status()> task = std::move(task_);
    pending_ = false;
    running_ = true;
    lock.unlock();
    Status s;
    try {
      s = task();
    } catch (const std::exception& e) {
      s = Status::Error(Code::E_INTERNAL, std::string("a background read failed: ") + e.what());
    }
    lock.lock();
    running_ = false;
    result_ = s;
    cv_.notify_all();
  }
}

}  // namespace spark
