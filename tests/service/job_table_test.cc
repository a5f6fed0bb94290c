// The service's job table (service/job_table_internal.h): where a job is,
// and the invariants CheckInvariants reports.
#include "service/job_table_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/testlib/test_topology.h"

namespace tessera::scheduler {
namespace {

using service::service_internal::JobTable;
using ::testing::HasSubstr;
using testing::kGiB;
using testing::MakeTopology;

Job MakeJob(JobId id, JobState state, int gpu) {
  Job j;
  j.id = id;
  j.state = state;
  j.allocation.node = 0;
  j.allocation.gpus.push_back({gpu, 1000, kGiB});
  return j;
}

struct Table {
  ClusterState state{MakeTopology({{80, 80, 80}})};
  JobTable jobs;
  std::vector<Job> stored;
  Table() {
    jobs.queue.push_back(MakeJob(1, JobState::kQueued, 0));
    jobs.queue.back().allocation = {};
    for (const Job& j :
         {MakeJob(2, JobState::kRunning, 0), MakeJob(3, JobState::kStarting, 1),
          MakeJob(4, JobState::kRunning, 2)}) {
      EXPECT_TRUE(state.Reserve(j.id, j.allocation).ok());
    }
    jobs.running.emplace(2, MakeJob(2, JobState::kRunning, 0));
    jobs.starting.emplace(3, MakeJob(3, JobState::kStarting, 1));
    Job reservation = MakeJob(4, JobState::kRunning, 2);
    reservation.origin = "k8s";
    jobs.reserved.emplace(4, reservation);
    stored = {jobs.queue[0], jobs.running.at(2), jobs.starting.at(3),
              jobs.reserved.at(4)};
  }
};

TEST(JobTable, FindsAJobWhereverItIs) {
  const Table t;
  for (const JobId id : {1, 2, 3, 4}) {
    const Job* j = t.jobs.Find(id);
    ASSERT_NE(j, nullptr) << id;
    EXPECT_EQ(j->id, id);
  }
  EXPECT_EQ(t.jobs.Find(5), nullptr);
}

TEST(JobTable, ChecksOnePlaceReservationsAndTheStore) {
  Table t;
  EXPECT_EQ(t.jobs.Check(t.state, t.stored), "");
  // In two places.
  t.jobs.queue.push_back(t.jobs.running.at(2));
  EXPECT_THAT(t.jobs.Check(t.state, t.stored),
              HasSubstr("job 2 is in two places of the job table"));
  t.jobs.queue.pop_back();
  // Running, but its GPUs are not reserved.
  t.state.Release(2);
  EXPECT_THAT(t.jobs.Check(t.state, t.stored),
              HasSubstr("job 2 is running but holds nothing"));
  ASSERT_TRUE(t.state.Reserve(2, t.jobs.running.at(2).allocation).ok());
  // The store disagrees: another state, a job memory lacks, one it lacks.
  t.stored[1].state = JobState::kPreempted;
  t.stored.push_back(MakeJob(9, JobState::kQueued, 0));
  t.stored.erase(t.stored.begin());
  const std::string broken = t.jobs.Check(t.state, t.stored);
  EXPECT_THAT(broken,
              HasSubstr("job 2 is preempted in the store, running in memory"));
  EXPECT_THAT(broken, HasSubstr("job 9 is queued in the store, not in memory"));
  EXPECT_THAT(broken, HasSubstr("job 1 is queued in memory, not in the store"));
}

}  // namespace
}  // namespace tessera::scheduler
