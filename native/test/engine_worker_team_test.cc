// The engine libraries' worker team (native/engine-libs/common/worker_team.h): a posted task runs
// on a worker after Post returns, one at a time, and WaitPosted returns only once it has run;
// with no workers it runs at once on the caller. Run under TSan by run.sh --tsan.
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#include "engine-libs/common/worker_team.h"
#include "test/testing.h"

using spark::engines::WorkerTeam;

namespace {

struct Task {
  std::atomic<bool> release{false};  // the task waits for this before it finishes
  std::atomic<int> runs{0};
  pthread_t ran_on{};
  uint64_t value = 0;  // written by the task, read after WaitPosted (no atomics: TSan checks the order)
};

void Slow(void* ctx) {
  auto* t = static_cast<Task*>(ctx);
  while (!t->release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  t->ran_on = pthread_self();
  t->value = 42;
  t->runs.fetch_add(1);
}

void Quick(void* ctx) {
  auto* t = static_cast<Task*>(ctx);
  t->ran_on = pthread_self();
  t->value += 1;
  t->runs.fetch_add(1);
}

}  // namespace

TEST(a_posted_task_runs_on_a_worker_after_post_returns) {
  WorkerTeam team;
  CHECK(team.Start(2));
  Task t;
  team.Post(&Slow, &t);  // returns while the task still waits
  CHECK_EQ(t.runs.load(), 0);
  t.release.store(true);
  team.WaitPosted();
  CHECK_EQ(t.runs.load(), 1);
  CHECK_EQ(t.value, 42u);
  CHECK(!pthread_equal(t.ran_on, pthread_self()));
}

TEST(posts_run_one_at_a_time_in_order) {
  WorkerTeam team;
  CHECK(team.Start(4));
  Task t;
  for (int i = 0; i < 1000; ++i) team.Post(&Quick, &t);  // each waits for the one before
  team.WaitPosted();
  CHECK_EQ(t.runs.load(), 1000);
  CHECK_EQ(t.value, 1000u);
}

TEST(no_workers_run_it_here_and_now) {
  WorkerTeam team;
  CHECK(team.Start(0));
  Task t;
  team.Post(&Quick, &t);
  CHECK_EQ(t.runs.load(), 1);
  CHECK(pthread_equal(t.ran_on, pthread_self()));
  team.WaitPosted();  // nothing posted: returns at once
}

TEST(a_job_between_posts_and_a_team_going_away) {
  Task t;
  {
    WorkerTeam team;
    CHECK(team.Start(3));
    team.Post(&Quick, &t);
    std::atomic<int> items{0};
    team.Run([](void* ctx, size_t, unsigned) { static_cast<std::atomic<int>*>(ctx)->fetch_add(1); }, &items, 100);
    CHECK_EQ(items.load(), 100);
    team.WaitPosted();
    CHECK_EQ(t.runs.load(), 1);
    team.Post(&Quick, &t);  // may or may not run before the team stops; never after it is gone
  }
  CHECK(t.runs.load() >= 1 && t.runs.load() <= 2);
}

// Idle work (the overlay's prefetch reads) runs until job_open(); a posted task must make it
// return, or a gather waiting for the last one's inserts would wait as long as prefetches come.
TEST(idle_work_gives_way_to_a_posted_task) {
  struct Idle {
    WorkerTeam* team = nullptr;
    std::atomic<bool> quit{false};  // lets the hook end before the team is destroyed
  } ctx;
  auto idle = [](void* p, unsigned) {
    auto* c = static_cast<Idle*>(p);
    while (!c->team->job_open() && !c->quit.load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  WorkerTeam team;
  ctx.team = &team;
  CHECK(team.Start(2, idle, &ctx));
  team.Nudge(2);  // both workers in the idle hook
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  Task t;
  team.Post(&Quick, &t);
  // Waits up to 5 s for the task; then ends the idle work anyway, so a failure is not a hang.
  const auto start = std::chrono::steady_clock::now();
  while (t.runs.load() == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  CHECK_EQ(t.runs.load(), 1);
  ctx.quit.store(true);
  team.WaitPosted();
}

int main() { return spark_test::RunAll("engine_worker_team_test"); }
