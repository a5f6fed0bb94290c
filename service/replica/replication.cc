// Replicas of the service sharing a PostgreSQL store (docs/operations.md,
// "High availability"). One holds the store's lease and leads: it runs the
// rounds and talks to the launcher, and every write it makes carries the
// lease's epoch (the store refuses it once another replica took the lease).
// The others follow: they mirror the store's active jobs every tick, answer
// reads from that view, and hand submissions and cancels to the leader
// through the store's inbox.
//
// A role change swaps the Service's Impl: taking over builds a leader's
// Impl, whose start is exactly a restart's recovery (adopt, reconcile the
// `starting` jobs, never start one again); stepping down stops the
// leader's rounds and builds a follower's. Jobs keep running throughout.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <thread>

#include "service/service_internal.h"

namespace tessera::service {

using scheduler::IsTerminal;

namespace {

using SteadyClock = std::chrono::steady_clock;

// The inbox requests a leader's round takes at most.
inline constexpr int64_t kInboxBatch = 1000;

void Log(const std::string& line) {
  std::fprintf(stderr, "tessera serve: %s\n", line.c_str());
}

// The lease's holder without its process suffix (Replication::id).
std::string NameOf(const std::string& holder) {
  const size_t hash = holder.rfind('#');
  return hash == std::string::npos ? holder : holder.substr(0, hash);
}

std::string RandomSuffix() {
  std::random_device device;
  char hex[16];
  std::snprintf(hex, sizeof hex, "%08x", device());
  return hex;
}

}  // namespace

Status Service::Impl::Mirror() {
  auto stored = store->LoadAll(/*active_only=*/true);
  if (!stored) return stored.error();
  service_internal::JobTable table;
  ClusterState view(options.topology);
  for (Job& job : *stored) {
    if (job.state == JobState::kQueued || job.state == JobState::kPreempted) {
      table.queue.push_back(std::move(job));
      continue;
    }
    // What holds GPUs, as the leader stored it (a reservation that no
    // longer fits the view is shown without its GPUs rather than dropped).
    (void)view.Reserve(job.id, job.allocation);
    const JobId id = job.id;
    if (job.state == JobState::kStarting) {
      table.starting.emplace(id, std::move(job));
    } else if (!job.origin.empty()) {
      table.reserved.emplace(id, std::move(job));
    } else {
      table.running.emplace(id, std::move(job));
    }
  }
  jobs = std::move(table);
  state = std::move(view);
  TESSERA_RETURN_IF_ERROR(LoadDrains());
  mirrored_at = Now();
  return {};
}

void Service::Impl::ApplyInbox() {
  auto items = store->ReadInbox(kInboxBatch);
  if (!items || items->empty()) return;
  // Submissions a follower stored: the jobs themselves, read without mu.
  std::vector<JobId> unknown;
  {
    MutexLock lock(mu);
    for (const InboxItem& item : *items) {
      if (item.kind == InboxItem::Kind::kSubmitted &&
          jobs.Find(item.job) == nullptr) {
        unknown.push_back(item.job);
      }
    }
  }
  std::vector<Job> loaded;
  for (const JobId id : unknown) {
    auto job = store->Get(id);
    if (!job) return;  // the store failed: all of it again next round
    if (*job && (*job)->state == JobState::kQueued) {
      loaded.push_back(std::move(**job));
    }
  }
  {
    MutexLock lock(mu);
    for (Job& job : loaded) {
      if (jobs.Find(job.id) != nullptr) continue;
      Requeue(std::move(job));
      metrics.submitted++;
      dirty = true;
    }
    for (const InboxItem& item : *items) {
      if (item.kind != InboxItem::Kind::kCancel) continue;
      User by;
      by.name = item.actor;
      by.token_name = item.token;
      // A cancel the store did not take is asked again next round (the
      // inbox keeps it); a job that ended meanwhile is left as it is.
      if (auto r = Cancel(item.job, item.detail, &by);
          !r && r.error().code == ErrorCode::kUnavailable) {
        return;
      }
    }
  }
  (void)store->ClearInbox(items->back().seq);
}

Status Service::Impl::LeaderOnly() const {
  if (leading) return {};
  return Unavailable(
      "this replica follows: only the leading replica does this (GET "
      "/v1/cluster names it)");
}

Result<Job> Service::Impl::AskCancel(JobId id, const std::string& reason,
                                     const User* by) {
  auto stored = store->Get(id);
  if (!stored) {
    return Unavailable("the job store failed: " + stored.error().message);
  }
  if (!*stored) return BadInput("job " + std::to_string(id) + ": no such job");
  Job job = **stored;
  if (IsTerminal(job.state)) return job;
  InboxItem item;
  item.kind = InboxItem::Kind::kCancel;
  item.job = id;
  item.actor = by ? by->name : "scheduler";
  item.token = by ? by->token_name : "";
  item.detail = reason;
  if (Status s = store->Tell(item, nullptr); !s) {
    metrics.store_errors++;
    return Unavailable("the job store failed, the cancel was not taken: " +
                       s.error().message);
  }
  job.reason = reason;
  return job;
}

// The lease's thread: renews (or takes) the lease every lease_renew_s and
// swaps the Service's Impl when the role changes.
struct Service::Replication {
  Service* service = nullptr;
  ServiceOptions options;  // each Impl is made from these
  ReplicaOptions replica;
  // Whom the lease names: the replica's name and this process's random
  // suffix, so that two processes given one name by mistake never both
  // lead (NameOf shows the name).
  std::string id;
  std::shared_ptr<launch::Launcher> launcher;
  std::unique_ptr<Store> lease_store;  // its own connection

  std::mutex mu;
  std::condition_variable wake;
  bool stopping = false;  // guarded by mu
  std::thread thread;

  // The lease as last read (status_mu: Replica() reads it).
  mutable std::mutex status_mu;
  Lease last;
  // The epoch the leading Impl was made for; 0: none leads here (the
  // replication thread's alone).
  int64_t led_epoch = 0;
  // A leader may act until then (steady clock, nanoseconds): the renewal
  // it last got, from the moment it was asked, plus lease_s less a margin.
  std::atomic<int64_t> valid_until_ns{0};

  // Exits a stopped leader of this process had not stored, for the next
  // (the replication thread's alone).
  std::map<JobId, launch::Exited> exits;
  std::map<JobId, launch::OutOfMemory> ooms;
  void Carry(Impl& stopped) {
    MutexLock lock(stopped.mu);
    exits.insert(stopped.unrecorded_exits.begin(),
                 stopped.unrecorded_exits.end());
    ooms.insert(stopped.oom_exits.begin(), stopped.oom_exits.end());
  }

  // A leader that stepped down and is not yet replaced by a follower
  // (the store was unreachable then): it answers from what it held, and
  // nothing refreshes it. Only a leader's Impl has may_act.
  static bool Stale(const Impl& impl) {
    return !impl.leading && impl.may_act != nullptr;
  }

  bool MayAct() const {
    return SteadyClock::now().time_since_epoch().count() <
           valid_until_ns.load();
  }
  Impl::Leadership LeadershipFor(bool leading, int64_t epoch) {
    Impl::Leadership l;
    l.replicated = true;
    l.leading = leading;
    l.epoch = epoch;
    if (leading) {
      l.may_act = [this] { return MayAct(); };
      l.exits = exits;
      l.ooms = ooms;
    }
    return l;
  }
  // What a renewal that was asked at `asked` said.
  void Note(const Lease& lease, SteadyClock::time_point asked) {
    std::lock_guard lock(status_mu);
    last = lease;
    if (lease.holder != id) return;
    const double margin = std::min(1.0, replica.lease_s / 10);
    const auto until =
        asked + std::chrono::duration_cast<SteadyClock::duration>(
                    std::chrono::duration<double>(replica.lease_s - margin));
    valid_until_ns = until.time_since_epoch().count();
  }

  void TakeOver(int64_t epoch) {
    std::shared_ptr<Impl> current = service->Current();
    if (current->leading) {  // a leader of an older epoch: stop it first
      current->leading = false;
      current->StopThread();
      Carry(*current);
    }
    auto next = Impl::Create(options, launcher, LeadershipFor(true, epoch));
    if (!next) {
      Log("replica " + replica.name + " holds the lease but cannot lead: " +
          next.error().message + " (trying again)");
      led_epoch = 0;
      return;
    }
    service->Swap(*next);
    current->StopThread();  // the follower's mirror
    exits.clear();          // the new leader has them
    ooms.clear();
    led_epoch = epoch;
    Log("replica " + replica.name + " leads (lease epoch " +
        std::to_string(epoch) + ")");
  }

  void StepDown(const std::string& why) {
    std::shared_ptr<Impl> current = service->Current();
    if (current->leading) {
      current->leading = false;  // answers as a follower from now on
      current->StopThread();     // no more rounds
      Carry(*current);
      Log("replica " + replica.name + " steps down: " + why);
    }
    led_epoch = 0;
    auto next = Impl::Create(options, launcher, LeadershipFor(false, 0));
    if (!next) return;  // the store is unreachable: again next renewal
    service->Swap(*next);
    current->StopThread();
  }

  void Step() {
    const SteadyClock::time_point asked = SteadyClock::now();
    auto lease =
        lease_store->AcquireLease(id, replica.address, replica.lease_s);
    if (!lease) {
      // Cannot renew: a leader acts only while its lease surely holds.
      if (led_epoch != 0 && !MayAct()) {
        StepDown("cannot renew the lease: " + lease.error().message);
      }
      return;
    }
    Note(*lease, asked);
    if (lease->holder == id) {
      if (led_epoch != lease->epoch) TakeOver(lease->epoch);
      return;
    }
    if (led_epoch != 0) {
      StepDown("replica '" + NameOf(lease->holder) +
               "' holds the lease (epoch " + std::to_string(lease->epoch) +
               ")");
    } else if (Stale(*service->Current())) {
      StepDown("");  // again: the last time the store was unreachable
    }
  }

  void Loop() {
    const auto every = std::chrono::duration<double>(replica.lease_renew_s);
    while (true) {
      {
        std::unique_lock lock(mu);
        if (wake.wait_for(lock, every, [&] { return stopping; })) return;
      }
      Step();
    }
  }

  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    wake.notify_all();
    if (thread.joinable()) thread.join();
  }
};

Result<std::unique_ptr<Service>> Service::Replicated(
    ServiceOptions options, std::shared_ptr<launch::Launcher> launcher) {
  const ReplicaOptions& r = *options.replica;
  if (options.store.postgres_url.empty()) {
    return BadInput(
        "replicas need store: postgres (one SQLite file cannot "
        "be shared)");
  }
  if (r.name.empty()) return BadInput("replica: the name is empty");
  if (!(r.lease_renew_s > 0) || !(r.lease_s >= 2 * r.lease_renew_s)) {
    return BadInput(
        "ha: lease_s must be at least twice lease_renew_s, and "
        "lease_renew_s above 0");
  }
  auto rep = std::make_unique<Replication>();
  rep->options = options;
  rep->replica = r;
  rep->id = r.name + "#" + RandomSuffix();
  rep->launcher = launcher;
  auto lease_store = Store::OpenPostgres(options.store);
  if (!lease_store) return lease_store.error();
  rep->lease_store = std::move(lease_store).value();
  // The first renewal now: a lone replica leads from its start.
  const SteadyClock::time_point asked = SteadyClock::now();
  auto lease = rep->lease_store->AcquireLease(rep->id, r.address, r.lease_s);
  if (!lease) return lease.error();
  rep->Note(*lease, asked);
  const bool leads = lease->holder == rep->id;
  Topology topology = options.topology;
  auto impl =
      Impl::Create(options, launcher, rep->LeadershipFor(leads, lease->epoch));
  if (!impl) {
    if (leads) (void)rep->lease_store->ReleaseLease(rep->id);
    return impl.error();
  }
  if (leads) rep->led_epoch = lease->epoch;
  Log("replica " + r.name + (leads ? " leads" : " follows") + " (lease epoch " +
      std::to_string(lease->epoch) +
      (leads ? ")" : ", replica " + NameOf(lease->holder) + " leads)"));
  std::unique_ptr<Service> service(
      new Service(std::move(impl).value(), std::move(topology)));
  rep->service = service.get();
  Replication* raw = rep.get();
  service->replication_ = std::move(rep);
  raw->thread = std::thread([raw] { raw->Loop(); });
  return service;
}

// Here, where Replication is complete.
Service::Service(std::shared_ptr<Impl> impl, Topology topology)
    : topology_(std::move(topology)), current_(std::move(impl)) {}

Service::~Service() {
  StopReplication();  // no swap after this
  Current()->StopThread();
}

void Service::StopReplication() {
  if (!replication_) return;
  replication_->Stop();
  Current()->StopThread();
  // Followers need not wait for the lease to lapse.
  (void)replication_->lease_store->ReleaseLease(replication_->id);
}

nlohmann::json ReplicaStatusJson(const ReplicaStatus& s) {
  nlohmann::json j = {{"replicated", s.replicated},
                      {"role", s.leader ? "leader" : "follower"}};
  if (!s.replicated) return j;
  j["name"] = s.name;
  j["epoch"] = s.epoch;
  j["leader"] = nullptr;
  if (!s.leader_name.empty()) {
    j["leader"] = {{"name", s.leader_name},
                   {"address", s.leader_address},
                   {"since", s.leader_since}};
  }
  if (!s.leader) j["view_age_s"] = s.view_age_s;
  return j;
}

std::string ReplicaMetrics(const ReplicaStatus& s) {
  const std::string label = s.replicated ? "{replica=\"" + s.name + "\"}" : "";
  std::string out =
      "# HELP tessera_replica_leader 1 when this replica leads (always "
      "without replicas)\n# TYPE tessera_replica_leader gauge\n"
      "tessera_replica_leader" +
      label + (s.leader ? " 1\n" : " 0\n");
  if (!s.replicated) return out;
  out +=
      "# HELP tessera_replica_lease_epoch The leader lease's epoch as this "
      "replica last read it\n# TYPE tessera_replica_lease_epoch gauge\n"
      "tessera_replica_lease_epoch" +
      label + " " + std::to_string(s.epoch) + "\n";
  if (!s.leader) {
    char age[32];
    std::snprintf(age, sizeof age, "%.3f", s.view_age_s);
    out +=
        "# HELP tessera_replica_view_age_seconds How old a follower's view "
        "of the jobs is\n# TYPE tessera_replica_view_age_seconds gauge\n"
        "tessera_replica_view_age_seconds" +
        label + " " + age + "\n";
  }
  return out;
}

ReplicaStatus Service::Replica() const {
  ReplicaStatus st;
  const std::shared_ptr<Impl> current = Current();
  st.leader = current->leading;
  if (!replication_) return st;
  st.replicated = true;
  st.name = replication_->replica.name;
  {
    std::lock_guard lock(replication_->status_mu);
    const Lease& l = replication_->last;
    if (l.remaining_s > 0 || l.holder == replication_->id) {
      st.leader_name = NameOf(l.holder);
      st.leader_address = l.address;
      st.leader_since = l.since;
    }
    st.epoch = l.epoch;
  }
  if (!st.leader) {
    MutexLock lock(current->mu);
    st.view_age_s = std::max(0.0, current->Now() - current->mirrored_at);
  }
  return st;
}

}  // namespace tessera::service
