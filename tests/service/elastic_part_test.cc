// The service's elastic part (service/elastic_part_internal.h) by itself:
// what the launcher is owed is handed over once; reclaimed workers are
// dying until reaped; the pools asked for extras are the round's only.
#include "service/elastic_part_internal.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tessera::scheduler {
namespace {

using service::service_internal::ElasticCalls;
using service::service_internal::ElasticPart;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(ElasticPart, OwedCallsAreTakenOnce) {
  ElasticPart part;
  part.Notify(7);
  launch::LaunchSpec spec;
  spec.id = 7;
  part.StartWorkers(spec);
  part.StopWorkers(8, {2, 3}, 10, /*reclaimed=*/false);
  ElasticCalls calls = part.Take();
  EXPECT_THAT(calls.notices, ElementsAre(7));
  ASSERT_EQ(calls.worker_starts.size(), 1u);
  EXPECT_EQ(calls.worker_starts[0].id, 7);
  ASSERT_EQ(calls.worker_stops.size(), 1u);
  EXPECT_THAT(calls.worker_stops[0].workers, ElementsAre(2, 3));
  EXPECT_EQ(calls.worker_stops[0].grace_s, 10);
  // Asked back, not reclaimed: not dying.
  EXPECT_FALSE(part.Dying(8));
  calls = part.Take();
  EXPECT_THAT(calls.notices, IsEmpty());
  EXPECT_THAT(calls.worker_starts, IsEmpty());
  EXPECT_THAT(calls.worker_stops, IsEmpty());
}

TEST(ElasticPart, ReclaimedWorkersAreDyingUntilEveryOneIsReaped) {
  ElasticPart part;
  part.StopWorkers(5, {1, 2}, 0, /*reclaimed=*/true);
  EXPECT_TRUE(part.Dying(5));
  part.Reaped(5, {1});
  EXPECT_TRUE(part.Dying(5));
  part.Reaped(6, {1});  // another job's: nothing changes
  part.Reaped(5, {2});
  EXPECT_FALSE(part.Dying(5));
}

TEST(ElasticPart, ReclaimingPoolsLastOneRound) {
  ElasticPart part;
  part.Reclaiming("a");
  part.Reclaiming("a");
  part.Reclaiming("b");
  EXPECT_EQ(part.reclaiming().size(), 2u);
  part.BeginRound();
  EXPECT_THAT(part.reclaiming(), IsEmpty());
}

}  // namespace
}  // namespace tessera::scheduler
