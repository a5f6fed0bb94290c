// The job table's lookups and invariants (job_table_internal.h).
#include <algorithm>
#include <set>

#include "service/job_table_internal.h"

namespace tessera::service::service_internal {
namespace {

std::string Name(JobState s) { return std::string(scheduler::JobStateName(s)); }

// One job's clause: "job 7 is running in the store, not in memory; ".
std::string About(JobId id, const std::string& what) {
  return "job " + std::to_string(id) + " " + what + "; ";
}

}  // namespace

const Job* JobTable::Find(JobId id) const {
  for (const std::map<JobId, Job>* place : {&running, &starting, &reserved}) {
    if (auto it = place->find(id); it != place->end()) return &it->second;
  }
  auto it = std::find_if(queue.begin(), queue.end(),
                         [id](const Job& j) { return j.id == id; });
  return it == queue.end() ? nullptr : &*it;
}

std::string JobTable::Check(const ClusterState& state,
                            const std::vector<Job>& stored) const {
  std::string broken = state.CheckInvariants();
  // Each job in one place, in the state that place means, and what holds
  // GPUs reserved in the cluster state.
  std::map<JobId, JobState> memory;
  const auto place = [&](const Job& j, JobState s, bool holds) {
    if (!memory.emplace(j.id, s).second) {
      broken += About(j.id, "is in two places of the job table");
    }
    if (holds && state.AllocationOf(j.id) == nullptr) {
      broken += About(j.id, "is " + Name(s) + " but holds nothing");
    }
  };
  for (const Job& j : queue) place(j, j.state, false);
  for (const auto& [id, j] : starting) place(j, JobState::kStarting, true);
  for (const auto& [id, j] : running) place(j, j.state, true);
  for (const auto& [id, j] : reserved) place(j, j.state, true);
  // The jobs in memory are the store's active jobs, in the same states.
  std::map<JobId, JobState> disk;
  for (const Job& j : stored) disk[j.id] = j.state;
  for (const auto& [id, s] : disk) {
    auto it = memory.find(id);
    if (it == memory.end()) {
      broken += About(id, "is " + Name(s) + " in the store, not in memory");
    } else if (it->second != s) {
      broken += About(id, "is " + Name(s) + " in the store, " +
                              Name(it->second) + " in memory");
    }
  }
  // An elastic job holds between min and max workers, one share each,
  // and the store holds what memory does.
  for (const auto& [id, j] : running) {
    if (!j.request.elastic) continue;
    const size_t n = j.allocation.gpus.size();
    if (j.elastic.workers.size() != n ||
        n < static_cast<size_t>(j.request.elastic->min) ||
        n > static_cast<size_t>(j.request.elastic->max)) {
      broken += "elastic job " + std::to_string(id) + " holds " +
                std::to_string(n) + " shares for " +
                std::to_string(j.elastic.workers.size()) + " workers; ";
    }
    for (const Job& d : stored) {
      if (d.id == id && (d.allocation.gpus != j.allocation.gpus ||
                         !(d.elastic == j.elastic))) {
        broken += "elastic job " + std::to_string(id) +
                  " differs between memory and the store; ";
      }
    }
  }
  for (const auto& [id, s] : memory) {
    if (!disk.count(id)) {
      broken += About(id, "is " + Name(s) + " in memory, not in the store");
    }
  }
  return broken;
}

}  // namespace tessera::service::service_internal
