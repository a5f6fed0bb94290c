// RunIsolated: every way a child can end is a value for the caller, and the
// caller's state is never touched.
#include "common/isolated.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "tests/testlib/sanitized.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;

TEST(RunIsolated, ReturnsTheChildsBytes) {
  Result<std::string> r =
      RunIsolated([] { return std::string("answer\0with nul", 15); },
                  IsolationLimits{}, "the work");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, std::string("answer\0with nul", 15));
}

TEST(RunIsolated, ALargeAnswerComesBackWhole) {
  const std::string big(8 << 20, 'x');  // far over a pipe's buffer
  Result<std::string> r =
      RunIsolated([&] { return big; }, IsolationLimits{}, "the work");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->size(), big.size());
}

TEST(RunIsolated, TheChildCannotChangeTheCallersMemory) {
  int counter = 1;
  Result<std::string> r = RunIsolated(
      [&] {
        counter = 42;
        return std::string();
      },
      IsolationLimits{}, "the work");
  ASSERT_TRUE(r);
  EXPECT_EQ(counter, 1);
}

TEST(RunIsolated, ASegfaultIsAnError) {
  Result<std::string> r = RunIsolated(
      [] {
        std::raise(SIGSEGV);
        return std::string("unreachable");
      },
      IsolationLimits{}, "the solver");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInternal);
  EXPECT_THAT(r.error().message, HasSubstr("the solver crashed ("));
}

TEST(RunIsolated, AnAbortIsAnError) {
  Result<std::string> r = RunIsolated(
      [] {
        std::abort();
        return std::string();
      },
      IsolationLimits{}, "the solver");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("the solver crashed (Aborted)"));
}

TEST(RunIsolated, AnExceptionIsAnError) {
  Result<std::string> r =
      RunIsolated([]() -> std::string { throw std::runtime_error("no"); },
                  IsolationLimits{}, "the solver");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("the solver threw an exception"));
}

TEST(RunIsolated, PastTheDeadlineTheChildIsKilled) {
  IsolationLimits limits;
  limits.deadline_s = 0.2;
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::string> r = RunIsolated(
      [] {
        while (true) pause();  // never answers
        return std::string();
      },
      limits, "the solver");
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("the solver ran past its deadline of 0.2 s"));
  // Returned at the deadline, not when the work would have ended (never);
  // generous for a loaded machine.
  EXPECT_LT(took, 30.0);
}

// Sanitizers reserve their own memory and report an allocation over
// RLIMIT_AS as their own error (an abort): the cap still holds, only the
// message differs.
using testlib::kSanitized;

TEST(RunIsolated, TheMemoryCapStopsAnAllocationPastIt) {
  IsolationLimits limits;
  limits.memory_bytes = int64_t{64} << 20;
  Result<std::string> r = RunIsolated(
      [] {
        std::vector<char> big(size_t{1} << 30, 1);  // 1 GiB > 64 MiB
        return std::string(1, big[12345]);
      },
      limits, "the solver");
  ASSERT_FALSE(r);
  if (!kSanitized) {
    EXPECT_THAT(r.error().message,
                HasSubstr("the solver ran out of memory (cap 64 MiB)"));
  } else {
    EXPECT_THAT(r.error().message, HasSubstr("the solver"));
  }
}

TEST(RunIsolated, UnderTheCapTheWorkRuns) {
  IsolationLimits limits;
  limits.memory_bytes = int64_t{512} << 20;
  limits.deadline_s = 60;
  Result<std::string> r = RunIsolated(
      [] {
        std::vector<char> v(size_t{64} << 20, 7);
        return std::string(1, v.back());
      },
      limits, "the solver");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, std::string(1, 7));
}

// A program that ignores SIGCHLD has its children reaped by the kernel:
// waitpid finds none, and the answer still comes back.
TEST(RunIsolated, AnswersWhenSigchldIsIgnored) {
  const sighandler_t before = std::signal(SIGCHLD, SIG_IGN);
  Result<std::string> r = RunIsolated([] { return std::string("still here"); },
                                      IsolationLimits{}, "the work");
  std::signal(SIGCHLD, before);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "still here");
}

TEST(RunIsolated, ManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> ok(8, 0);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([t, &ok] {
      for (int i = 0; i < 5; ++i) {
        Result<std::string> r =
            RunIsolated([t, i] { return std::to_string(t * 100 + i); },
                        IsolationLimits{}, "the work");
        ok[t] += r && *r == std::to_string(t * 100 + i);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(ok[t], 5) << "thread " << t;
}

TEST(ByteReader, ReadsWhatWasWrittenAndNoMore) {
  ByteWriter w;
  w.Put(int32_t{7});
  const double xs[3] = {1.5, -2.0, 3.25};
  w.PutDoubles(xs, 3);
  const std::string bytes = w.Take();
  ByteReader r(bytes);
  int32_t i = 0;
  std::vector<double> got;
  ASSERT_TRUE(r.Get(&i));
  ASSERT_TRUE(r.GetDoubles(3, &got));
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(i, 7);
  EXPECT_EQ(got, std::vector<double>({1.5, -2.0, 3.25}));
  double extra = 0;
  EXPECT_FALSE(r.Get(&extra));
  EXPECT_FALSE(r.at_end());

  // No doubles: nothing copied from or to a null pointer (UBSan).
  ByteWriter empty_writer;
  empty_writer.PutDoubles(std::vector<double>().data(), 0);
  const std::string empty = empty_writer.Take();
  ByteReader empty_reader(empty);
  std::vector<double> none = {1.0};
  EXPECT_TRUE(empty_reader.GetDoubles(0, &none));
  EXPECT_TRUE(none.empty());
  EXPECT_TRUE(empty_reader.at_end());

  ByteReader wrong_count(bytes);
  ASSERT_TRUE(wrong_count.Get(&i));
  EXPECT_FALSE(wrong_count.GetDoubles(4, &got));
}

}  // namespace
}  // namespace tessera
