#ifndef TESSERA_TESTS_SERVICE_STORE_TEST_JOBS_H_
#define TESSERA_TESTS_SERVICE_STORE_TEST_JOBS_H_

// What the store's tests share: the fixture that runs a test on each
// database, a small queued job and its submission event, and threads that
// start together (the tests of races).

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <memory>

#include "scheduler/job.h"
#include "service/service.h"
#include "service/store_internal.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::testlib {

// Tests every store passes, on SQLite (a file) and on PostgreSQL (a real
// server the test starts: tests/testlib/postgres_server.h); the parameter
// is "sqlite" or "postgres".
class EachStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      postgres_ = std::make_unique<PostgresServer>();
      ASSERT_EQ(postgres_->error(), "");
      ASSERT_TRUE(postgres_->CreateDatabase("jobs")) << postgres_->error();
    }
  }
  // The store (again: the same file or database each time).
  std::unique_ptr<service::Store> Open() {
    service::StoreOptions o;
    if (GetParam() == "postgres") {
      o.postgres_url = postgres_->Url("jobs");
      o.postgres_password_file = postgres_->password_file();
    }
    auto s = service::Store::Open(o, dir_.File("jobs.db"));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }

  TempDir dir_;
  std::unique_ptr<PostgresServer> postgres_;
};

// A queued job of `user`: a quarter of a GPU in pool "a", running `true`.
inline scheduler::Job QueuedJob(const std::string& user) {
  scheduler::Job job;
  job.user = user;
  job.request.name = user + "-job";
  job.request.pool = "a";
  job.request.command = {"true"};
  job.request.resources = scheduler::Resources{0, 250, 1024, 0, 0};
  job.demand = *job.request.resources;
  job.submitted_at = 1000;
  return job;
}

inline service::JobEvent SubmittedEvent(const std::string& user) {
  return service::JobEvent{0, 1000, user, "laptop", "submitted", "pool a"};
}

// Runs fn(0) ... fn(n - 1) on threads of their own, released together.
inline void Together(int n, const std::function<void(int)>& fn) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      ready++;
      while (ready.load() < n) std::this_thread::yield();
      fn(i);
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace tessera::testlib

#endif  // TESSERA_TESTS_SERVICE_STORE_TEST_JOBS_H_
