// A job that runs out of GPU memory ends `oom` (issue 31): its stderr's
// last error says so (launch/out_of_memory.h), and the reason says what it
// held and asked for; a failure that only looks similar stays `failed`,
// and the state survives a restart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "service/service.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/scripted_launcher.h"

namespace tessera::scheduler {

using service::Service;
using service::ServiceOptions;
using service::User;

namespace {

using ::testing::HasSubstr;

class OomTest : public ::testing::Test {
 protected:
  std::unique_ptr<Service> Make() {
    ServiceOptions o;
    o.topology = TwoPools();
    o.db_path = dir_.File("q.db");
    o.log_dir = dir_.File("logs");
    o.start_thread = false;
    auto launcher = std::make_unique<ScriptedLauncher>();
    launcher->log_dir = dir_.path().string();
    launcher_ = launcher.get();
    auto s = Service::Start(std::move(o), std::move(launcher));
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  // Job `id` wrote `err` to stderr and exited with `code`.
  void Ends(JobId id, const std::string& err, int code) {
    std::ofstream(dir_.File(std::to_string(id) + ".err")) << err;
    launcher_->Exit(id, code);
  }
  Job Get(Service& s, JobId id) {
    auto j = s.Get(id);
    EXPECT_TRUE(j && *j);
    return j && *j ? **j : Job{};
  }

  testlib::TempDir dir_;
  ScriptedLauncher* launcher_ = nullptr;
  const User alice_{"alice", "", false, ""};
};

TEST_F(OomTest, OutOfGpuMemoryEndsOomNotFailed) {
  auto s = Make();
  auto oom = s->Submit(alice_, Fraction(500, 2930));
  auto similar = s->Submit(alice_, Fraction(300, 1024));
  auto fine = s->Submit(alice_, Fraction(100, 1024));
  ASSERT_TRUE(oom && similar && fine);
  s->Tick();
  Ends(oom->id,
       "Traceback (most recent call last):\n"
       "  File \"train.py\", line 9, in <module>\n"
       "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 "
       "GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.50 GiB is "
       "free.\n",
       1);
  Ends(similar->id,
       "INFO: reducing the batch to avoid CUDA out of memory\n"
       "ValueError: bad config\n",
       1);
  // Exit 0: whatever it printed, it succeeded.
  Ends(fine->id, "torch.OutOfMemoryError: CUDA out of memory. (caught)\n", 0);
  s->Tick();
  const Job o = Get(*s, oom->id);
  EXPECT_EQ(o.state, JobState::kOom);
  EXPECT_THAT(o.reason, HasSubstr("out of GPU memory: held 2930 MiB, asked "
                                  "for 4096 MiB more (pytorch: "));
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(Get(*s, similar->id).state, JobState::kFailed);
  EXPECT_EQ(Get(*s, fine->id).state, JobState::kSucceeded);
  EXPECT_EQ(s->CheckInvariants(), "");
  // The events say it, and the state is kept across a restart.
  auto events = s->Events(oom->id);
  ASSERT_TRUE(events);
  EXPECT_EQ(events->back().action, "oom");
  s.reset();
  s = Make();
  EXPECT_EQ(Get(*s, oom->id).state, JobState::kOom);
}

}  // namespace
}  // namespace tessera::scheduler
