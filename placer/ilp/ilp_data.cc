// The ILP's data read off a problem, and the formulation evaluated for one
// assignment (ilp_internal.h).

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "placer/ilp/ilp_internal.h"

namespace tessera::placer {
namespace {

double CheapestCrossing(const Cluster& c, int64_t bytes) {
  double best = std::numeric_limits<double>::infinity();
  for (size_t a = 0; a < c.size(); ++a) {
    for (size_t b = 0; b < c.size(); ++b) {
      if (a == b) continue;
      const Link& l = c.link(a, b);
      best =
          std::min(best, l.latency + static_cast<double>(bytes) / l.bandwidth);
    }
  }
  return std::isfinite(best) ? best : 0.0;
}

}  // namespace

// `q` is the problem the MIP places (contracted or the original); the
// largest tensor of a group also looks at the original ops in it.
IlpData MakeIlpData(const Problem& q, const Cluster& c, const Problem& p,
                    const Grouping* grouping) {
  IlpData data;
  const size_t ng = q.num_ops();
  const size_t nd = c.size();
  data.groups = ng;
  data.training = q.training;
  data.devices = nd;
  data.time.resize(ng * nd);
  for (OpId g = 0; g < ng; ++g) {
    for (size_t d = 0; d < nd; ++d) {
      const double share = c.devices[d].compute_share;
      data.time[g * nd + d] = q.Forward(g, static_cast<int>(d), share) +
                              q.Backward(g, static_cast<int>(d), share);
    }
  }
  // Edges: every dependency (Constant-produced weights too, as
  // RelaxedStepTime); crossing one costs only when activations flow.
  data.sink.assign(ng, true);
  std::vector<int64_t> to_bytes(ng, 0);
  std::vector<uint32_t> mark(ng, UINT32_MAX);
  for (OpId g = 0; g < ng; ++g) {
    for (uint32_t t : q.outputs(g)) {
      if (q.tensors[t].role != TensorRole::kActivation) continue;
      for (uint32_t h : q.consumers(t)) {
        if (mark[h] != g) {
          mark[h] = g;
          to_bytes[h] = 0;
        }
        to_bytes[h] += q.tensors[t].bytes;
      }
    }
    for (uint32_t h : q.successors(g)) {
      IlpEdge e;
      e.from = g;
      e.to = h;
      if (mark[h] == g) {
        e.bytes = to_bytes[h];
        e.cost_s = CheapestCrossing(c, e.bytes) * (q.training ? 2.0 : 1.0);
      }
      data.edges.push_back(e);
      data.sink[g] = false;
    }
  }
  // Memory.
  data.base.assign(ng, 0);
  data.workspace.assign(ng, 0);
  data.largest.assign(ng, 0);
  for (OpId g = 0; g < ng; ++g) {
    data.base[g] = q.extra_bytes[g];
    data.workspace[g] = q.workspace_bytes[g];
    for (uint32_t t : q.outputs(g)) {
      const ProblemTensor& tensor = q.tensors[t];
      if (tensor.role != TensorRole::kActivation) continue;
      data.base[g] += tensor.bytes;
      data.largest[g] = std::max(data.largest[g], tensor.bytes);
    }
  }
  for (uint32_t t = 0; t < q.num_tensors(); ++t) {
    const ProblemTensor& tensor = q.tensors[t];
    if (tensor.role == TensorRole::kActivation && tensor.producer == kNoOp) {
      continue;
    }
    IlpData::Shared s;
    for (uint32_t h : q.consumers(t)) {
      if (tensor.role == TensorRole::kActivation && h == tensor.producer) {
        continue;
      }
      if (std::find(s.consumers.begin(), s.consumers.end(), h) ==
          s.consumers.end()) {
        s.consumers.push_back(h);
      }
    }
    if (s.consumers.empty()) continue;
    if (tensor.role == TensorRole::kActivation) {
      s.producer = tensor.producer;
      s.bytes = tensor.bytes;
      for (uint32_t h : s.consumers) {
        data.largest[h] = std::max(data.largest[h], tensor.bytes);
      }
    } else {
      s.bytes = tensor.role == TensorRole::kWeight && q.training
                    ? static_cast<int64_t>(static_cast<double>(tensor.bytes) *
                                           q.weight_state_factor)
                    : tensor.bytes;
      if (s.consumers.size() == 1) {
        data.base[s.consumers[0]] += s.bytes;
        continue;
      }
    }
    data.shared.push_back(std::move(s));
  }
  // Training: activations inside a group count towards its largest tensor.
  if (q.training && grouping != nullptr) {
    for (OpId op = 0; op < p.num_ops(); ++op) {
      const uint32_t g = grouping->group_of[op];
      for (uint32_t t : p.outputs(op)) {
        if (p.tensors[t].role == TensorRole::kActivation) {
          data.largest[g] = std::max(data.largest[g], p.tensors[t].bytes);
        }
      }
    }
  }
  return data;
}

// The formulation's memory count on device `d` for groups assigned so far
// (assign[g] < 0: not yet placed).
int64_t IlpBytes(const IlpData& data, const std::vector<int>& assign, int d) {
  int64_t bytes = 0;
  int64_t work = 0;
  int64_t largest = 0;
  for (size_t g = 0; g < data.groups; ++g) {
    if (assign[g] != d) continue;
    bytes += data.base[g];
    work = std::max(work, data.workspace[g]);
    largest = std::max(largest, data.largest[g]);
  }
  for (const IlpData::Shared& s : data.shared) {
    bool here = false;
    for (uint32_t h : s.consumers) here = here || assign[h] == d;
    if (here && (s.producer < 0 || assign[s.producer] != d)) bytes += s.bytes;
  }
  return bytes + work + (data.training ? 2 * largest : 0);
}

bool IlpFits(const IlpData& data, const std::vector<int>& assign,
             const Budget& budget) {
  for (size_t d = 0; d < data.devices; ++d) {
    if (IlpBytes(data, assign, static_cast<int>(d)) >
        static_cast<int64_t>(static_cast<double>(budget[d]) *
                             (1.0 - kIlpMemorySlack))) {
      return false;
    }
  }
  return true;
}

// Relaxed start times of each group under `assign` (longest path with the
// edges' crossing costs) and the relaxed step time.
double IlpRelaxedTimes(const IlpData& data, const Problem& q,
                       const std::vector<int>& assign,
                       std::vector<double>* start) {
  const size_t nd = data.devices;
  start->assign(data.groups, 0.0);
  std::vector<std::vector<const IlpEdge*>> in(data.groups);
  for (const IlpEdge& e : data.edges) in[e.to].push_back(&e);
  double step = 0.0;
  std::vector<double> load(nd, 0.0);
  for (OpId g : q.topo) {
    double s = 0.0;
    for (const IlpEdge* e : in[g]) {
      const double ready = (*start)[e->from] +
                           data.time[e->from * nd + assign[e->from]] +
                           (assign[e->from] != assign[g] ? e->cost_s : 0.0);
      s = std::max(s, ready);
    }
    (*start)[g] = s;
    const double t = data.time[g * nd + assign[g]];
    step = std::max(step, s + t);
    load[assign[g]] += t;
  }
  for (double l : load) step = std::max(step, l);
  return step;
}

// A feasible start for CBC: the best, under the relaxed time model, of the
// fast heuristics' placements of `q` that satisfy the formulation's memory
// rows, all groups on one device, and a first-fit in topological order.
// Empty when none fits.
std::vector<int> IlpWarmStart(const IlpData& data, const Problem& q,
                              const Cluster& c, const Budget& budget) {
  const size_t nd = data.devices;
  std::vector<std::vector<int>> candidates;
  PlaceOptions plain;
  plain.coplace = false;
  plain.fuse = false;
  for (auto* algo : {PlaceMEtf, PlaceMTopo, PlacePipeline}) {
    Result<AlgoOutput> r = algo(q, c, budget, plain);
    if (!r || r->placement.device.size() != data.groups) continue;
    candidates.emplace_back(r->placement.device.begin(),
                            r->placement.device.end());
  }
  std::vector<double> total(nd, 0.0);
  for (size_t g = 0; g < data.groups; ++g) {
    for (size_t d = 0; d < nd; ++d) total[d] += data.time[g * nd + d];
  }
  std::vector<int> order(nd);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return total[a] < total[b]; });
  candidates.emplace_back(data.groups, order[0]);
  std::vector<int> fill(data.groups, -1);
  size_t k = 0;
  for (OpId g : q.topo) {
    while (k < nd) {
      fill[g] = order[k];
      if (IlpBytes(data, fill, order[k]) <=
          static_cast<int64_t>(static_cast<double>(budget[order[k]]) *
                               (1.0 - kIlpMemorySlack))) {
        break;
      }
      ++k;
    }
    if (k == nd) break;
  }
  if (k < nd) candidates.push_back(fill);

  std::vector<int> best;
  double best_time = std::numeric_limits<double>::infinity();
  std::vector<double> start;
  for (const std::vector<int>& assign : candidates) {
    if (!IlpFits(data, assign, budget)) continue;
    const double t = IlpRelaxedTimes(data, q, assign, &start);
    if (t < best_time) {
      best_time = t;
      best = assign;
    }
  }
  return best;
}

}  // namespace tessera::placer
