#ifndef TESSERA_SERVICE_JOB_TABLE_INTERNAL_H_
#define TESSERA_SERVICE_JOB_TABLE_INTERNAL_H_

// The service's job table: every job it holds, by state. One part of
// Service::Impl (service_internal.h), which keeps it under its mutex; the
// rounds and the API move jobs between its four places through the
// transitions of service_transitions.cc.
//
// Invariants (Check): a job is in exactly one place; each job that holds
// GPUs (running, starting, reserved) has its allocation reserved in the
// cluster state; the store's active jobs are the table's, in the same
// states; an elastic job holds between min and max shares, one per
// worker, as the store does.

#include <map>
#include <string>
#include <vector>

#include "scheduler/job.h"
#include "scheduler/topology.h"

namespace tessera::service::service_internal {

using scheduler::ClusterState;
using scheduler::Job;
using scheduler::JobId;
using scheduler::JobState;

struct JobTable {
  std::vector<Job> queue;        // queued and preempted, by id
  std::map<JobId, Job> running;  // stopping ones included
  // State `starting`: reserved and stored, the launcher not yet done (or
  // its outcome not yet stored).
  std::map<JobId, Job> starting;
  // Reservations for outside systems (Job::origin set): running, but kept
  // out of `running`, so the launcher never sees them.
  std::map<JobId, Job> reserved;

  // Job `id` wherever the table holds it; nullptr if nowhere.
  const Job* Find(JobId id) const;
  // What is broken between the table, the cluster `state` and the store's
  // active jobs (`stored`): one "...; " clause per finding, "" if none.
  std::string Check(const ClusterState& state,
                    const std::vector<Job>& stored) const;
};

}  // namespace tessera::service::service_internal

#endif  // TESSERA_SERVICE_JOB_TABLE_INTERNAL_H_
