// plan.json, the Chrome Trace Event timeline and the DOT picture of a plan.
// The keys of plan.json are a stable contract (docs/formats.md, "plan.json"):
// add keys, never rename them.

#include "placer/report/plan_io.h"

#include <algorithm>
#include <array>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "common/strings.h"

namespace tessera::placer {
namespace {

using Json = nlohmann::json;

double Ms(double seconds) { return seconds * 1e3; }
double Us(double seconds) { return seconds * 1e6; }

// Ops placed on each device, counted from the placement itself.
std::vector<int> OpsPerDevice(const Cluster& cluster, const Plan& plan) {
  std::vector<int> ops(cluster.size(), 0);
  for (const uint16_t d : plan.placement.device) {
    if (d < ops.size()) ++ops[d];
  }
  return ops;
}

const std::string& DeviceId(const Cluster& cluster, int d) {
  static const std::string kUnknown = "?";
  return d >= 0 && static_cast<size_t>(d) < cluster.size()
             ? cluster.devices[d].id
             : kUnknown;
}

Json DevicesJson(const Problem& problem, const Cluster& cluster,
                 const Plan& plan) {
  const std::vector<int> ops = OpsPerDevice(cluster, plan);
  Json devices = Json::array();
  for (size_t d = 0; d < cluster.size(); ++d) {
    const ClusterDevice& dev = cluster.devices[d];
    DeviceStats stats;
    if (d < plan.sim.devices.size()) stats = plan.sim.devices[d];
    Json peak_op = nullptr;
    if (stats.peak_op != kNoOp && stats.peak_op < problem.num_ops()) {
      peak_op = problem.names[stats.peak_op];
    }
    devices.push_back({{"id", dev.id},
                       {"kind", dev.spec.name},
                       {"memory_capacity_bytes", dev.memory_usable},
                       {"memory_total_bytes", dev.memory_total},
                       {"memory_peak_bytes", stats.peak_bytes},
                       {"peak_op", peak_op},
                       {"weight_bytes", stats.weight_bytes},
                       {"compute_share", dev.compute_share},
                       {"busy_ms", Ms(stats.busy_s)},
                       {"ops", ops[d]}});
  }
  return devices;
}

// One entry per (tensor, from, to, gradient): the microbatches' copies of a
// tensor are summed, so `bytes` is what the step moves.
Json TransfersJson(const Problem& problem, const Cluster& cluster,
                   const Plan& plan) {
  using Key = std::tuple<uint32_t, int, int, bool>;
  std::map<Key, size_t> index;
  Json transfers = Json::array();
  for (const TransferRecord& t : plan.sim.transfers) {
    const Key key{t.tensor, t.from, t.to, t.gradient};
    auto [it, inserted] = index.emplace(key, transfers.size());
    if (!inserted) {
      Json& entry = transfers[it->second];
      entry["bytes"] = entry["bytes"].get<int64_t>() + t.bytes;
      continue;
    }
    const std::string tensor = t.tensor < problem.num_tensors()
                                   ? problem.tensors[t.tensor].name
                                   : "#" + std::to_string(t.tensor);
    transfers.push_back({{"tensor", tensor},
                         {"from", DeviceId(cluster, t.from)},
                         {"to", DeviceId(cluster, t.to)},
                         {"bytes", t.bytes},
                         {"gradient", t.gradient}});
  }
  return transfers;
}

Json LinksJson(const Cluster& cluster, const Plan& plan) {
  Json links = Json::array();
  for (const LinkStats& l : plan.sim.links) {
    links.push_back({{"from", DeviceId(cluster, l.from)},
                     {"to", DeviceId(cluster, l.to)},
                     {"transfers", l.transfers},
                     {"bytes", l.bytes},
                     {"busy_ms", Ms(l.busy_s)}});
  }
  return links;
}

}  // namespace

Json PlanJson(const Problem& problem, const Cluster& cluster, const Plan& plan,
              const PlanContext& context) {
  const SimResult& sim = plan.sim;
  Json placement = Json::object();
  for (size_t op = 0; op < problem.num_ops(); ++op) {
    const int d =
        op < plan.placement.device.size() ? plan.placement.device[op] : -1;
    placement[problem.names[op]] = DeviceId(cluster, d);
  }
  Json j = {
      {"model", context.model},
      {"algorithm", std::string(AlgorithmName(plan.algorithm))},
      {"mode", problem.training ? "training" : "inference"},
      {"batch", context.batch},
      {"runtime", context.runtime},
      {"amp", context.amp},
      {"microbatches", plan.microbatches},
      {"cluster", cluster.source},
      {"step_time_ms", Ms(sim.step_s)},
      {"lower_bound_ms", Ms(plan.lower_bound_s)},
      {"ratio_to_lower_bound", plan.lower_bound_s > 0
                                   ? Json(sim.step_s / plan.lower_bound_s)
                                   : Json(nullptr)},
      {"placement_time_ms", Ms(plan.placement_s)},
      {"fits", sim.fits},
      {"transfer_bytes", sim.transfer_bytes},
      {"devices", DevicesJson(problem, cluster, plan)},
      {"placement", std::move(placement)},
      {"transfers", TransfersJson(problem, cluster, plan)},
      {"links", LinksJson(cluster, plan)},
      {"notes", plan.notes},
  };
  if (plan.ilp_objective_s || plan.ilp_gap) {
    Json ilp = {{"optimal", plan.ilp_status == SolveStatus::kOptimal}};
    ilp["objective_ms"] =
        plan.ilp_objective_s ? Json(Ms(*plan.ilp_objective_s)) : Json(nullptr);
    ilp["gap"] = plan.ilp_gap ? Json(*plan.ilp_gap) : Json(nullptr);
    j["ilp"] = std::move(ilp);
  }
  return j;
}

namespace {

// Every event lives in one process; devices and links are its threads.
constexpr int kPid = 1;

Json Metadata(std::string_view what, int tid, Json args) {
  Json e = {{"ph", "M"},
            {"pid", kPid},
            {"name", std::string(what)},
            {"args", std::move(args)}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

void AddThread(Json& events, int tid, const std::string& name) {
  events.push_back(Metadata("thread_name", tid, {{"name", name}}));
  events.push_back(Metadata("thread_sort_index", tid, {{"sort_index", tid}}));
}

Json Complete(std::string name, std::string_view category, int tid,
              double start_s, double end_s, Json args) {
  return {{"name", std::move(name)},
          {"cat", std::string(category)},
          {"ph", "X"},
          {"pid", kPid},
          {"tid", tid},
          {"ts", Us(start_s)},
          {"dur", Us(std::max(0.0, end_s - start_s))},
          {"args", std::move(args)}};
}

}  // namespace

Json TimelineJson(const Problem& problem, const Cluster& cluster,
                  const Plan& plan) {
  const SimResult& sim = plan.sim;
  Json events = Json::array();
  events.push_back(Metadata("process_name", -1, {{"name", "tessera plan"}}));
  // Threads 1..n are the devices, in the cluster's order; the links that
  // carried data follow.
  for (size_t d = 0; d < cluster.size(); ++d) {
    const ClusterDevice& dev = cluster.devices[d];
    AddThread(events, static_cast<int>(d) + 1,
              dev.id + " (" + dev.spec.name + ")");
  }
  std::map<std::pair<int, int>, int> link_tid;
  auto link_thread = [&](int from, int to) {
    auto [it, inserted] = link_tid.emplace(
        std::pair{from, to},
        static_cast<int>(cluster.size() + link_tid.size()) + 1);
    if (inserted) {
      AddThread(events, it->second,
                DeviceId(cluster, from) + " -> " + DeviceId(cluster, to));
    }
    return it->second;
  };
  for (const LinkStats& l : sim.links) link_thread(l.from, l.to);

  for (const OpRecord& r : sim.op_records) {
    if (r.op >= problem.num_ops()) continue;
    const std::string& name = problem.names[r.op];
    Json args = {{"op", name},
                 {"op_type", problem.op_types[r.op]},
                 {"microbatch", r.microbatch}};
    events.push_back(Complete(r.backward ? name + " (backward)" : name,
                              r.backward ? "backward" : "forward", r.device + 1,
                              r.start_s, r.end_s, std::move(args)));
  }
  for (const TransferRecord& t : sim.transfers) {
    const std::string tensor = t.tensor < problem.num_tensors()
                                   ? problem.tensors[t.tensor].name
                                   : "#" + std::to_string(t.tensor);
    Json args = {{"tensor", tensor},
                 {"bytes", t.bytes},
                 {"from", DeviceId(cluster, t.from)},
                 {"to", DeviceId(cluster, t.to)},
                 {"microbatch", t.microbatch}};
    events.push_back(Complete(t.gradient ? tensor + " (gradient)" : tensor,
                              t.gradient ? "gradient" : "transfer",
                              link_thread(t.from, t.to), t.start_s, t.end_s,
                              std::move(args)));
  }
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"algorithm", std::string(AlgorithmName(plan.algorithm))},
            {"mode", problem.training ? "training" : "inference"},
            {"step_time_ms", Ms(sim.step_s)},
            {"microbatches", plan.microbatches}}}};
}

namespace {

// Fill colours of devices 0, 1, ...: Paul Tol's "light" and "muted"
// qualitative schemes, distinguishable with black text on top; device
// indices past the end wrap around.
constexpr std::array<const char*, 16> kPalette = {
    "#77AADD", "#EE8866", "#EEDD88", "#FFAABB", "#99DDFF", "#44BB99",
    "#BBCC33", "#AAAA00", "#DDDDDD", "#CC6677", "#88CCEE", "#DDCC77",
    "#117733", "#AA4499", "#44AA99", "#999933"};

std::string DotEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

const char* DeviceColour(size_t d) { return kPalette[d % kPalette.size()]; }

void WritePlanDot(const Problem& problem, const Cluster& cluster,
                  const Plan& plan, std::ostream& out) {
  const std::vector<uint16_t>& device = plan.placement.device;
  auto device_of = [&](size_t op) -> int {
    return op < device.size() ? device[op] : -1;
  };
  out << "digraph \"plan\" {\n"
      << "  label=\"" << DotEscape(AlgorithmName(plan.algorithm)) << " on "
      << DotEscape(cluster.source) << "\";\n"
      << "  node [shape=box, style=filled, fontsize=10];\n";
  const std::vector<int> ops = OpsPerDevice(cluster, plan);
  out << "  subgraph cluster_legend {\n    label=\"devices\";\n";
  for (size_t d = 0; d < cluster.size(); ++d) {
    out << "    legend" << d << " [label=\"" << DotEscape(cluster.devices[d].id)
        << "\\n"
        << DotEscape(cluster.devices[d].spec.name) << ", " << ops[d]
        << " ops\", fillcolor=\"" << DeviceColour(d) << "\"];\n";
  }
  out << "  }\n";
  for (size_t op = 0; op < problem.num_ops(); ++op) {
    const int d = device_of(op);
    out << "  n" << op << " [label=\"" << DotEscape(problem.op_types[op])
        << "\\n"
        << DotEscape(problem.names[op]) << "\", fillcolor=\""
        << (d >= 0 ? DeviceColour(static_cast<size_t>(d)) : "white")
        << "\"];\n";
  }
  // One edge per (producer, consumer, tensor); an edge between devices is
  // drawn bold and labelled with the bytes it carries.
  for (size_t op = 0; op < problem.num_ops(); ++op) {
    const OpId from = static_cast<OpId>(op);
    for (const uint32_t t : problem.outputs(from)) {
      for (const uint32_t to : problem.consumers(t)) {
        out << "  n" << op << " -> n" << to;
        if (device_of(op) != device_of(to)) {
          out << R"( [penwidth=2, color="#CC3311", label=")"
              << DotEscape(HumanBytes(problem.tensors[t].bytes)) << "\"]";
        }
        out << ";\n";
      }
    }
  }
  out << "}\n";
}

}  // namespace tessera::placer
