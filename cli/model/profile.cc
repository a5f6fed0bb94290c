// `tessera profile`: what each operator of a model costs on one device, its
// peak memory, its time per step, and whether it fits.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/model/profile.h"
#include "cli/model_loading.h"
#include "cli/output.h"
#include "common/strings.h"
#include "estimator/calibration.h"
#include "estimator/estimator.h"
#include "placer/core/cluster.h"
#include "placer/core/problem.h"
#include "placer/maxload/cost_graph.h"

namespace tessera::cli {
namespace {

using estimator::Profile;
using graph::Model;

// The fields the parsers' errors name (graph::LoadOptions,
// estimator::ProfileOptions and its RuntimeOptions), and their flags
// (WithFlagNames).
constexpr FieldFlag kProfileFlags[] = {{"float_type", "--dtype"},
                                       {"optimizer", "--optimizer"},
                                       {"runtime", "--runtime"},
                                       {"amp", "--amp"},
                                       {"attention", "--attention"}};

std::string Giga(int64_t n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f G", static_cast<double>(n) / 1e9);
  return buf;
}

std::string NodeName(const graph::OpGraph& g, graph::NodeId n) {
  const auto v = g.node(n);
  return v.name.empty() ? "#" + std::to_string(n) : std::string(v.name);
}

int64_t BatchOf(const Model& m, const ProfileArgs& args) {
  if (args.batch) return *args.batch;
  const graph::OpGraph& g = *m.graph;
  if (g.inputs().empty()) return 1;
  const auto dims = g.tensor(g.inputs()[0]).dims;
  return dims && !dims->empty() && (*dims)[0] > 0 ? (*dims)[0] : 1;
}

void PrintJson(const Model& m, const Profile& p, const ProfileArgs& args) {
  const graph::OpGraph& g = *m.graph;
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();
  for (const auto& op : p.ops) {
    const auto& c = op.cost;
    ops.push_back({{"name", NodeName(g, op.node)},
                   {"op_type", std::string(g.node(op.node).op_type)},
                   {"op_class", std::string(OpClassName(c.op_class))},
                   {"macs", c.macs},
                   {"flops", c.flops},
                   {"bytes_read", c.bytes_read},
                   {"bytes_written", c.bytes_written},
                   {"weight_bytes", c.weight_bytes},
                   {"output_bytes", c.output_bytes},
                   {"workspace_bytes", c.workspace_bytes},
                   {"time_ms", op.seconds * 1e3},
                   {"exact", c.exact},
                   {"note", c.note}});
  }
  const auto& mem = p.memory;
  nlohmann::ordered_json j = {
      {"device", args.device},
      {"batch", BatchOf(m, args)},
      {"mode", args.train ? "training" : "inference"},
      {"totals",
       {{"macs", p.macs},
        {"flops", p.flops},
        {"weight_bytes", mem.weights},
        {"peak_memory_bytes", mem.total()},
        {"reserved_peak_bytes",
         p.runtime ? p.runtime->reserved_peak_bytes : mem.total()},
        {"reserve_bytes", p.reserve_bytes()},
        {"time_ms", p.seconds * 1e3},
        {"fits", p.fits}}},
      {"memory",
       {{"weights", mem.weights},
        {"gradients", mem.gradients},
        {"optimizer_state", mem.optimizer_state},
        {"activations", mem.activations},
        {"workspace", mem.workspace},
        {"peak_at", mem.peak_at == graph::kNoNode ? std::string()
                                                  : NodeName(g, mem.peak_at)},
        {"headroom", p.headroom_bytes}}},
      {"inexact_ops", p.inexact_ops},
      {"ops", ops}};
  if (p.runtime) {
    const auto& r = *p.runtime;
    j["runtime"] = {{"name", args.runtime},
                    {"amp", args.amp.empty() ? "none" : args.amp},
                    {"tf32", args.tf32},
                    {"step_ms", r.step_s * 1e3},
                    {"gpu_busy_ms", r.gpu_busy_s * 1e3},
                    {"host_ms", r.host_s * 1e3},
                    {"gpu_busy_fraction", r.gpu_busy_fraction()},
                    {"forward_gpu_ms", r.forward_s * 1e3},
                    {"backward_gpu_ms", r.backward_s * 1e3},
                    {"optimizer_gpu_ms", r.optimizer_s * 1e3},
                    {"dispatched_ops", r.dispatched_ops},
                    {"kernels", r.kernels},
                    {"live_peak_bytes", r.live_peak_bytes},
                    {"reserved_peak_bytes", r.reserved_peak_bytes},
                    {"saved_activations_bytes", r.saved_activations}};
  }
  std::cout << j.dump(2, ' ', false,
                      nlohmann::ordered_json::error_handler_t::replace)
            << "\n";
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (const char c : s)
    out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

void PrintCsv(const Model& m, const Profile& p) {
  const graph::OpGraph& g = *m.graph;
  std::cout << "name,op_type,op_class,macs,flops,bytes_read,bytes_written,"
               "weight_bytes,output_bytes,workspace_bytes,time_ms,exact,note\n";
  for (const auto& op : p.ops) {
    const auto& c = op.cost;
    std::cout << CsvField(NodeName(g, op.node)) << ","
              << g.node(op.node).op_type << "," << OpClassName(c.op_class)
              << "," << c.macs << "," << c.flops << "," << c.bytes_read << ","
              << c.bytes_written << "," << c.weight_bytes << ","
              << c.output_bytes << "," << c.workspace_bytes << ","
              << op.seconds * 1e3 << "," << (c.exact ? 1 : 0) << ","
              << CsvField(c.note) << "\n";
  }
}

void PrintOps(const Model& m, const Profile& p, int top) {
  const graph::OpGraph& g = *m.graph;
  std::vector<const estimator::OpProfile*> order;
  for (const auto& op : p.ops) order.push_back(&op);
  std::stable_sort(order.begin(), order.end(),
                   [](auto* a, auto* b) { return a->seconds > b->seconds; });
  const size_t shown = std::min(order.size(), static_cast<size_t>(top));
  std::cout << "operators (top " << shown << " of " << order.size()
            << " by time)\n";
  TextTable t({"operator", "type", "MACs", "FLOPs", "read", "written",
               "time ms", "share"},
              {false, false, true, true, true, true, true, true});
  for (size_t i = 0; i < shown; ++i) {
    const auto& op = *order[i];
    std::string name = NodeName(g, op.node);
    if (!op.cost.exact) name += " *";
    t.AddRow({name, std::string(g.node(op.node).op_type), Giga(op.cost.macs),
              Giga(op.cost.flops), HumanBytes(op.cost.bytes_read),
              HumanBytes(op.cost.bytes_written), FormatMs(op.seconds),
              Percent(op.seconds, p.seconds)});
  }
  std::cout << t.Render();
}

void PrintClasses(const Profile& p) {
  std::cout << "\nby operator class\n";
  TextTable t({"class", "ops", "MACs", "FLOPs", "bytes", "time ms", "share"},
              {false, true, true, true, true, true, true});
  for (size_t c = 0; c < p.classes.size(); ++c) {
    const auto& ct = p.classes[c];
    if (ct.ops == 0) continue;
    t.AddRow({std::string(
                  estimator::OpClassName(static_cast<estimator::OpClass>(c))),
              std::to_string(ct.ops), Giga(ct.macs), Giga(ct.flops),
              HumanBytes(ct.bytes), FormatMs(ct.seconds),
              Percent(ct.seconds, p.seconds)});
  }
  std::cout << t.Render();
}

void PrintTotals(const Model& m, const Profile& p,
                 const estimator::DeviceSpec& d, const ProfileArgs& args) {
  const auto& mem = p.memory;
  std::cout << "\ntotals\n";
  TextTable t({"", ""});
  t.AddRow({"MACs", Giga(p.macs) + " (forward)"});
  t.AddRow(
      {"FLOPs", Giga(p.flops) + (args.train ? " (forward + backward)" : "")});
  t.AddRow({"weights", HumanBytes(mem.weights) + ", " +
                           WithThousands(m.weights.elements) + " elements"});
  std::string need =
      HumanBytes(mem.total()) + " = weights " + HumanBytes(mem.weights);
  if (args.train) {
    need += " + gradients " + HumanBytes(mem.gradients) + " + optimizer " +
            HumanBytes(mem.optimizer_state) + " + activations kept " +
            HumanBytes(mem.activations);
  } else {
    need += " + live activations " + HumanBytes(mem.activations);
  }
  need += " + workspace " + HumanBytes(mem.workspace);
  t.AddRow({"memory", need});
  if (mem.peak_at != graph::kNoNode) {
    t.AddRow({"peak at", graph::DescribeNode(*m.graph, mem.peak_at)});
  }
  if (p.runtime) {
    const auto& r = *p.runtime;
    t.AddRow({"allocator", "live peak " + HumanBytes(r.live_peak_bytes) +
                               ", reserved peak " +
                               HumanBytes(r.reserved_peak_bytes) + " (" +
                               args.runtime + "'s caching allocator)"});
    t.AddRow({"GPU busy", FormatMs(r.gpu_busy_s) + " ms of the step (" +
                              Percent(r.gpu_busy_s, r.step_s) + "); host " +
                              FormatMs(r.host_s) + " ms, " +
                              std::to_string(r.dispatched_ops) + " ops, " +
                              std::to_string(r.kernels) + " kernels"});
  }
  t.AddRow({"headroom", HumanBytes(p.headroom_bytes) +
                            " (CUDA context + allocator fragmentation)"});
  t.AddRow({"device", d.display_name + ", " + HumanBytes(d.memory_bytes) +
                          ": " + (p.fits ? "fits" : "DOES NOT FIT") + " (" +
                          Percent(static_cast<double>(p.reserve_bytes()),
                                  static_cast<double>(d.memory_bytes)) +
                          " used)"});
  t.AddRow(
      {"time/step",
       FormatMs(p.seconds) + " ms" +
           (args.train ? " (optimizer " + FormatMs(p.optimizer_seconds) + " ms)"
                       : "")});
  const std::string r = t.Render();
  std::cout << r.substr(r.find('\n') + 1);
  if (p.inexact_ops > 0) {
    std::cout << "\n* " << p.inexact_ops
              << " operators are costed with a fallback or an unknown "
                 "(--json gives each one's note)\n";
  }
}

// --calibration holds every this-many-th matched operator out of the fit to
// report its error honestly (a quarter of the operators).
constexpr int kCalibrationHoldout = 4;

// --calibration: fits options->time_model and device->launch_overhead_s to
// this model's measured operator times; prints the errors before and after.
Status Calibrate(const Model& m, const ProfileArgs& args,
                 estimator::DeviceSpec* device,
                 estimator::ProfileOptions* options) {
  auto measured = estimator::ReadMeasurements(args.calibration);
  if (!measured) return measured.error().WithContext("--calibration");
  const estimator::CalibrationSet all{args.model, &m, std::move(*measured)};
  const auto [train, held] = estimator::SplitEveryNth(all, kCalibrationHoldout);
  auto r = estimator::Calibrate({train}, {held}, *device, options->time_model);
  if (!r) return r.error().WithContext("--calibration " + args.calibration);
  options->time_model = r->fitted;
  device->launch_overhead_s = r->overhead_s;
  const size_t matched = train.measurements.size() + held.measurements.size();
  char line[256];
  std::snprintf(line, sizeof(line),
                "calibration: %zu ops matched, MAPE before %.1f%% after %.1f%% "
                "(held-out ops: before %.1f%% after %.1f%%)",
                matched, r->mape_before, r->mape_after, r->heldout_mape_before,
                r->heldout_mape_after);
  // Keep --json and --csv output machine-readable.
  (args.json || args.csv ? std::cerr : std::cout) << line << "\n";
  if (const size_t missed = all.measurements.size() - matched; missed > 0) {
    Warn(args.calibration + ": " + std::to_string(missed) +
         " measured operators name no node of " + args.model);
  }
  return {};
}

// --cost-graph: the model's cost graph on --cluster (or the built-in
// default), times from the estimator as `spec` and `options` have them
// (the fitted time model and launch overhead of --calibration apply to
// the cluster's devices of --device's kind).
Status WriteCostGraph(const Model& m, const ProfileArgs& args,
                      const estimator::DeviceCatalog& catalog,
                      const estimator::DeviceSpec& spec,
                      const estimator::ProfileOptions& options) {
  placer::ClusterOptions cluster_options;
  cluster_options.fragmentation = options.fragmentation;
  Result<placer::Cluster> cluster =
      args.cluster.empty()
          ? placer::DefaultCluster(catalog, cluster_options)
          : placer::LoadCluster(args.cluster, catalog, cluster_options);
  if (!cluster) return cluster.error();
  for (placer::ClusterDevice& d : cluster->devices) {
    if (d.spec.name == spec.name) d.spec = spec;
  }
  placer::ProblemOptions problem_options;
  problem_options.training = options.training;
  problem_options.optimizer = options.optimizer;
  problem_options.time_model = options.time_model;
  auto problem = placer::BuildProblem(m, *cluster, problem_options);
  if (!problem) return problem.error().WithContext(args.model);
  auto graph = placer::CostGraphFromProblem(*problem, *cluster, args.model);
  if (!graph) return graph.error().WithContext("--cost-graph");
  std::ofstream f(args.cost_graph);
  f << placer::CostGraphJson(graph->problem, graph->extras)
           .dump(2, ' ', false,
                 nlohmann::ordered_json::error_handler_t::replace)
    << "\n";
  if (!f) return BadInput("--cost-graph " + args.cost_graph + ": cannot write");
  std::string kinds;
  for (const placer::MaxLoadKind& k : graph->problem.kinds) {
    kinds +=
        (kinds.empty() ? "" : ", ") + std::to_string(k.count) + " " + k.name;
  }
  // Keep --json and --csv output machine-readable.
  (args.json || args.csv ? std::cerr : std::cout)
      << "cost graph: " << args.cost_graph << " ("
      << graph->problem.nodes.size() << " operators, "
      << graph->problem.edges.size() << " edges; " << kinds << " from "
      << cluster->source << ")\n";
  return {};
}

}  // namespace

int RunProfile(const ProfileArgs& args) {
  auto catalog = estimator::DeviceCatalog::BuiltInWith(args.devices_yaml);
  if (!catalog) return ReportError(catalog.error());
  auto device = catalog->Get(args.device);
  if (!device) return ReportError(device.error().WithContext("--device"));
  graph::LoadOptions load;
  if (!args.dtype.empty()) {
    auto dtype = graph::ParseFloatType(args.dtype);
    if (!dtype) return ReportError(WithFlagNames(dtype.error(), kProfileFlags));
    load.float_type = *dtype;
  }
  estimator::ProfileOptions options;
  options.training = args.train;
  auto optimizer = estimator::ParseOptimizer(args.optimizer);
  if (!optimizer) {
    return ReportError(WithFlagNames(optimizer.error(), kProfileFlags));
  }
  options.optimizer = *optimizer;
  if (args.headroom) {
    if (*args.headroom < 0 || *args.headroom > 1) {
      return ReportError(BadInput("--headroom " +
                                  std::to_string(*args.headroom) +
                                  ": expected a fraction in [0, 1]"));
    }
    options.fragmentation = *args.headroom;
  }
  auto runtime = estimator::ParseRuntime(args.runtime);
  if (!runtime) {
    return ReportError(WithFlagNames(runtime.error(), kProfileFlags));
  }
  options.runtime.runtime = *runtime;
  if (!args.amp.empty()) {
    auto amp = estimator::ParseAmp(args.amp);
    if (!amp) return ReportError(WithFlagNames(amp.error(), kProfileFlags));
    options.runtime.amp = *amp;
  }
  auto attention = estimator::ParseAttention(args.attention);
  if (!attention) {
    return ReportError(WithFlagNames(attention.error(), kProfileFlags));
  }
  options.runtime.attention = *attention;
  options.runtime.tf32 = args.tf32;
  options.runtime.costs = estimator::DefaultCosts(*runtime);
  if (*runtime == estimator::Runtime::kRoofline &&
      (!args.amp.empty() || args.tf32)) {
    return ReportError(BadInput(
        "--amp and --tf32 describe how a runtime computes: add --runtime "
        "pytorch (or onnxruntime)"));
  }
  if (!args.amp.empty() && !args.dtype.empty()) {
    return ReportError(BadInput(
        "--amp keeps weights in fp32 and --dtype re-types them: give one"));
  }
  if (*runtime != estimator::Runtime::kRoofline && !args.calibration.empty()) {
    return ReportError(BadInput(
        "--calibration fits the operator roofline (--runtime none); the "
        "runtimes use the device's efficiency surface (tessera calibrate)"));
  }
  if (!args.cluster.empty() && args.cost_graph.empty()) {
    return ReportError(BadInput(
        "--cluster gives the devices of --cost-graph; the profile itself is "
        "for --device"));
  }
  if (!args.cost_graph.empty() && *runtime != estimator::Runtime::kRoofline) {
    return ReportError(BadInput(
        "--cost-graph writes the per-operator times placement uses (the "
        "operator roofline): leave out --runtime"));
  }
  auto model = LoadModelForCommand(args.model, args.inputs, args.batch, load,
                                   "profiling");
  if (!model) return ReportError(model.error());
  estimator::DeviceSpec spec = **device;
  if (!args.calibration.empty()) {
    if (Status s = Calibrate(*model, args, &spec, &options); !s) {
      return ReportError(s.error());
    }
  }
  auto profile = estimator::ProfileModel(*model, spec, options);
  if (!profile) return ReportError(profile.error().WithContext(args.model));
  if (!args.cost_graph.empty()) {
    if (Status s = WriteCostGraph(*model, args, *catalog, spec, options); !s) {
      return ReportError(s.error());
    }
  }
  if (args.json) {
    PrintJson(*model, *profile, args);
  } else if (args.csv) {
    PrintCsv(*model, *profile);
  } else {
    std::cout << args.model << " on " << args.device << " ("
              << (*device)->display_name << "), batch " << BatchOf(*model, args)
              << ", " << (args.train ? "training" : "inference") << ", "
              << (args.dtype.empty() ? "dtypes as exported" : args.dtype)
              << (args.runtime == "none" ? std::string()
                                         : ", runtime " + args.runtime)
              << (args.amp.empty() ? std::string() : ", amp " + args.amp)
              << "\n\n";
    PrintOps(*model, *profile, args.top);
    PrintClasses(*profile);
    PrintTotals(*model, *profile, spec, args);
  }
  return 0;
}

}  // namespace tessera::cli
