// The `pipeline` algorithm's exact split (pipeline_internal.h,
// docs/placer_pipeline_ilp.md "The exact split"): the problem restated in
// the max-load model, solved by the exact DP over chains of ideals
// (SolveContiguousMaxLoad), its placement checked with MemoryLedger.
//
// The restatement: one kind per set of devices alike in profile, compute
// share and budget; a node per op with its forward (+ backward) time on
// each kind and its additive bytes; an edge per dependency costing what
// the ILP's relaxed model charges a crossing (MakeIlpData: the cheapest
// link, twice in training), or where links differ also the dearest link's
// cost in a second run; stages pay for what they receive, not for what
// they send. The DP's memory is a sum of node sizes, which the
// ledger's count is not, so every split is checked against the real
// budgets; one that does not fit is solved again with its kind's memory
// lowered by the overflow, a few times at most, then dropped.

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "common/strings.h"
#include "placer/core/ledger_internal.h"
#include "placer/ilp/ilp_internal.h"
#include "placer/pipeline/pipeline_internal.h"

namespace tessera::placer {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Per device: MemoryLedger's count of `x`.
std::vector<int64_t> LedgerBytes(const Problem& p, const Placement& x,
                                 size_t devices) {
  MemoryLedger ledger(p, static_cast<int>(devices));
  for (OpId op : p.topo) ledger.Place(op, x.device[op]);
  std::vector<int64_t> used(devices);
  for (size_t d = 0; d < devices; ++d) {
    used[d] = ledger.used(static_cast<int>(d));
  }
  return used;
}

// The DP's messages start with the problem's source, which says nothing
// here.
std::string WithoutSource(std::string message, const MaxLoadProblem& m) {
  const std::string source = m.source + ": ";
  if (message.rfind(source, 0) == 0) message.erase(0, source.size());
  return message;
}

bool SameKind(const Problem& p, const Cluster& c, const Budget& budget,
              size_t a, size_t b) {
  return p.device_profile[a] == p.device_profile[b] &&
         c.devices[a].compute_share == c.devices[b].compute_share &&
         budget[a] == budget[b];
}

}  // namespace

StageTimes PipelineStageTimes(const Problem& p, const Cluster& c,
                              const Placement& x) {
  const size_t nd = c.size();
  std::vector<double> stage(nd, 0.0);
  std::vector<char> holds(nd, 0);
  for (OpId op = 0; op < p.num_ops(); ++op) {
    const int d = x.device[op];
    const double share = c.devices[d].compute_share;
    stage[d] += p.Forward(op, d, share) + p.Backward(op, d, share);
    holds[d] = 1;
  }
  const double passes = p.training ? 2.0 : 1.0;
  std::vector<int64_t> received(nd, -1);  // the last tensor received
  for (uint32_t t = 0; t < p.num_tensors(); ++t) {
    const ProblemTensor& tensor = p.tensors[t];
    if (tensor.role != TensorRole::kActivation || tensor.producer == kNoOp) {
      continue;
    }
    const int from = x.device[tensor.producer];
    for (uint32_t v : p.consumers(t)) {
      const int d = x.device[v];
      if (d == from || received[d] == t) continue;
      received[d] = t;
      const Link& link = c.link(from, d);
      stage[d] += passes * (link.latency +
                            static_cast<double>(tensor.bytes) / link.bandwidth);
    }
  }
  StageTimes times;
  for (size_t d = 0; d < nd; ++d) {
    if (!holds[d]) continue;
    times.max_stage = std::max(times.max_stage, stage[d]);
    times.sum_stages += stage[d];
  }
  return times;
}

std::vector<int> PipelineStageOrder(const Problem& p, const Placement& x) {
  // Kahn's algorithm on the devices' quotient graph, the ready device
  // whose first op comes first in problem.topo taken first.
  size_t nd = 0;
  for (uint16_t d : x.device) nd = std::max<size_t>(nd, d + 1u);
  std::vector<size_t> first(nd, p.topo.size());
  for (size_t pos = 0; pos < p.topo.size(); ++pos) {
    const uint16_t d = x.device[p.topo[pos]];
    first[d] = std::min(first[d], pos);
  }
  std::vector<std::vector<int>> succ(nd);
  std::vector<int> indegree(nd, 0);
  for (OpId u = 0; u < p.num_ops(); ++u) {
    for (uint32_t v : p.successors(u)) {
      const int a = x.device[u], b = x.device[v];
      if (a == b) continue;
      if (std::find(succ[a].begin(), succ[a].end(), b) != succ[a].end()) {
        continue;
      }
      succ[a].push_back(b);
      ++indegree[b];
    }
  }
  using Ready = std::pair<size_t, int>;  // (first position, device)
  std::priority_queue<Ready, std::vector<Ready>, std::greater<>> ready;
  for (size_t d = 0; d < nd; ++d) {
    if (first[d] < p.topo.size() && indegree[d] == 0) {
      ready.emplace(first[d], static_cast<int>(d));
    }
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int d = ready.top().second;
    ready.pop();
    order.push_back(d);
    for (int b : succ[d]) {
      if (--indegree[b] == 0) ready.emplace(first[b], b);
    }
  }
  return order;  // short of some devices only if the stages form a cycle
}

PipelineMaxLoad PipelineAsMaxLoad(const Problem& p, const Cluster& c,
                                  const Budget& budget, bool dearest_links) {
  const IlpData data = MakeIlpData(p, c, p, nullptr);
  const size_t nd = c.size();
  PipelineMaxLoad out;
  MaxLoadProblem& m = out.problem;
  m.source = "pipeline";
  std::vector<size_t> first;  // per kind: its first cluster device
  std::vector<int> kind_of(nd, -1);
  for (size_t d = 0; d < nd; ++d) {
    for (size_t k = 0; k < first.size() && kind_of[d] < 0; ++k) {
      if (SameKind(p, c, budget, first[k], d)) kind_of[d] = static_cast<int>(k);
    }
    if (kind_of[d] < 0) {
      kind_of[d] = static_cast<int>(first.size());
      first.push_back(d);
      MaxLoadKind kind;
      kind.name = c.devices[d].spec.name;  // the device's id when alone
      kind.memory = std::max<int64_t>(budget[d], 0);  // -1 would be no limit
      kind.charges_sends = false;
      m.kinds.push_back(kind);
    }
    ++m.kinds[kind_of[d]].count;
  }
  for (size_t k = 0; k < first.size(); ++k) {
    if (m.kinds[k].count == 1) m.kinds[k].name = c.devices[first[k]].id;
    for (size_t d = 0; d < nd; ++d) {
      if (kind_of[d] == static_cast<int>(k)) {
        out.device.push_back(static_cast<int>(d));
      }
    }
  }
  // Sizes: what the ledger counts per op additively (activation outputs,
  // extra bytes, every weight and graph input it reads); received copies,
  // workspace and the training term are left out.
  std::vector<int64_t> size = data.base;
  for (const IlpData::Shared& s : data.shared) {
    if (s.producer >= 0) continue;
    for (uint32_t h : s.consumers) size[h] += s.bytes;
  }
  m.nodes.resize(p.num_ops());
  for (OpId op = 0; op < p.num_ops(); ++op) {
    MaxLoadNode& node = m.nodes[op];
    node.id = op;
    node.name = p.names[op];
    node.size = size[op];
    for (const size_t f : first) node.time.push_back(data.time[op * nd + f]);
  }
  const std::vector<std::pair<double, double>> links = DistinctLinks(c);
  const double passes = p.training ? 2.0 : 1.0;
  for (const IlpEdge& e : data.edges) {
    double cost = e.cost_s;  // the cheapest link's; 0: no activation flows
    if (dearest_links && cost > 0) {
      cost = 0;
      for (const auto& [latency, bandwidth] : links) {
        cost = std::max(cost, passes * (latency + static_cast<double>(e.bytes) /
                                                      bandwidth));
      }
    }
    m.edges.push_back({static_cast<int>(e.from), static_cast<int>(e.to), cost});
  }
  return out;
}

namespace {

// One link model: the DP, checked against the budgets, solved again with
// less memory where the ledger finds a device over its budget.
ExactPipeline SolveExact(const Problem& p, const Cluster& c,
                         const Budget& budget, const ExactPipelineOptions& o,
                         bool dearest_links, Clock::time_point start) {
  const size_t nd = c.size();
  ExactPipeline out;
  out.dearest_links = dearest_links;
  PipelineMaxLoad m = PipelineAsMaxLoad(p, c, budget, dearest_links);
  std::vector<int> kind_of(nd, 0);
  for (size_t md = 0; md < m.device.size(); ++md) {
    kind_of[m.device[md]] = m.problem.KindOf(static_cast<int>(md));
  }
  int64_t bytes = 0;
  for (const MaxLoadNode& node : m.problem.nodes) bytes += node.size;
  for (int run = 0; run <= o.memory_retries; ++run) {
    const double left = o.time_limit_s - SecondsSince(start);
    if (run > 0 && left <= 0) {
      out.why_not += "; no time left to solve again";
      break;
    }
    // No split of the DP's own count fits: say so without searching (the
    // search would take as long as a successful one to find out).
    int64_t room = 0;
    for (const MaxLoadKind& k : m.problem.kinds) room += k.count * k.memory;
    if (bytes > room) {
      out.why_not = "the ops' bytes, " + HumanBytes(bytes) +
                    " as the DP counts them, exceed the " + HumanBytes(room) +
                    " of all budgets together";
      break;
    }
    MaxLoadDpOptions dpo;
    dpo.max_states = o.max_ideals;
    dpo.max_blocks = o.max_blocks;
    dpo.time_limit_s = std::max(left, 1e-3);
    auto r = SolveContiguousMaxLoad(m.problem, dpo);
    ++out.runs;
    if (!r) {
      out.why_not = WithoutSource(r.error().message, m.problem);
      break;
    }
    out.status = r->status;
    if (!HasSolution(r->status)) {
      out.why_not = WithoutSource(r->why, m.problem);
      break;
    }
    out.max_load = r->max_load;
    out.stopped = WithoutSource(r->why, m.problem);
    out.ideals = r->ideals;
    PipelineSplit split;
    split.placement.device.resize(p.num_ops());
    for (OpId op = 0; op < p.num_ops(); ++op) {
      split.placement.device[op] =
          static_cast<uint16_t>(m.device[r->placement.device[op]]);
    }
    const std::vector<int64_t> used = LedgerBytes(p, split.placement, nd);
    std::vector<int64_t> over(m.problem.kinds.size(), 0);
    size_t worst = nd;
    for (size_t d = 0; d < nd; ++d) {
      const int64_t by = used[d] - budget[d];
      if (by <= 0) continue;
      over[kind_of[d]] = std::max(over[kind_of[d]], by);
      if (worst == nd || by > used[worst] - budget[worst]) worst = d;
    }
    if (worst == nd) {
      split.times = PipelineStageTimes(p, c, split.placement);
      split.stages = PipelineStageOrder(p, split.placement);
      out.split = std::move(split);
      out.why_not.clear();
      break;
    }
    out.why_not = "its split exceeds " + c.devices[worst].id + "'s budget by " +
                  HumanBytes(used[worst] - budget[worst]) +
                  " as MemoryLedger counts it";
    for (size_t k = 0; k < over.size(); ++k) {
      MaxLoadKind& kind = m.problem.kinds[k];
      if (over[k] > 0) {
        kind.memory =
            std::max<int64_t>(0, kind.memory - over[k] - kind.memory / 100);
      }
    }
  }
  return out;
}

}  // namespace

ExactPipeline ExactPipelineSplit(const Problem& p, const Cluster& c,
                                 const Budget& budget,
                                 const ExactPipelineOptions& o) {
  const auto start = Clock::now();
  ExactPipeline best = SolveExact(p, c, budget, o, false, start);
  // Real crossings cost at least the cheapest link's: when the split's
  // real bottleneck is the DP's, no split under dearer costs has a lower
  // bottleneck, and the second run is skipped.
  const bool underpriced =
      !best.split ||
      best.split->times.max_stage > best.max_load * (1 + 1e-9) + 1e-15;
  if (underpriced && DistinctLinks(c).size() > 1 &&
      SecondsSince(start) < o.time_limit_s) {
    ExactPipeline dear = SolveExact(p, c, budget, o, true, start);
    const int runs = best.runs + dear.runs;
    // The simulator decides (priority: topological position).
    const SimOptions so{.microbatches = o.microbatches};
    const auto step = [&](const PipelineSplit& split) {
      const SimResult r = Simulate(p, c, split.placement, so);
      return r.fits ? r.step_s : std::numeric_limits<double>::infinity();
    };
    if (dear.split && (!best.split || step(*dear.split) < step(*best.split))) {
      best = std::move(dear);
    } else if (!best.split) {
      best.why_not += "; under the dearest link: " + dear.why_not;
    }
    best.runs = runs;
  }
  best.seconds = SecondsSince(start);
  return best;
}

}  // namespace tessera::placer
