// What a job starts with: the sized model of a model job, the GPUs the
// launcher hands it on each node, and its environment (docs/scheduler.md,
// "Launching"). The round thread calls these without Service::Impl::mu:
// they read only the topology of the round's snapshot and the job's copy.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <unordered_map>

#include "scheduler/mps.h"
#include "service/service_internal.h"
#include "split/split.h"

namespace tessera::service {

// What this file uses of scheduler/, beyond what its headers name.
using scheduler::ElasticModeName;
using scheduler::GpuShare;
using scheduler::MpsLimits;
using scheduler::MpsLimitsFor;

// The environment a job starts with (docs/scheduler.md, "Launching").

std::map<std::string, std::string> Service::Impl::LaunchEnv(
    const Job& job, const Topology& t, const SizedModel* sized) const {
  std::map<std::string, std::string> env = job.request.env;
  std::string visible, ids;
  std::vector<int> milli;
  std::vector<int64_t> memory_mib;
  for (size_t i = 0; i < job.allocation.gpus.size(); ++i) {
    const GpuShare& s = job.allocation.gpus[i];
    const std::string sep = i ? "," : "";
    visible += sep + std::to_string(t.gpus[s.gpu].index);
    ids += sep + t.gpus[s.gpu].id;
    milli.push_back(s.milli);
    memory_mib.push_back(s.memory_mib);
  }
  env["CUDA_VISIBLE_DEVICES"] = visible;
  if (!job.allocation.exclusive && !job.allocation.gpus.empty()) {
    const MpsLimits mps = MpsLimitsFor(milli, memory_mib);
    env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = mps.active_thread_percentage;
    env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = mps.pinned_device_mem_limit;
  }
  env["TESSERA_JOB_ID"] = std::to_string(job.id);
  // Which start of the job this is: 0, then one more after each preemption.
  env["TESSERA_ATTEMPT"] = std::to_string(job.restarts);
  env["TESSERA_GPUS"] = ids;
  if (job.request.elastic) {  // docs/elastic.md, "The job's side"
    env["TESSERA_ALLOCATION_FILE"] = AllocationFilePath(job.id);
    env["TESSERA_ELASTIC_MIN"] = std::to_string(job.request.elastic->min);
    env["TESSERA_ELASTIC_MAX"] = std::to_string(job.request.elastic->max);
    env["TESSERA_ELASTIC_MODE"] = ElasticModeName(job.request.elastic->mode);
  }
  if (job.allocation.node >= 0) {
    env["TESSERA_NODE"] = t.nodes[job.allocation.node].name;
    std::string nodes;
    for (const launch::LaunchPart& p : LaunchParts(t, job.allocation)) {
      nodes += (nodes.empty() ? "" : ",") + p.node;
    }
    env["TESSERA_NODES"] = nodes;
  }
  if (!job.plan.is_null()) {
    const std::filesystem::path dir(options.log_dir);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const std::string plan_path =
        (dir / (std::to_string(job.id) + ".plan.json")).string();
    std::ofstream(plan_path) << job.plan.dump(2) << "\n";
    env["TESSERA_PLAN"] = plan_path;
    if (sized) {
      auto plan = split::ParsePlan(job.plan, plan_path);
      if (plan) {
        const auto names = graph::UniqueNodeNames(*sized->model->graph);
        std::unordered_map<std::string, int> device_of(plan->placement.begin(),
                                                       plan->placement.end());
        std::vector<int> node_device(names.size(), -1);
        for (size_t n = 0; n < names.size(); ++n) {
          auto it = device_of.find(names[n]);
          if (it != device_of.end()) node_device[n] = it->second;
        }
        const std::string map_path =
            (dir / (std::to_string(job.id) + ".device_map.json")).string();
        std::ofstream(map_path)
            << split::DeviceMapJson(*sized->model->graph, node_device,
                                    plan->devices)
                   .dump(2)
            << "\n";
        env["TESSERA_DEVICE_MAP"] = map_path;
      }
    }
  }
  return env;
}

// A per-worker elastic job's processes (docs/elastic.md, "The two launch
// modes"): each sees only its worker's GPU, with that share's limits.
std::vector<launch::LaunchWorker> Service::Impl::WorkerLaunches(
    const Job& job, const Topology& t, const std::vector<int>& workers) {
  std::vector<launch::LaunchWorker> out;
  for (const int w : workers) {
    const auto pos =
        std::find(job.elastic.workers.begin(), job.elastic.workers.end(), w);
    if (pos == job.elastic.workers.end()) continue;
    const GpuShare& s =
        job.allocation
            .gpus[static_cast<size_t>(pos - job.elastic.workers.begin())];
    launch::LaunchWorker launch;
    launch.id = w;
    launch.env["CUDA_VISIBLE_DEVICES"] = std::to_string(t.gpus[s.gpu].index);
    launch.env["TESSERA_GPUS"] = t.gpus[s.gpu].id;
    launch.env["TESSERA_WORKER_ID"] = std::to_string(w);
    launch.env["TESSERA_WORKER_GUARANTEED"] =
        w < job.request.elastic->min ? "1" : "0";
    if (!job.allocation.exclusive) {
      const int milli[] = {s.milli};
      const int64_t memory_mib[] = {s.memory_mib};
      const MpsLimits mps = MpsLimitsFor(milli, memory_mib);
      launch.env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] =
          mps.active_thread_percentage;
      launch.env["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] =
          mps.pinned_device_mem_limit;
    }
    out.push_back(std::move(launch));
  }
  return out;
}

// What `a` holds on each node, for the launcher: the node that holds the
// CPU and memory first.

std::vector<launch::LaunchPart> Service::Impl::LaunchParts(
    const Topology& t, const Allocation& a) {
  std::vector<launch::LaunchPart> parts;
  auto part_of = [&](int node) -> launch::LaunchPart& {
    for (launch::LaunchPart& p : parts) {
      if (p.node == t.nodes[node].name) return p;
    }
    parts.push_back({t.nodes[node].name,
                     {},
                     {},
                     {},
                     a.exclusive,
                     0,
                     0,
                     t.nodes[node].isolation == scheduler::Isolation::kMps});
    return parts.back();
  };
  launch::LaunchPart& first = part_of(a.node);
  first.cpu_milli = a.cpu_milli;
  first.memory_mib = a.memory_mib;
  for (const GpuShare& share : a.gpus) {
    launch::LaunchPart& p = part_of(t.gpus[share.gpu].node);
    p.gpu_indices.push_back(t.gpus[share.gpu].index);
    p.gpu_milli.push_back(share.milli);
    p.gpu_memory_mib.push_back(share.memory_mib);
  }
  return parts;
}

namespace {

std::string PicturePath(const std::string& log_dir, JobId id, bool graph) {
  return (std::filesystem::path(log_dir) /
          (std::to_string(id) +
           (graph ? ".plan-graph.html" : ".plan-timeline.html")))
      .string();
}

}  // namespace

std::string Service::PlanPicturePath(JobId id, bool graph) const {
  const std::shared_ptr<Impl> impl = Current();
  return PicturePath(impl->options.log_dir, id, graph);
}

void Service::Impl::WritePlanPictures(
    JobId id, const placer::PlanPictures& pictures) const {
  std::error_code ec;
  std::filesystem::create_directories(options.log_dir, ec);
  for (const bool graph : {false, true}) {
    // Written whole, then renamed: a reader never sees half a picture.
    const std::string path = PicturePath(options.log_dir, id, graph);
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << (graph ? pictures.graph_html : pictures.timeline_html);
      if (!out) continue;
    }
    std::filesystem::rename(tmp, path, ec);
  }
}

}  // namespace tessera::service
