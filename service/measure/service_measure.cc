// What the service measures of its jobs: GPU use (one reading per interval
// during the rounds, kept with each running job: usage_part_internal.h)
// and what sizing learns from it (learned_part_internal.h).

#include <map>
#include <string>

#include "service/service_internal.h"

namespace tessera::service {

std::optional<service_internal::UsageSample> Service::Impl::SampleUsage(
    double now) {
  if (!usage.measuring()) return std::nullopt;
  std::map<JobId, int64_t> leaders;
  {
    MutexLock lock(mu);
    for (const auto& [id, job] : jobs.running) {
      // Jobs on other machines' GPUs: the probe does not see them.
      if (usage.Measures(job.allocation, state.topology())) {
        leaders[id] = job.pid;
      }
    }
  }
  return usage.Read(now, leaders);
}

void Service::Impl::ApplyUsage(const service_internal::UsageSample& sample) {
  for (const JobId id : usage.Apply(sample, jobs.running)) {
    // A failed write is no loss: the next sample, or the job's end,
    // writes the record again.
    if (Persist(jobs.running.at(id)).ok()) usage.Stored(id, sample.at);
  }
}

void Service::Impl::LearnFrom(const Job& job, const Allocation& held,
                              bool out_of_memory) {
  if (!job.request.model || held.gpus.size() != 1) return;
  const bool ended_well = job.state == JobState::kSucceeded;
  if (!ended_well && !out_of_memory) return;  // a failure measures nothing
  scheduler::SizingSample s;
  s.at = Now();
  const int64_t cap = held.gpus[0].memory_mib;
  if (job.usage.readings > 0) s.peak_mib = job.usage.peak_mib;
  if (out_of_memory) {  // what it reached is a lower bound
    s.hit_cap = true;
    s.peak_mib = std::max(s.peak_mib, cap);
  }
  const auto p = progress.find(job.id);
  if (p != progress.end() && p->second.alone_step_s > 0 &&
      (held.exclusive || held.gpus[0].milli >= scheduler::kFullGpuMilli)) {
    s.step_s = p->second.alone_step_s;
    s.gpu_kind = state.topology().gpus[held.gpus[0].gpu].kind;
  }
  if (s.peak_mib <= 0 && !s.step_s) return;
  learned.AddSample(service_internal::FingerprintOf(*job.request.model), s);
}

void Service::Impl::StoreLearned(double now) {
  if (!learned.Due(now)) return;
  if (store->PutRecord("learned", learned.Json()).ok()) {
    learned.Stored(now);
  } else {
    metrics.store_errors++;  // kept in memory; tried again next round
  }
}

Status Service::Impl::LoadLearned() {
  auto record = store->GetRecord("learned");
  if (!record) return record.error();
  if (!*record) return {};
  if (Status s = learned.Load(**record); !s.ok()) {
    // The service's own record, damaged: it starts without what it had
    // learned, and says so in the audit trail.
    const JobEvent e =
        Event(0, nullptr, "learned record dropped",
              "the stored sizing and interference record is "
              "unreadable (" +
                  s.error().message + "); starting from the estimates");
    (void)store->AddEvent(e);
  }
  return {};
}

}  // namespace tessera::service
