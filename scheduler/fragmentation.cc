// TypicalWorkload, NodeFragmentation and MeasureFragmentation (the
// definitions are in docs/simulate.md, "Fragmentation").
#include "scheduler/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tessera::scheduler {
namespace {

bool KindAllowed(const TypicalTask& task, const std::string* kind) {
  if (task.kinds.empty()) return true;
  if (kind == nullptr) return false;
  return std::find(task.kinds.begin(), task.kinds.end(), *kind) !=
         task.kinds.end();
}

}  // namespace

Workload TypicalWorkload(const std::vector<TypicalTask>& tasks,
                         double coverage) {
  using Key = std::tuple<int64_t, int, int, std::vector<std::string>>;
  std::map<Key, int64_t> counts;
  for (const TypicalTask& t : tasks) {
    ++counts[{t.cpu_milli, t.milli, t.gpus, t.kinds}];
  }
  std::vector<std::pair<Key, int64_t>> shapes(counts.begin(), counts.end());
  // Most frequent first; ties by the key, larger first, as the paper's
  // simulator sorts them.
  std::sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  Workload w;
  const auto total = static_cast<double>(tasks.size());
  double covered = 0;
  for (const auto& [key, count] : shapes) {
    if (!w.tasks.empty() && covered >= coverage * total) break;
    TypicalTask t;
    std::tie(t.cpu_milli, t.milli, t.gpus, t.kinds) = key;
    t.weight = static_cast<double>(count);
    covered += t.weight;
    w.tasks.push_back(std::move(t));
  }
  for (TypicalTask& t : w.tasks) t.weight /= covered;
  double cpu = 0, milli = 0;
  for (const TypicalTask& t : tasks) {
    if (t.gpus == 0) continue;
    cpu += static_cast<double>(t.cpu_milli);
    milli += static_cast<double>(t.gpus) * t.milli;
  }
  w.cpu_per_milli = milli > 0 ? cpu / milli : 0;
  std::map<std::string, double> bound;
  for (const TypicalTask& t : tasks) {
    if (t.gpus == 0 || t.kinds.empty()) continue;
    std::vector<std::string> kinds = t.kinds;
    std::sort(kinds.begin(), kinds.end());
    kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
    for (const std::string& k : kinds) {
      bound[k] += static_cast<double>(t.gpus) * t.milli /
                  static_cast<double>(kinds.size());
    }
  }
  for (const auto& [k, m] : bound) {
    if (milli > 0) w.kind_bound.emplace_back(k, m / milli);
  }
  return w;
}

NodeFree FreeOn(const ClusterState& state, int node) {
  const Topology& t = state.topology();
  NodeFree free;
  free.cpu_milli = state.free_cpu_milli(node);
  free.memory_mib = state.free_memory_mib_on_node(node);
  const std::vector<int>& gpus = t.nodes[node].gpus;
  free.gpus.reserve(gpus.size());
  for (const int g : gpus) {
    free.gpus.push_back({state.free_milli(g), state.free_memory_mib(g),
                         t.gpus[g].memory_mib, &t.gpus[g].kind, g});
  }
  return free;
}

bool GpuCanTake(const FreeGpu& gpu, const TypicalTask& task) {
  return gpu.milli >= task.milli && KindAllowed(task, gpu.kind) &&
         gpu.memory_mib * kFullGpuMilli >= gpu.capacity_mib * task.milli;
}

double NodeFragmentation(const NodeFree& node, const Workload& workload) {
  int idle = 0;
  for (const FreeGpu& gpu : node.gpus) idle += gpu.milli;
  if (idle == 0) return 0;
  double sum = 0;
  for (const TypicalTask& task : workload.tasks) {
    double frag = idle;
    if (task.gpus > 0 && node.cpu_milli >= task.cpu_milli) {
      int usable = 0;
      int unusable_milli = 0;
      for (const FreeGpu& gpu : node.gpus) {
        if (GpuCanTake(gpu, task)) {
          ++usable;
        } else {
          unusable_milli += gpu.milli;
        }
      }
      if (usable >= task.gpus) frag = unusable_milli;
    }
    sum += task.weight * frag;
  }
  return sum;
}

double StrandedMilli(const NodeFree& node, const Workload& workload) {
  double idle = 0;
  for (const FreeGpu& gpu : node.gpus) idle += gpu.milli;
  double stranded = 0;
  if (workload.cpu_per_milli > 0) {
    stranded = std::max(stranded, idle - static_cast<double>(node.cpu_milli) /
                                             workload.cpu_per_milli);
  }
  if (workload.memory_mib_per_milli > 0) {
    stranded = std::max(stranded, idle - static_cast<double>(node.memory_mib) /
                                             workload.memory_mib_per_milli);
  }
  return stranded;
}

UnfillableMilli::UnfillableMilli(const Workload& workload) {
  for (const TypicalTask& t : workload.tasks) {
    if (t.gpus == 0) continue;
    cpu_levels_.push_back(t.cpu_milli);
    for (const std::string& k : t.kinds) kinds_.push_back(k);
  }
  std::sort(cpu_levels_.begin(), cpu_levels_.end());
  cpu_levels_.erase(std::unique(cpu_levels_.begin(), cpu_levels_.end()),
                    cpu_levels_.end());
  std::sort(kinds_.begin(), kinds_.end());
  kinds_.erase(std::unique(kinds_.begin(), kinds_.end()), kinds_.end());
  fill_.resize(kinds_.size() + 1);
  for (size_t k = 0; k <= kinds_.size(); ++k) {
    const std::string* kind = k < kinds_.size() ? &kinds_[k] : nullptr;
    for (const int64_t cpu : cpu_levels_) {
      std::vector<int> sizes;
      bool whole = false;
      for (const TypicalTask& t : workload.tasks) {
        if (t.gpus == 0 || t.cpu_milli > cpu) continue;
        // A kind no task names ("any other"): only the unbound tasks.
        if (kind == nullptr ? !t.kinds.empty() : !KindAllowed(t, kind)) {
          continue;
        }
        if (t.milli >= kFullGpuMilli) {
          whole = true;
        } else if (t.gpus == 1 && t.milli > 0) {
          sizes.push_back(t.milli);
        }
      }
      std::vector<int16_t> fill(kFullGpuMilli + 1, 0);
      for (int h = 1; h <= kFullGpuMilli; ++h) {
        int best = fill[h - 1];
        for (const int m : sizes) {
          if (m <= h) best = std::max(best, fill[h - m] + m);
        }
        fill[h] = static_cast<int16_t>(best);
      }
      if (whole) fill[kFullGpuMilli] = kFullGpuMilli;
      fill_[k].push_back(std::move(fill));
    }
  }
}

double UnfillableMilli::operator()(const NodeFree& node) const {
  // The tables of the highest CPU level the node still has, if any.
  const auto above =
      std::upper_bound(cpu_levels_.begin(), cpu_levels_.end(), node.cpu_milli);
  const auto level = static_cast<size_t>(above - cpu_levels_.begin());
  double unfillable = 0;
  if (cpu_levels_.empty()) return unfillable;  // no GPU tasks: unknown
  for (const FreeGpu& gpu : node.gpus) {
    if (gpu.milli <= 0) continue;
    if (level == 0) {
      unfillable += gpu.milli;
      continue;
    }
    size_t k = 0;
    while (k < kinds_.size() && (gpu.kind == nullptr || kinds_[k] != *gpu.kind))
      ++k;
    int usable = std::min(gpu.milli, kFullGpuMilli);
    if (gpu.capacity_mib > 0) {
      const int64_t by_memory = std::max<int64_t>(gpu.memory_mib, 0) *
                                kFullGpuMilli / gpu.capacity_mib;
      usable = static_cast<int>(std::min<int64_t>(usable, by_memory));
    }
    unfillable += gpu.milli - fill_[k][level - 1][usable];
  }
  return unfillable;
}

double ClusterFragmentation::ratio_pct() const {
  return idle_milli > 0 ? 100.0 * frag_milli / idle_milli : 0.0;
}

ClusterFragmentation MeasureFragmentation(const ClusterState& state,
                                          const Workload& workload) {
  ClusterFragmentation c;
  const int nodes = static_cast<int>(state.topology().nodes.size());
  for (int n = 0; n < nodes; ++n) {
    const NodeFree free = FreeOn(state, n);
    for (const FreeGpu& gpu : free.gpus) c.idle_milli += gpu.milli;
    c.frag_milli += NodeFragmentation(free, workload);
  }
  return c;
}

}  // namespace tessera::scheduler

namespace tessera::scheduler {

const Workload& OpenbWorkload() {
  // {CPU milli, GPUs, milli per GPU, pods}: the 35 most common shapes of
  // openb_pod_list_default.csv, 7,766 of its 8,152 pods (95.3%), and the
  // CPU and memory its GPU pods ask per GPU milli; trace_test checks these
  // against the file.
  struct Shape {
    int64_t cpu;
    int gpus, milli, pods;
  };
  static constexpr Shape kShapes[] = {
      {3152, 1, 810, 1047},  {11300, 1, 1000, 874}, {11400, 1, 1000, 599},
      {3152, 1, 1000, 470},  {11908, 1, 470, 388},  {12500, 0, 0, 366},
      {8000, 1, 470, 360},   {12000, 1, 1000, 326}, {32000, 0, 0, 290},
      {18708, 1, 1000, 255}, {11908, 1, 650, 237},  {4000, 1, 320, 232},
      {9810, 1, 1000, 195},  {8000, 0, 0, 185},     {8000, 1, 1000, 164},
      {4000, 1, 1000, 159},  {15700, 1, 1000, 158}, {11908, 1, 1000, 153},
      {16000, 1, 1000, 150}, {4000, 1, 230, 122},   {15400, 0, 0, 120},
      {6000, 1, 460, 120},   {16500, 0, 0, 95},     {14200, 1, 1000, 93},
      {24200, 1, 1000, 84},  {3152, 1, 590, 75},    {8000, 1, 320, 72},
      {4152, 1, 550, 72},    {11900, 1, 1000, 55},  {4000, 1, 160, 54},
      {4152, 1, 370, 45},    {4000, 1, 220, 43},    {8200, 1, 1000, 41},
      {15200, 1, 1000, 36},  {4152, 1, 810, 31},
  };
  static const Workload workload = [] {
    Workload w;
    double total = 0;
    for (const Shape& s : kShapes) total += s.pods;
    for (const Shape& s : kShapes) {
      w.tasks.push_back({s.cpu, s.gpus, s.milli, {}, s.pods / total});
    }
    w.cpu_per_milli = 10.882255372281001;
    w.memory_mib_per_milli = 41.137630774791354;
    return w;
  }();
  return workload;
}

}  // namespace tessera::scheduler
