// RunSpawned: the child is a fresh start of this test program that serves
// a registered entry; its input and answer travel as bytes, and every way
// it can end is a value for the caller, as with RunIsolated.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/isolated.h"
#include "tests/testlib/sanitized.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// The parent changes it before spawning: a fresh start sees 1, a fork 2.
int g_value_at_start = 1;

std::string Reversed(const std::string& in) {
  return std::string(in.rbegin(), in.rend());
}
std::string ValueAtStart(const std::string&) {
  return std::to_string(g_value_at_start);
}
std::string Segfaults(const std::string&) {
  std::raise(SIGSEGV);
  return "unreachable";
}
std::string Throws(const std::string&) { throw std::runtime_error("no"); }
std::string NeverAnswers(const std::string&) {
  while (true) pause();
}
// Allocates and fills as many MiB as its input says.
std::string Allocates(const std::string& mib) {
  std::vector<char> big(std::stoul(mib) << 20, 1);
  return std::string(1, big[12345]);
}
std::string PrintsToStdout(const std::string&) {
  std::fputs("a library's chatter\n", stdout);
  std::fflush(stdout);
  return "answered";
}

const SpawnEntry kReversed{"test-reversed", &Reversed};
const SpawnEntry kValueAtStart{"test-value-at-start", &ValueAtStart};
const SpawnEntry kSegfaults{"test-segfaults", &Segfaults};
const SpawnEntry kThrows{"test-throws", &Throws};
const SpawnEntry kNeverAnswers{"test-never-answers", &NeverAnswers};
const SpawnEntry kAllocates{"test-allocates", &Allocates};
const SpawnEntry kPrints{"test-prints", &PrintsToStdout};
// Not registered: a start of this program cannot serve it.
const SpawnEntry kUnregistered{"test-unregistered", &ValueAtStart};
TESSERA_SPAWN_ENTRY(kReversed)
TESSERA_SPAWN_ENTRY(kValueAtStart)
TESSERA_SPAWN_ENTRY(kSegfaults)
TESSERA_SPAWN_ENTRY(kThrows)
TESSERA_SPAWN_ENTRY(kNeverAnswers)
TESSERA_SPAWN_ENTRY(kAllocates)
TESSERA_SPAWN_ENTRY(kPrints)

TEST(RunSpawned, TheEntryAnswersItsInput) {
  const std::string input("input\0with nul", 14);
  std::string note;
  Result<std::string> r =
      RunSpawned(kReversed, input, IsolationLimits{}, "the work", &note);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, Reversed(input));
  EXPECT_EQ(note, "");
}

TEST(RunSpawned, LargeInputsAndAnswersTravelWhole) {
  std::string big(2 << 20, 'x');  // far over a socket's buffer
  big[0] = 'a';
  Result<std::string> r =
      RunSpawned(kReversed, big, IsolationLimits{}, "the work");
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->size(), big.size());
  EXPECT_EQ(r->back(), 'a');
  Result<std::string> empty =
      RunSpawned(kReversed, "", IsolationLimits{}, "the work");
  ASSERT_TRUE(empty) << empty.error().message;
  EXPECT_EQ(*empty, "");
}

// The child is a fresh start, not a fork: it shares none of the caller's
// memory, so it sees the program's state as it was at start.
TEST(RunSpawned, TheChildIsAFreshStartOfTheProgram) {
  g_value_at_start = 2;
  Result<std::string> r =
      RunSpawned(kValueAtStart, "", IsolationLimits{}, "the work");
  g_value_at_start = 1;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "1");
}

// An entry this program does not register runs in a fork instead (it
// sees the caller's memory), with a note saying so; later calls still
// spawn.
TEST(RunSpawned, AnEntryTheProgramCannotServeRunsInAFork) {
  g_value_at_start = 2;
  std::string note;
  Result<std::string> r =
      RunSpawned(kUnregistered, "", IsolationLimits{}, "the work", &note);
  Result<std::string> later =
      RunSpawned(kValueAtStart, "", IsolationLimits{}, "the work");
  g_value_at_start = 1;
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "2");
  EXPECT_THAT(note, StartsWith("the work ran in a fork of tessera (this "
                               "program does not serve it: it failed (exit "
                               "code 90))"));
  ASSERT_TRUE(later) << later.error().message;
  EXPECT_EQ(*later, "1");
}

TEST(RunSpawned, ACrashIsAnError) {
  Result<std::string> r =
      RunSpawned(kSegfaults, "", IsolationLimits{}, "the solver");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kInternal);
  EXPECT_THAT(r.error().message, HasSubstr("the solver crashed ("));
}

TEST(RunSpawned, AnExceptionIsAnError) {
  Result<std::string> r =
      RunSpawned(kThrows, "", IsolationLimits{}, "the solver");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message, HasSubstr("the solver threw an exception"));
}

TEST(RunSpawned, PastTheDeadlineTheChildIsKilled) {
  IsolationLimits limits;
  limits.deadline_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  Result<std::string> r = RunSpawned(kNeverAnswers, "", limits, "the solver");
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().message,
              HasSubstr("the solver ran past its deadline of 0.5 s"));
  EXPECT_LT(took, 30.0);  // at the deadline; generous for a loaded machine
}

TEST(RunSpawned, TheMemoryCapStopsAnAllocationPastIt) {
  IsolationLimits limits;
  limits.memory_bytes = int64_t{64} << 20;
  Result<std::string> r = RunSpawned(kAllocates, "1024", limits, "the solver");
  ASSERT_FALSE(r);
  // A sanitizer reports the failed allocation as its own error (an abort).
  EXPECT_THAT(r.error().message,
              HasSubstr(testlib::kSanitized
                            ? "the solver"
                            : "the solver ran out of memory (cap 64 MiB)"));
  limits.memory_bytes = int64_t{512} << 20;
  Result<std::string> under =
      RunSpawned(kAllocates, "64", limits, "the solver");
  ASSERT_TRUE(under) << under.error().message;
  EXPECT_EQ(*under, std::string(1, 1));
}

// What a library prints goes to standard error, never into the caller's
// standard output (a --json document).
TEST(RunSpawned, TheChildsStandardOutputIsTheCallersStandardError) {
  ::testing::internal::CaptureStdout();
  Result<std::string> r =
      RunSpawned(kPrints, "", IsolationLimits{}, "the work");
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "answered");
  EXPECT_EQ(printed, "");
}

TEST(RunSpawned, AnswersWhenSigchldIsIgnored) {
  const sighandler_t before = std::signal(SIGCHLD, SIG_IGN);
  Result<std::string> r =
      RunSpawned(kReversed, "abc", IsolationLimits{}, "the work");
  std::signal(SIGCHLD, before);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(*r, "cba");
}

TEST(RunSpawned, ManyThreadsAtOnce) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &ok] {
      for (int i = 0; i < 3; ++i) {
        const std::string input = std::to_string(t * 100 + i);
        Result<std::string> r =
            RunSpawned(kReversed, input, IsolationLimits{}, "the work");
        ok[t] += r && *r == Reversed(input);
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(ok[t], 3) << "thread " << t;
}

TEST(ByteReader, ArraysComeBackAsWrittenAndABadCountFails) {
  ByteWriter w;
  w.PutArray(std::vector<int>{3, -1, 7});
  w.PutArray(std::vector<double>());
  const std::string bytes = w.Take();
  ByteReader r(bytes);
  std::vector<int> ints;
  std::vector<double> none = {1.0};
  ASSERT_TRUE(r.GetArray(&ints));
  ASSERT_TRUE(r.GetArray(&none));
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(ints, std::vector<int>({3, -1, 7}));
  EXPECT_TRUE(none.empty());

  // A count past the bytes left: false, and nothing allocated for it.
  ByteWriter lie;
  lie.Put(uint64_t{1} << 60);
  const std::string lying = lie.Take();
  ByteReader liar(lying);
  EXPECT_FALSE(liar.GetArray(&ints));
}

}  // namespace
}  // namespace tessera
