// RunSnapshot: the arrival sequence, one seed's replay, and the seeds in
// parallel.
#include "sim/replay.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>

#include "scheduler/admission.h"
#include "scheduler/parallel.h"
#include "sim/replay_bound_internal.h"
#include "sim/replay_reserve_internal.h"

namespace tessera::sim {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::AdmissionCache;
using scheduler::AdmissionOptions;
using scheduler::Allocation;
using scheduler::ClusterState;
using scheduler::FindAllocation;
using scheduler::JobId;
using scheduler::kFullGpuMilli;
using scheduler::MakeScorer;
using scheduler::MeasureFragmentation;
using scheduler::ParallelFor;
using scheduler::ScorerOptions;

namespace {

// A pod's GPU request in milli (whole GPUs count 1000 each).
int64_t PodMilli(const TracePod& p) {
  return static_cast<int64_t>(p.num_gpu) * p.gpu_milli;
}

// The arrival order of one seed: the pod list shuffled, then draws with
// replacement until the requests reach `limit` milli (the list alone may
// already pass it; arrivals stop there).
std::vector<int> Arrivals(const std::vector<TracePod>& pods, int64_t limit,
                          std::mt19937_64& rng) {
  std::vector<int> order(pods.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng);
  int64_t requested = 0;
  size_t keep = 0;
  while (keep < order.size() && requested < limit) {
    requested += PodMilli(pods[order[keep++]]);
  }
  order.resize(keep);
  std::uniform_int_distribution<size_t> draw(0, pods.size() - 1);
  // A list whose pods ask no GPU never reaches the limit: stop at 10x.
  while (requested < limit && order.size() < 10 * pods.size()) {
    const auto p = static_cast<int>(draw(rng));
    order.push_back(p);
    requested += PodMilli(pods[p]);
  }
  return order;
}

// The GPU milli a seed's arrivals stop at (options.inflation_pct of the
// cluster's capacity).
int64_t ArrivalLimit(const SnapshotOptions& options, double capacity) {
  return static_cast<int64_t>(options.inflation_pct / 100.0 * capacity);
}

// The physical limit at each level `run` reached, from its seed's
// arrivals. Each bound is solved in a forked child (replay_bound.cc); a
// fork is safe only where no other thread of the process can hold a lock
// the child needs (AddressSanitizer's allocator takes one in every
// malloc), so RunSnapshot calls this after its worker threads have
// joined. A bound whose child failed becomes the GPUs' capacity (a
// valid, loose limit) with a note in run.notes.
void FillLimits(const Topology& topology, const std::vector<TracePod>& pods,
                const SnapshotOptions& options, SnapshotRun& run) {
  const double capacity = static_cast<double>(GpuCapacityMilli(topology));
  std::mt19937_64 rng(run.seed);  // as RunSnapshotSeed draws them
  const std::vector<int> arrivals =
      Arrivals(pods, ArrivalLimit(options, capacity), rng);
  std::vector<const TracePod*> arrived;
  for (LevelPoint& l : run.levels) {
    if (!l.reached) continue;
    arrived.clear();
    for (int64_t k = 0; k < l.arrived_pods; ++k) {
      arrived.push_back(&pods[arrivals[static_cast<size_t>(k)]]);
    }
    Result<double> milli =
        GpuPackingBoundMilli(arrived, int64_t(topology.gpus.size()));
    if (!milli) {
      run.notes.push_back("the physical limit at " +
                          std::to_string(l.level_pct) +
                          "%: " + milli.error().message +
                          "; the GPUs' capacity stands in for it");
      milli = capacity;
    }
    l.bound_pct = 100.0 * *milli / capacity;
  }
}

// One round: its pods in decreasing order of the GPU milli they ask
// (whole GPUs count 1000 each; ties in arrival order), each placed where
// the policy scores best on the cluster as the earlier ones left it, or
// failed where it fits nowhere. First-fit decreasing with the policy's
// choice of node: a large pod takes its room before small ones split it.
// With `repack`, a second pass in the opposite order (smallest first)
// takes each placed fraction back and places it again on the cluster the
// whole round left, and tries each failed pod again: a large fraction
// placed first did not see the small ones after it, and now may join the
// GPU one of them took (an 810-milli pod beside a 160) instead of holding
// an idle GPU alone. A pod may always go back where it was (the reserve
// does not refuse that), so the pass never fails a placed pod. Whole-GPU
// pods keep their place (re-placing them gained nothing measurable). A
// round of one pod is the paper's one-at-a-time replay. `reserve` (may be
// null) keeps fractions off the idle GPUs it holds back. Returns whether each
// pod (in `round`'s order) was placed.
std::vector<bool> DecideRound(ClusterState& state, const std::string& pool,
                              const std::vector<PlacementRequest>& requests,
                              const std::vector<TracePod>& pods,
                              const std::vector<int>& round, bool repack,
                              const scheduler::GpuScorer& scorer,
                              const AdmissionOptions& admission,
                              IdleReserve* reserve, JobId& id) {
  std::vector<size_t> order(round.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return PodMilli(pods[round[a]]) > PodMilli(pods[round[b]]);
  });
  std::vector<JobId> job(round.size(), 0);  // 0: failed
  // `was`: where the pod was before the second pass took it back.
  const auto place = [&](size_t k, const Allocation* was) {
    auto a = FindAllocation(state, pool, requests[round[k]], scorer, admission);
    if (a && reserve != nullptr &&
        reserve->Refuses(state, pods[round[k]], *a) &&
        !(was != nullptr && a->gpus == was->gpus)) {
      if (was == nullptr) return;
      a = *was;
    }
    if (a && state.Reserve(++id, *a).ok()) {
      job[k] = id;
      if (reserve != nullptr) reserve->Update(state, *a);
    }
  };
  for (const size_t k : order) place(k, nullptr);
  if (repack && round.size() > 1) {
    for (auto k = order.rbegin(); k != order.rend(); ++k) {
      if (job[*k] == 0) {
        place(*k, nullptr);
        continue;
      }
      if (pods[round[*k]].gpu_milli >= kFullGpuMilli) continue;
      const Allocation was = *state.AllocationOf(job[*k]);
      state.Release(job[*k]);
      job[*k] = 0;
      if (reserve != nullptr) reserve->Update(state, was);
      place(*k, &was);
    }
  }
  std::vector<bool> placed(round.size());
  for (size_t k = 0; k < round.size(); ++k) placed[k] = job[k] != 0;
  return placed;
}

}  // namespace

int64_t GpuCapacityMilli(const Topology& topology) {
  return static_cast<int64_t>(topology.gpus.size()) * kFullGpuMilli;
}

SnapshotRun RunSnapshotSeed(const Topology& topology,
                            const std::vector<TracePod>& pods,
                            const Workload& workload,
                            const SnapshotOptions& options, uint64_t seed) {
  const auto start = std::chrono::steady_clock::now();
  SnapshotRun run;
  run.seed = seed;
  ScorerOptions scorer_options;
  scorer_options.workload = &workload;
  scorer_options.seed = seed;
  auto scorer = std::move(MakeScorer(options.scorer, scorer_options).value());
  std::mt19937_64 rng(seed);
  const double capacity = static_cast<double>(GpuCapacityMilli(topology));
  const std::vector<int> arrivals =
      Arrivals(pods, ArrivalLimit(options, capacity), rng);
  // Ties go by one fixed random order of the nodes per seed.
  std::vector<int> node_order(topology.nodes.size());
  std::iota(node_order.begin(), node_order.end(), 0);
  std::shuffle(node_order.begin(), node_order.end(), rng);

  // The requests of the pod list, made once.
  std::vector<PlacementRequest> requests;
  requests.reserve(pods.size());
  for (const TracePod& p : pods) requests.push_back(PodRequest(p));

  ClusterState state(topology);
  std::optional<IdleReserve> reserve;
  if (options.reserve_share > 0) {
    reserve.emplace(
        state,
        IdleReserve::Need{workload.cpu_per_milli * kFullGpuMilli,
                          workload.memory_mib_per_milli * kFullGpuMilli},
        ReserveGpus(pods, options.reserve_share, topology.gpus.size()));
  }
  AdmissionCache cache;
  AdmissionOptions admission;
  admission.node_order = node_order;
  admission.cache = &cache;
  const std::string pool = topology.pools.empty() ? "" : topology.pools[0];
  for (const int level : options.levels_pct) {
    run.levels.push_back(LevelPoint{level});
  }
  int64_t arrived = 0, allocated = 0;
  double failed_milli = 0;
  int next_percent = 1;
  JobId id = 0;
  const int round_pods = std::max(1, options.round_pods);
  std::vector<int> round;
  for (size_t i = 0; i < arrivals.size(); ++i) {
    const int p = arrivals[i];
    round.push_back(p);
    const int64_t milli = PodMilli(pods[p]);
    arrived += milli;
    const double arrived_pct = 100.0 * static_cast<double>(arrived) / capacity;
    // A round ends at its size, at the last arrival, and where arrival
    // reaches a level, so that each level is read with every pod decided.
    const bool at_level = std::any_of(
        run.levels.begin(), run.levels.end(), [&](const LevelPoint& l) {
          return !l.reached && arrived_pct >= l.level_pct;
        });
    if (static_cast<int>(round.size()) < round_pods && !at_level &&
        i + 1 < arrivals.size())
      continue;
    // Decide the round.
    const std::vector<bool> placed =
        DecideRound(state, pool, requests, pods, round, options.repack_rounds,
                    *scorer, admission, reserve ? &*reserve : nullptr, id);
    for (size_t r = 0; r < round.size(); ++r) {
      const int64_t m = PodMilli(pods[round[r]]);
      if (placed[r]) {
        allocated += m;
      } else {
        ++run.failed_pods;
        failed_milli += static_cast<double>(m);
      }
      ++run.pods;
    }
    round.clear();
    const double alloc_pct = 100.0 * static_cast<double>(allocated) / capacity;
    while (arrived_pct >= next_percent) {
      run.curve.emplace_back(arrived_pct, alloc_pct);
      ++next_percent;
    }
    for (LevelPoint& l : run.levels) {
      if (l.reached || arrived_pct < l.level_pct) continue;
      l.reached = true;
      l.arrived_pct = arrived_pct;
      l.alloc_pct = alloc_pct;
      l.frag_pct = MeasureFragmentation(state, workload).ratio_pct();
      l.failed_pods = run.failed_pods;
      l.failed_gpus = failed_milli / kFullGpuMilli;
      l.arrived_pods = static_cast<int64_t>(i + 1);
    }
  }
  if (options.bound) FillLimits(topology, pods, options, run);
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  return run;
}

Result<std::vector<SnapshotRun>> RunSnapshot(
    const Topology& topology, const std::vector<TracePod>& pods,
    const SnapshotOptions& options,
    const std::function<void(int done)>& progress) {
  if (auto scorer = MakeScorer(options.scorer); !scorer) {
    return scorer.error();
  }
  if (pods.empty()) return BadInput("the pod list has no pods");
  if (topology.gpus.empty()) return BadInput("the cluster has no GPUs");
  if (options.seeds < 1) return BadInput("seeds: must be at least 1");
  if (!(options.reserve_share >= 0 && options.reserve_share <= 1)) {
    return BadInput("reserve_share: must be a share of the GPUs in [0, 1]");
  }
  const Workload own =
      options.workload != nullptr ? Workload{} : PodWorkload(pods);
  const Workload& workload =
      options.workload != nullptr ? *options.workload : own;
  std::vector<SnapshotRun> runs(options.seeds);
  std::mutex progress_mu;
  int done = 0;
  SnapshotOptions unbounded = options;  // the limits come after the threads
  unbounded.bound = false;
  ParallelFor(options.seeds, options.threads, [&](int s) {
    runs[s] = RunSnapshotSeed(topology, pods, workload, unbounded,
                              options.first_seed + s);
    std::lock_guard lock(progress_mu);
    ++done;
    if (progress) progress(done);
  });
  if (options.bound) {
    for (SnapshotRun& run : runs) FillLimits(topology, pods, options, run);
  }
  return runs;
}

double PhysicalLimitAt(const std::vector<SnapshotRun>& runs, size_t l) {
  return OverSeeds(runs,
                   [l](const SnapshotRun& r) { return r.levels[l].bound_pct; })
      .mean;
}

}  // namespace tessera::sim
