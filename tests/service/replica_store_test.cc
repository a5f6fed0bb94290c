// The store's part in replicas (docs/operations.md, "High availability"),
// against a real PostgreSQL the test starts (tests/testlib/
// postgres_server.h): the lease (taken when free or lapsed with the next
// epoch, renewed by its holder with the same epoch, let go at once on a
// clean stop, read without a change; replicas asking at once elect one and
// all hear which); fencing (a store fenced at an epoch writes while that
// epoch holds and nothing at all once another replica took the lease; a
// follower's store only what goes to the leader); the inbox (in order,
// cleared up to a point, one transaction with the insert). Idempotency
// keys on both databases: idempotency_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <ctime>
#include <functional>
#include <thread>

#include "service/store_internal.h"
#include "tests/service/store_test_jobs.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/postgres_server.h"

namespace tessera::scheduler {

// The store under test (service/).
using service::InboxItem;
using service::InsertOptions;
using service::JobEvent;
using service::Lease;
using service::Store;
using service::StoreOptions;

namespace {

using testlib::QueuedJob;
using testlib::SubmittedEvent;
using testlib::Together;

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

// Polls `done` every 20 ms until it holds or `seconds` have passed.
bool EventuallyStored(const std::function<bool()>& done, double seconds = 10) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(seconds));
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// A fenced write's refusal: kUnavailable, "fenced", naming the replica
// that leads now.
template <typename R>
void ExpectFenced(const R& r, const std::string& what,
                  const std::string& leader) {
  ASSERT_FALSE(r) << what << " was not refused";
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable) << what;
  EXPECT_THAT(r.error().message, HasSubstr("fenced")) << what;
  EXPECT_THAT(r.error().message, HasSubstr("'" + leader + "'")) << what;
}

class ReplicaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pg_.error(), "");
    ASSERT_TRUE(pg_.CreateDatabase("jobs")) << pg_.error();
  }
  // Another connection to the one database (another replica's store).
  std::unique_ptr<Store> Open() {
    StoreOptions o;
    o.postgres_url = pg_.Url("jobs");
    o.postgres_password_file = pg_.password_file();
    auto s = Store::OpenPostgres(o);
    EXPECT_TRUE(s) << s.error().message;
    return s ? std::move(s).value() : nullptr;
  }
  static Lease Acquire(Store& store, const std::string& replica,
                       double lease_s) {
    auto l =
        store.AcquireLease(replica, "http://" + replica + ":8080", lease_s);
    EXPECT_TRUE(l) << l.error().message;
    return l ? *l : Lease{};
  }
  static Lease Read(Store& store) {
    auto l = store.ReadLease();
    EXPECT_TRUE(l) << l.error().message;
    return l ? *l : Lease{};
  }
  // Waits until the lease has lapsed (by the database's clock).
  static bool Lapsed(Store& store) {
    return EventuallyStored([&] { return Read(store).remaining_s <= 0; });
  }

  testlib::PostgresServer pg_;
};

TEST_F(ReplicaStoreTest, TheFirstReplicaTakesAFreeLeaseWithEpochOne) {
  auto store = Open();
  ASSERT_TRUE(store);
  const Lease none = Read(*store);
  EXPECT_EQ(none.holder, "");
  EXPECT_EQ(none.epoch, 0);
  EXPECT_LE(none.remaining_s, 0);

  const double now = static_cast<double>(std::time(nullptr));
  const Lease l = Acquire(*store, "r1", 5);
  EXPECT_EQ(l.holder, "r1");
  EXPECT_EQ(l.address, "http://r1:8080");
  EXPECT_EQ(l.epoch, 1);
  EXPECT_NEAR(l.since, now, 60);  // the database's clock, this machine's
  EXPECT_GT(l.remaining_s, 4);
  EXPECT_LE(l.remaining_s, 5);
  const Lease read = Read(*store);
  EXPECT_EQ(read.holder, "r1");
  EXPECT_EQ(read.epoch, 1);
  EXPECT_EQ(read.since, l.since);
}

TEST_F(ReplicaStoreTest, TheHoldersRenewalKeepsTheEpochAndExtendsTheLease) {
  auto store = Open();
  ASSERT_TRUE(store);
  const Lease first = Acquire(*store, "r1", 2);
  ASSERT_EQ(first.epoch, 1);
  ASSERT_TRUE(EventuallyStored([&] { return Read(*store).remaining_s < 1.7; }));
  const Lease renewed =
      store->AcquireLease("r1", "http://r1-new:8080", 2).value();
  EXPECT_EQ(renewed.holder, "r1");
  EXPECT_EQ(renewed.epoch, 1);
  EXPECT_EQ(renewed.since, first.since);  // held since it was taken
  EXPECT_GT(renewed.remaining_s, 1.9);
  EXPECT_EQ(renewed.address, "http://r1-new:8080");
  // Another store's view agrees.
  auto other = Open();
  ASSERT_TRUE(other);
  const Lease seen = Read(*other);
  EXPECT_EQ(seen.epoch, 1);
  EXPECT_GT(seen.remaining_s, 1.7);
}

TEST_F(ReplicaStoreTest, NobodyElseTakesAHeldLeaseButAnyoneALapsedOne) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  const Lease taken = Acquire(*a, "r1", 0.6);
  ASSERT_EQ(taken.holder, "r1");
  // r2 asks while r1 holds it: the lease as it is, unchanged.
  const Lease refused = Acquire(*b, "r2", 30);
  EXPECT_EQ(refused.holder, "r1");
  EXPECT_EQ(refused.epoch, 1);
  EXPECT_EQ(refused.address, "http://r1:8080");
  EXPECT_LE(refused.remaining_s, 0.6);
  EXPECT_EQ(Read(*a).holder, "r1");

  ASSERT_TRUE(Lapsed(*b));
  const Lease took = Acquire(*b, "r2", 30);
  EXPECT_EQ(took.holder, "r2");
  EXPECT_EQ(took.address, "http://r2:8080");
  EXPECT_EQ(took.epoch, 2);
  EXPECT_GE(took.since, taken.since);
  EXPECT_GT(took.remaining_s, 29);
  // r1 comes back too late: r2 holds it now.
  const Lease late = Acquire(*a, "r1", 30);
  EXPECT_EQ(late.holder, "r2");
  EXPECT_EQ(late.epoch, 2);
}

TEST_F(ReplicaStoreTest, AReleasedLeaseIsTakenAtOnce) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  ASSERT_EQ(Acquire(*a, "r1", 60).epoch, 1);
  // Only the holder lets go.
  ASSERT_TRUE(b->ReleaseLease("r2"));
  EXPECT_EQ(Acquire(*b, "r2", 60).holder, "r1");
  ASSERT_TRUE(a->ReleaseLease("r1"));
  EXPECT_LE(Read(*b).remaining_s, 0);
  const Lease took = Acquire(*b, "r2", 60);
  EXPECT_EQ(took.holder, "r2");
  EXPECT_EQ(took.epoch, 2);
}

// Replicas starting together: one takes the lease, and every other one
// hears who did.
TEST_F(ReplicaStoreTest, ReplicasAskingTogetherElectOne) {
  constexpr int kReplicas = 6;
  std::vector<std::unique_ptr<Store>> stores;
  for (int i = 0; i < kReplicas; ++i) stores.push_back(Open());
  std::vector<Lease> got(kReplicas);
  Together(kReplicas, [&](int i) {
    got[i] = Acquire(*stores[i], "r" + std::to_string(i), 30);
  });
  const Lease now = Read(*stores[0]);
  EXPECT_EQ(now.epoch, 1);
  int winners = 0;
  for (int i = 0; i < kReplicas; ++i) {
    winners += got[i].holder == "r" + std::to_string(i);
    EXPECT_EQ(got[i].holder, now.holder) << "r" << i << " heard otherwise";
    EXPECT_EQ(got[i].epoch, 1) << "r" << i;
  }
  EXPECT_EQ(winners, 1);
}

// A holder whose lease lapsed races another replica for it: if the other
// takes it, the old holder must hear so (else it would go on leading).
TEST_F(ReplicaStoreTest, ALapsedHolderThatLosesTheRaceHearsTheWinner) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  for (int round = 0; round < 15; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ASSERT_TRUE(EventuallyStored(
        [&] { return Acquire(*a, "r1", 0.05).holder == "r1"; }));
    ASSERT_TRUE(Lapsed(*a));
    Lease got[2];
    Together(2, [&](int i) {
      got[i] = Acquire(i == 0 ? *a : *b, i == 0 ? "r1" : "r2", 0.3);
    });
    EXPECT_EQ(got[0].holder, got[1].holder);
    EXPECT_EQ(got[0].epoch, got[1].epoch);
  }
}

TEST_F(ReplicaStoreTest, ReadingTheLeaseChangesNothing) {
  auto a = Open();
  auto b = Open();
  ASSERT_TRUE(a && b);
  const Lease taken = Acquire(*a, "r1", 0.5);
  double last = taken.remaining_s;
  for (int i = 0; i < 5; ++i) {
    const Lease l = Read(*b);
    EXPECT_EQ(l.holder, "r1");
    EXPECT_EQ(l.epoch, 1);
    EXPECT_EQ(l.since, taken.since);
    EXPECT_LE(l.remaining_s, last);  // never extended
    last = l.remaining_s;
  }
  ASSERT_TRUE(Lapsed(*b));
  // Lapsed, still r1's row: reading took nothing and bumped nothing.
  const Lease lapsed = Read(*b);
  EXPECT_EQ(lapsed.holder, "r1");
  EXPECT_EQ(lapsed.epoch, 1);
  EXPECT_EQ(Acquire(*b, "r3", 5).epoch, 2);
}

// A leader (fenced at its epoch) writes every kind of write while its
// epoch holds; once another replica took the lease, every one of them is
// refused and nothing of them is in the database.
TEST_F(ReplicaStoreTest, AFencedStoreWritesNothingOnceAnotherLeads) {
  auto leader = Open();
  auto other = Open();
  ASSERT_TRUE(leader && other);
  ASSERT_EQ(Acquire(*leader, "r1", 60).epoch, 1);
  leader->SetFence(1);

  // While epoch 1 holds: every write goes through.
  const JobEvent submitted = SubmittedEvent("alice");
  auto id = leader->Insert(QueuedJob("alice"), &submitted);
  ASSERT_TRUE(id) << id.error().message;
  Job job = leader->Get(*id)->value();
  job.state = JobState::kRunning;
  const JobEvent started{*id, 1001, "scheduler", "", "started", "node0"};
  ASSERT_TRUE(leader->Update(job, &started));
  ASSERT_TRUE(leader->UpdateAll({job}));
  ASSERT_TRUE(leader->AddEvent({*id, 1002, "alice", "", "noted", "x"}));
  ASSERT_TRUE(leader->PutRecord("learned", "v1"));
  InboxItem cancel{0, InboxItem::Kind::kCancel, *id, "bob", "", "why"};
  ASSERT_TRUE(other->Tell(cancel, nullptr));
  auto inbox = leader->ReadInbox(10);
  ASSERT_TRUE(inbox && inbox->size() == 1u);
  ASSERT_TRUE(leader->ClearInbox(inbox->back().seq));
  EXPECT_TRUE(other->ReadInbox(10)->empty());
  auto keyed = leader->InsertJob(QueuedJob("alice"), nullptr,
                                 InsertOptions{"key-1", false});
  ASSERT_TRUE(keyed) << keyed.error().message;

  // What the database holds before the leader is fenced out.
  ASSERT_TRUE(other->Tell(cancel, nullptr));
  const size_t jobs = other->LoadAll()->size();
  const size_t events = other->Events(*id)->size();
  const size_t node_events = other->Events(0)->size();
  ASSERT_EQ(jobs, 2u);
  ASSERT_EQ(events, 3u);

  // r1 lets go (its lease thread stopped, say) and r2 takes the lease.
  ASSERT_TRUE(other->ReleaseLease("r1"));
  ASSERT_EQ(Acquire(*other, "r2", 60).epoch, 2);

  ExpectFenced(leader->Insert(QueuedJob("alice"), &submitted), "Insert", "r2");
  ExpectFenced(leader->InsertJob(QueuedJob("alice"), &submitted,
                                 InsertOptions{"key-2", false}),
               "InsertJob", "r2");
  Job ended = job;
  ended.state = JobState::kSucceeded;
  const JobEvent exited{*id, 1003, "scheduler", "", "succeeded", ""};
  ExpectFenced(leader->Update(ended, &exited), "Update", "r2");
  ExpectFenced(leader->UpdateAll({ended}), "UpdateAll", "r2");
  ExpectFenced(leader->AddEvent(exited), "AddEvent", "r2");
  ExpectFenced(leader->AddEvent({0, 1003, "root", "", "drained", "node0"}),
               "AddEvent (node)", "r2");
  ExpectFenced(leader->PutRecord("learned", "v2"), "PutRecord", "r2");
  inbox = other->ReadInbox(10);
  ASSERT_TRUE(inbox && inbox->size() == 1u);
  ExpectFenced(leader->ClearInbox(inbox->back().seq), "ClearInbox", "r2");
  // The refusal names the epochs too.
  Status s = leader->AddEvent(exited);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.error().message, HasSubstr("epoch 2"));

  // Nothing of it was written, as another replica sees the database.
  EXPECT_EQ(other->LoadAll()->size(), jobs);
  EXPECT_EQ(other->Get(*id)->value().state, JobState::kRunning);
  EXPECT_EQ(other->Events(*id)->size(), events);
  EXPECT_EQ(other->Events(0)->size(), node_events);
  EXPECT_EQ(other->GetRecord("learned")->value(), "v1");
  EXPECT_EQ(other->ReadInbox(10)->size(), 1u);
  auto again = other->InsertJob(QueuedJob("alice"), nullptr,
                                InsertOptions{"key-2", false});
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->existed);  // the refused insert stored no key
  // Reads are not fenced.
  EXPECT_TRUE(leader->Get(*id));
  EXPECT_TRUE(leader->LoadAll());

  // Unfenced (SetFence(0): one service alone), the same connection
  // writes again.
  leader->SetFence(0);
  ASSERT_TRUE(leader->Update(ended, &exited));
  EXPECT_EQ(other->Get(*id)->value().state, JobState::kSucceeded);
  ASSERT_TRUE(leader->PutRecord("learned", "v3"));
  EXPECT_EQ(other->GetRecord("learned")->value(), "v3");
  // Fenced at the epoch that holds now, it writes too.
  leader->SetFence(2);
  ASSERT_TRUE(leader->ClearInbox(inbox->back().seq));
  EXPECT_TRUE(other->ReadInbox(10)->empty());
}

// A follower's store (SetFence(-1)) writes only what goes to the leader:
// its submissions and its requests; the rest is refused, whoever leads.
TEST_F(ReplicaStoreTest, AFollowersStoreWritesOnlyForTheLeader) {
  auto follower = Open();
  auto other = Open();
  ASSERT_TRUE(follower && other);
  ASSERT_EQ(Acquire(*other, "r1", 60).epoch, 1);
  auto id = other->Insert(QueuedJob("alice"));
  ASSERT_TRUE(id);
  follower->SetFence(-1);
  auto told = follower->InsertJob(QueuedJob("bob"), nullptr,
                                  InsertOptions{"k", /*tell_leader=*/true});
  ASSERT_TRUE(told) << told.error().message;
  ASSERT_TRUE(
      follower->Tell({0, InboxItem::Kind::kCancel, *id, "a", "", ""}, nullptr));
  EXPECT_EQ(other->ReadInbox(10)->size(), 2u);
  Job job = other->Get(*id)->value();
  job.state = JobState::kCancelled;
  auto inserted = follower->Insert(QueuedJob("carol"));
  for (const Status& s :
       {inserted ? Status() : Status(inserted.error()), follower->Update(job),
        follower->UpdateAll({job}),
        follower->AddEvent({*id, 1, "a", "", "noted", ""}),
        follower->PutRecord("learned", "x"), follower->ClearInbox(1000)}) {
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error().code, ErrorCode::kUnavailable);
    EXPECT_THAT(s.error().message, HasSubstr("follows"));
  }
  EXPECT_EQ(other->LoadAll()->size(), 2u);
  EXPECT_EQ(other->Get(*id)->value().state, JobState::kQueued);
  EXPECT_EQ(other->ReadInbox(10)->size(), 2u);
}

TEST_F(ReplicaStoreTest, TheInboxKeepsItsOrderAndIsClearedUpToASeq) {
  auto follower = Open();
  auto leader = Open();
  ASSERT_TRUE(follower && leader);
  const JobEvent submitted = SubmittedEvent("alice");
  auto first = follower->InsertJob(QueuedJob("alice"), &submitted,
                                   InsertOptions{"", /*tell_leader=*/true});
  ASSERT_TRUE(first) << first.error().message;
  const JobEvent asked{first->id, 1001, "bob", "ci", "cancel asked", "x"};
  ASSERT_TRUE(follower->Tell(
      {0, InboxItem::Kind::kCancel, first->id, "bob", "ci", "not needed"},
      &asked));
  auto second = follower->InsertJob(QueuedJob("carol"), nullptr,
                                    InsertOptions{"k", /*tell_leader=*/true});
  ASSERT_TRUE(second);
  ASSERT_TRUE(follower->Tell(
      {0, InboxItem::Kind::kSubmitted, second->id, "carol", "", ""}, nullptr));
  // Without tell_leader, nothing for the leader.
  ASSERT_TRUE(follower->Insert(QueuedJob("dave")));

  auto inbox = leader->ReadInbox(100);
  ASSERT_TRUE(inbox) << inbox.error().message;
  ASSERT_EQ(inbox->size(), 4u);
  const auto& items = *inbox;
  for (size_t i = 1; i < items.size(); ++i) {
    EXPECT_GT(items[i].seq, items[i - 1].seq);
  }
  EXPECT_EQ(items[0].kind, InboxItem::Kind::kSubmitted);
  EXPECT_EQ(items[0].job, first->id);
  EXPECT_EQ(items[1].kind, InboxItem::Kind::kCancel);
  EXPECT_EQ(items[1].job, first->id);
  EXPECT_EQ(items[1].actor, "bob");
  EXPECT_EQ(items[1].token, "ci");
  EXPECT_EQ(items[1].detail, "not needed");
  EXPECT_EQ(items[2].kind, InboxItem::Kind::kSubmitted);
  EXPECT_EQ(items[2].job, second->id);
  EXPECT_EQ(items[3].kind, InboxItem::Kind::kSubmitted);
  EXPECT_EQ(items[3].actor, "carol");
  // Tell's event is in the same transaction: it is there.
  auto events = leader->Events(first->id);
  ASSERT_TRUE(events);
  ASSERT_EQ(events->size(), 2u);
  EXPECT_EQ((*events)[1].action, "cancel asked");

  // A limit takes the oldest.
  auto two = leader->ReadInbox(2);
  ASSERT_TRUE(two && two->size() == 2u);
  EXPECT_EQ((*two)[1].seq, items[1].seq);
  // Cleared up to the second: the third and fourth stay.
  ASSERT_TRUE(leader->ClearInbox(items[1].seq));
  auto rest = follower->ReadInbox(100);
  ASSERT_TRUE(rest && rest->size() == 2u);
  EXPECT_EQ((*rest)[0].seq, items[2].seq);
  EXPECT_EQ((*rest)[1].seq, items[3].seq);
  // Clearing an earlier seq again changes nothing.
  ASSERT_TRUE(leader->ClearInbox(items[0].seq));
  EXPECT_EQ(leader->ReadInbox(100)->size(), 2u);
  ASSERT_TRUE(leader->ClearInbox(items[3].seq));
  EXPECT_TRUE(leader->ReadInbox(100)->empty());
  // The next item after a clear still comes after the cleared ones.
  ASSERT_TRUE(follower->Tell(
      {0, InboxItem::Kind::kCancel, second->id, "carol", "", ""}, nullptr));
  auto next = leader->ReadInbox(100);
  ASSERT_TRUE(next && next->size() == 1u);
  EXPECT_GT(next->front().seq, items[3].seq);
}

// The job, its key, its event and its inbox row are written together or
// not at all: a failure of the inbox row or of the event leaves nothing.
TEST_F(ReplicaStoreTest, AToldInsertIsOneTransaction) {
  auto follower = Open();
  ASSERT_TRUE(follower);
  const JobEvent submitted = SubmittedEvent("alice");
  const InsertOptions told{"retry-me", /*tell_leader=*/true};
  for (const auto& [table, check] :
       {std::pair{"inbox", "job < 0"},
        std::pair{"events", "action <> 'submitted'"}}) {
    SCOPED_TRACE(table);
    ASSERT_TRUE(pg_.Psql(std::string("ALTER TABLE ") + table +
                             " ADD CONSTRAINT refuse CHECK (" + check + ")",
                         "jobs"))
        << pg_.error();
    auto refused = follower->InsertJob(QueuedJob("alice"), &submitted, told);
    ASSERT_FALSE(refused);
    EXPECT_THAT(refused.error().message, HasSubstr("refuse"));
    EXPECT_TRUE(follower->LoadAll()->empty());
    EXPECT_TRUE(follower->ReadInbox(10)->empty());
    ASSERT_TRUE(pg_.Psql(
        std::string("ALTER TABLE ") + table + " DROP CONSTRAINT refuse",
        "jobs"))
        << pg_.error();
  }
  // The key was not kept either: the retry is a new job, told once.
  auto stored = follower->InsertJob(QueuedJob("alice"), &submitted, told);
  ASSERT_TRUE(stored) << stored.error().message;
  EXPECT_FALSE(stored->existed);
  auto inbox = follower->ReadInbox(10);
  ASSERT_TRUE(inbox && inbox->size() == 1u);
  EXPECT_EQ(inbox->front().job, stored->id);
  EXPECT_EQ(follower->Events(stored->id)->size(), 1u);
  // A retry of a stored one tells the leader nothing more.
  auto retried = follower->InsertJob(QueuedJob("alice"), &submitted, told);
  ASSERT_TRUE(retried);
  EXPECT_TRUE(retried->existed);
  EXPECT_EQ(retried->id, stored->id);
  EXPECT_EQ(follower->ReadInbox(10)->size(), 1u);
  EXPECT_EQ(follower->Events(stored->id)->size(), 1u);
}

}  // namespace
}  // namespace tessera::scheduler
