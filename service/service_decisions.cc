// The split-or-wait decision for model jobs (docs/scheduler.md, "Split or
// wait"): its inputs taken under the lock, the decision on the round
// thread, the jobs' progress reports and the interference factor fitted
// from them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "service/service_internal.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::AdmissionOptions;
using scheduler::BuildStartRequest;
using scheduler::DecideStart;
using scheduler::DecisionJson;
using scheduler::DescribeDecision;
using scheduler::FindAllocation;
using scheduler::FractionSpeed;
using scheduler::GpuInfo;
using scheduler::GpuShare;
using scheduler::InterferenceName;
using scheduler::kFullGpuMilli;
using scheduler::kMinSliverMilli;
using scheduler::OptionForecast;
using scheduler::PlacementRequest;
using scheduler::SplitAcrossSlivers;
using scheduler::SplitSpeed;
using scheduler::SquaredCv;
using scheduler::StartCandidate;
using scheduler::StartInputs;
using scheduler::StartOption;
using scheduler::StartRequest;

using service_internal::DecisionRecord;
using service_internal::InterferenceFit;
using service_internal::JobProgress;
using service_internal::kMinCalibrationSamples;
using service_internal::PlannedSplit;
using service_internal::PoolKind;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The most jobs on any GPU of `a` in `state`.
int MostSharing(const ClusterState& state, const Allocation& a) {
  int k = 0;
  for (const GpuShare& s : a.gpus) k = std::max(k, state.holders_on(s.gpu));
  return k;
}

}  // namespace

namespace service_internal {

nlohmann::json DecisionRecordJson(const DecisionRecord& r, const Topology& t) {
  nlohmann::json j = DecisionJson(r.decision, t);
  j["decided_at"] = r.decided_at;
  j["work_from"] = r.work_from;
  j["interference"] = InterferenceName(r.law);
  j["summary"] = r.summary;
  return j;
}

}  // namespace service_internal

std::pair<double, std::string> Service::Impl::WorkOf(
    const Job& job, const SizedModel* sized) const {
  if (job.request.work_steps > 0 && sized && sized->step_s > 0) {
    return {static_cast<double>(job.request.work_steps) * sized->step_s,
            "work.steps"};
  }
  if (job.request.time_limit_s > 0) {
    return {job.request.time_limit_s, "time_limit_s"};
  }
  return {options.model_default_work_s, "model_default_work_s"};
}

InterferenceLaw Service::Impl::LawOf(const std::string& kind) const {
  if (options.calibrate_interference) {
    auto fit = learned.fits().find(kind);
    if (fit != learned.fits().end() &&
        fit->second.samples >= kMinCalibrationSamples) {
      return InterferenceLaw::Linear(fit->second.alpha());
    }
  }
  auto it = options.interference.find(kind);
  return it != options.interference.end() ? it->second : InterferenceLaw{};
}

void Service::Impl::FillDecisionInputs(RoundSnapshot& snap, double now) const {
  snap.now = now;
  for (const GpuInfo& g : options.topology.gpus) {
    if (!snap.laws.count(g.kind)) snap.laws[g.kind] = LawOf(g.kind);
  }
  auto add = [&](const Job& j) TESSERA_REQUIRES(mu) {
    double end = j.request.time_limit_s > 0
                     ? std::max(now, j.started_at) + j.request.time_limit_s
                     : kInf;
    if (j.state == JobState::kStarting && j.request.time_limit_s > 0) {
      end = now + j.request.time_limit_s;
    }
    const auto model = models.find(j.id);
    const SizedModel* sized =
        model != models.end() ? model->second.get() : nullptr;
    // A job that reports progress ends when its steps are done at the
    // pace it keeps now.
    const auto p = progress.find(j.id);
    if (p != progress.end() && p->second.step_s > 0 &&
        j.request.work_steps > 0) {
      const int64_t left =
          std::max<int64_t>(0, j.request.work_steps - p->second.last_steps);
      end = std::max(now, p->second.last_at) +
            static_cast<double>(left) * p->second.step_s;
    }
    snap.ends[j.id] = end;
    snap.occupants[j.id] = {
        sized ? sized->busy_fraction : estimator::kTrainingBusyFraction,
        end - now};
  };
  for (const auto& [id, j] : jobs.running) add(j);
  for (const auto& [id, j] : jobs.starting) add(j);
  for (const auto& [id, j] : jobs.reserved) add(j);
}

std::optional<Allocation> Service::Impl::DecideModelStart(
    const RoundSnapshot& snap, const ClusterState& s, const Job& job,
    const SizedModel& sized) {
  const Topology& t = s.topology();
  const std::string& pool = job.request.pool;
  const std::string kind = PoolKind(t, pool);
  AdmissionOptions admission;
  admission.cache = &admission_cache;

  StartInputs in;
  in.now = snap.now;
  in.busy_fraction = sized.busy_fraction;
  if (auto law = snap.laws.find(kind); law != snap.laws.end()) {
    in.law = law->second;
  }
  const auto [work, work_from] = WorkOf(job, &sized);
  in.work_s = work;
  // Now: a whole GPU; else one GPU's free fraction (all the compute free
  // there), and the split over several GPUs' slivers.
  nlohmann::json split_plan;
  std::function<placer::PlanPictures()> split_pictures;
  if (auto a = FindAllocation(s, pool, PlacementRequest{job.demand, {}},
                              *scorer, admission)) {
    in.candidates.push_back({StartOption::kWhole, *a, 1.0});
  } else {
    Resources part = job.demand;
    part.gpu_milli = kMinSliverMilli;
    if (auto f = FindAllocation(s, pool, PlacementRequest{part, {}}, *scorer,
                                admission)) {
      for (GpuShare& share : f->gpus) share.milli = s.free_milli(share.gpu);
      in.candidates.push_back(
          {StartOption::kFraction, *f,
           FractionSpeed(sized, in.law, f->gpus.front().milli)});
    }
    if (job.request.splittable) {
      if (auto gang = SplitAcrossSlivers(s, pool, sized, options.model_headroom,
                                         launcher->multi_node())) {
        in.candidates.push_back(
            {StartOption::kSplit, gang->allocation, SplitSpeed(gang->plan)});
        split_plan = std::move(gang->plan);
        split_pictures = std::move(gang->pictures);
      }
    }
  }
  // Later: when the running jobs' predicted ends free a whole GPU (or,
  // with no single GPU now, one GPU's fraction). A job started earlier
  // this round ends after its time limit.
  const auto ends_at = [&](JobId id) {
    if (auto it = snap.ends.find(id); it != snap.ends.end()) return it->second;
    for (const Job& q : snap.queue) {
      if (q.id == id) {
        return q.request.time_limit_s > 0 ? snap.now + q.request.time_limit_s
                                          : kInf;
      }
    }
    return kInf;
  };
  in.pool = pool;
  in.whole_memory_mib = job.demand.gpu_memory_mib;
  in.fraction_milli = kMinSliverMilli;
  in.fraction_memory_mib = job.demand.gpu_memory_mib;
  in.ends_at = ends_at;
  // The queue behind it in its pool, and the spread of the pool's work.
  int pool_gpus = 0;
  for (const NodeInfo& n : t.nodes) {
    if (n.pool == pool) pool_gpus += static_cast<int>(n.gpus.size());
  }
  in.pool_gpus = pool_gpus;
  std::vector<double> works;
  const int64_t gpu_mib = service_internal::MaxGpuMemory(t, pool);
  for (const Job& q : snap.queue) {
    if (q.request.pool != pool) continue;
    if (q.id > job.id) ++in.held_back;
    in.gang_queued = in.gang_queued || q.demand.gpus > 1 ||
                     (q.request.model && q.demand.gpu_memory_mib > gpu_mib);
    const auto m = snap.models.find(q.id);
    works.push_back(
        WorkOf(q, m != snap.models.end() ? m->second.get() : nullptr).first);
  }
  for (const Job& q : snap.running) {
    if (q.request.pool == pool) works.push_back(WorkOf(q, nullptr).first);
  }
  in.work_cv2 = SquaredCv(works);
  const StartRequest r = BuildStartRequest(s, std::move(in));

  const StartDecision d = DecideStart(r, s, [&](JobId id) {
    if (auto it = snap.occupants.find(id); it != snap.occupants.end()) {
      return it->second;
    }
    return Occupant{estimator::kTrainingBusyFraction, ends_at(id) - snap.now};
  });
  // The first decision of the round is the one on the cluster as it is:
  // policies call the allocator again on imagined states (backfill's
  // reservation with running jobs gone, preemption trials).
  pending_decisions.try_emplace(
      job.id, DecisionRecord{d, snap.now, work_from, r.law,
                             DescribeDecision(d, t, snap.now)});
  const OptionForecast* chosen = d.Chosen();
  if (!chosen || d.waits()) return std::nullopt;
  if (chosen->option == StartOption::kSplit) {
    std::vector<PlannedSplit>& splits = pending_splits[job.id];
    std::erase_if(splits, [&](const PlannedSplit& p) {
      return p.allocation == *chosen->allocation;
    });
    PlannedSplit planned;
    planned.allocation = *chosen->allocation;
    planned.plan = std::move(split_plan);
    planned.pictures = std::move(split_pictures);
    splits.push_back(std::move(planned));
  }
  return chosen->allocation;
}

nlohmann::json Service::Impl::InterferenceJson() const {
  nlohmann::json out = nlohmann::json::array();
  std::set<std::string> kinds;
  for (const GpuInfo& g : options.topology.gpus) kinds.insert(g.kind);
  for (const std::string& kind : kinds) {
    const auto configured = options.interference.find(kind);
    const auto fit = learned.fits().find(kind);
    nlohmann::json j = {
        {"kind", kind},
        {"law", InterferenceName(LawOf(kind))},
        {"configured", InterferenceName(configured != options.interference.end()
                                            ? configured->second
                                            : InterferenceLaw{})},
        {"samples", fit != learned.fits().end() ? fit->second.samples : 0}};
    j["calibrated_alpha"] =
        fit != learned.fits().end() && fit->second.samples > 0
            ? nlohmann::json(fit->second.alpha())
            : nlohmann::json(nullptr);
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json Service::DecisionOf(JobId id) {
  const std::shared_ptr<Impl> impl = Current();
  MutexLock lock(impl->mu);
  auto it = impl->start_decisions.find(id);
  return it == impl->start_decisions.end()
             ? nlohmann::json(nullptr)
             : service_internal::DecisionRecordJson(it->second,
                                                    impl->state.topology());
}

Result<ProgressReport> Service::ReportProgress(JobId id, int64_t steps) {
  const std::shared_ptr<Impl> impl = Current();
  TESSERA_RETURN_IF_ERROR(impl->LeaderOnly());
  Impl& m = *impl;
  MutexLock lock(m.mu);
  auto it = m.jobs.running.find(id);
  if (it == m.jobs.running.end()) {
    return Infeasible("job " + std::to_string(id) +
                      " is not running: only a running job reports progress");
  }
  const Job& job = it->second;
  if (steps < 0) return BadInput("steps: must not be negative");
  JobProgress& p = m.progress[id];
  if (steps < p.last_steps) {
    return BadInput("steps: went back from " + std::to_string(p.last_steps) +
                    " to " + std::to_string(steps) +
                    " (report the steps done in all)");
  }
  const double now = m.Now();
  const int sharing = MostSharing(m.state, job.allocation) - 1;
  ProgressReport out;
  out.job = id;
  out.steps = steps;
  if (p.last_steps >= 0 && steps > p.last_steps && now > p.last_at) {
    const double step =
        (now - p.last_at) / static_cast<double>(steps - p.last_steps);
    p.step_s = step;
    out.step_s = step;
    // An interval with the same jobs beside it at both ends: alone, it
    // measures the job's own step; shared, a sample of the slowdown.
    if (sharing == p.last_sharing) {
      if (sharing == 0) {
        p.alone_step_s = step;
      } else if (!job.plan.is_object()) {  // a split's step is its plan's
        const auto model = m.models.find(id);
        const double alone =
            p.alone_step_s > 0 ? p.alone_step_s
            : model != m.models.end() && model->second->step_s > 0
                ? model->second->step_s
                : 0;
        if (alone > 0) {
          const std::string kind =
              m.options.topology.gpus[job.allocation.gpus.front().gpu].kind;
          InterferenceFit& fit = m.learned.mutable_fits()[kind];
          const double x = sharing;
          const double y = step / alone - 1;
          fit.xy += x * y;
          fit.xx += x * x;
          ++fit.samples;
          out.slowdown = step / alone;
        }
      }
    }
  }
  p.last_at = now;
  p.last_steps = steps;
  p.last_sharing = sharing;
  out.sharing_with = sharing;
  if (job.request.work_steps > 0 && p.step_s > 0) {
    out.predicted_end_s = now + static_cast<double>(std::max<int64_t>(
                                    0, job.request.work_steps - steps)) *
                                    p.step_s;
  }
  m.dirty = true;  // waiting jobs' decisions see the new end
  m.wake.notify_all();
  return out;
}

}  // namespace tessera::service
