// `tessera plan`: where each operator of a model runs on a cluster's residual
// capacity, the simulated step, and the files that describe it (plan.json,
// a Chrome trace timeline, a DOT picture). The placer does the work; this
// file parses nothing but the flags' values and prints.
#include "cli/plan/plan.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/model_loading.h"
#include "cli/output.h"
#include "common/strings.h"
#include "estimator/estimator.h"
#include "placer/placer.h"

namespace tessera::cli {
namespace {

using placer::Algorithm;
using placer::Cluster;
using placer::Plan;
using placer::Problem;

// The fields the parsers' errors name (placer::ProblemOptions,
// graph::LoadOptions), and their flags (WithFlagNames).
constexpr FieldFlag kPlanFlags[] = {{"float_type", "--float-type"},
                                    {"optimizer", "--optimizer"},
                                    {"runtime", "--runtime"},
                                    {"amp", "--amp"}};

// The links the summary lists, busiest first.
constexpr size_t kLinksShown = 5;
// Characters of an error message the --algo all table shows.
constexpr size_t kNoteWidth = 100;

std::string Ratio(const Plan& plan) {
  return plan.lower_bound_s > 0 ? Fixed(plan.sim.step_s / plan.lower_bound_s, 2)
                                : std::string("-");
}

std::string ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kBadInput:
      return "bad_input";
    case ErrorCode::kInfeasible:
      return "infeasible";
    case ErrorCode::kInternal:
      return "internal";
    case ErrorCode::kUnavailable:
      return "unavailable";
    case ErrorCode::kRateLimited:
      return "rate_limited";
  }
  return "internal";
}

// A failure's message in the --algo all table; --json has it whole.
std::string Abbreviate(const std::string& message) {
  return message.size() <= kNoteWidth ? message
                                      : message.substr(0, kNoteWidth) + "...";
}

std::string Join(const std::vector<std::string>& parts, const char* sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// The batch the model was bound to: --batch, else the leading dimension of
// its first input (1 when it has none).
int64_t BatchOf(const graph::Model& m, const PlanArgs& args) {
  if (args.batch) return *args.batch;
  const graph::OpGraph& g = *m.graph;
  if (g.inputs().empty()) return 1;
  const auto dims = g.tensor(g.inputs()[0]).dims;
  return dims && !dims->empty() && (*dims)[0] > 0 ? (*dims)[0] : 1;
}

Result<placer::PlaceOptions> PlaceOptionsFrom(const PlanArgs& args) {
  placer::PlaceOptions o;
  if (args.microbatches < 1) {
    return BadInput("--microbatches " + std::to_string(args.microbatches) +
                    ": expected at least 1");
  }
  o.microbatches = args.microbatches;
  o.coplace = args.coplace;
  o.fuse = !args.no_fuse;
  if (args.ilp_time_limit_s) {
    if (!(*args.ilp_time_limit_s > 0)) {
      return BadInput("--ilp-time-limit " +
                      std::to_string(*args.ilp_time_limit_s) +
                      ": expected a positive number of seconds");
    }
    o.ilp_time_limit_s = *args.ilp_time_limit_s;
  }
  return o;
}

// The algorithms --algo names: one, or every concrete one for "all".
Result<std::vector<Algorithm>> AlgorithmsFrom(const PlanArgs& args) {
  if (args.algo == "all") return placer::ConcreteAlgorithms();
  auto a = placer::ParseAlgorithm(args.algo);
  if (!a) return a.error().WithContext("--algo");
  return std::vector<Algorithm>{*a};
}

Result<Cluster> ClusterFrom(const PlanArgs& args,
                            const estimator::DeviceCatalog& catalog) {
  placer::ClusterOptions options;
  if (args.headroom) {
    if (!(*args.headroom >= 0 && *args.headroom < 1)) {
      return BadInput("--headroom " + std::to_string(*args.headroom) +
                      ": expected a fraction in [0, 1)");
    }
    options.fragmentation = *args.headroom;
  }
  if (args.cluster.empty()) return placer::DefaultCluster(catalog, options);
  return placer::LoadCluster(args.cluster, catalog, options);
}

// Fails early, before any work, when `path` cannot be a file we write:
// its folder is missing or it is a folder itself. Other failures show when
// it is written.
Status CheckWritable(const std::string& flag, const std::string& path) {
  if (path.empty()) return {};
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path p(path);
  const fs::path dir =
      p.parent_path().empty() ? fs::path(".") : p.parent_path();
  if (!fs::is_directory(dir, ec)) {
    return BadInput(flag + " " + path + ": cannot write (no folder " +
                    dir.string() + ")");
  }
  if (fs::is_directory(p, ec)) {
    return BadInput(flag + " " + path + ": cannot write (a folder)");
  }
  return {};
}

// Everything a plan is computed from.
struct Setup {
  graph::Model model;
  Cluster cluster;
  Problem problem;
  placer::PlaceOptions options;
  std::vector<Algorithm> algorithms;
  placer::PlanContext context;
  std::string optimizer;  // its canonical name
};

Result<Setup> Prepare(const PlanArgs& args) {
  auto options = PlaceOptionsFrom(args);
  if (!options) return options.error();
  auto algorithms = AlgorithmsFrom(args);
  if (!algorithms) return algorithms.error();
  TESSERA_RETURN_IF_ERROR(CheckWritable("-o", args.output));
  TESSERA_RETURN_IF_ERROR(CheckWritable("--timeline", args.timeline));
  TESSERA_RETURN_IF_ERROR(CheckWritable("--dot", args.dot));
  TESSERA_RETURN_IF_ERROR(CheckWritable("--html", args.html));
  placer::ProblemOptions problem_options;
  problem_options.training = args.train;
  auto optimizer = estimator::ParseOptimizer(args.optimizer);
  if (!optimizer) return WithFlagNames(optimizer.error(), kPlanFlags);
  problem_options.optimizer = *optimizer;
  graph::LoadOptions load;
  if (!args.float_type.empty()) {
    auto dtype = graph::ParseFloatType(args.float_type);
    if (!dtype) return WithFlagNames(dtype.error(), kPlanFlags);
    load.float_type = *dtype;
  }
  auto catalog = estimator::DeviceCatalog::BuiltInWith(args.devices_yaml);
  if (!catalog) return catalog.error();
  auto cluster = ClusterFrom(args, *catalog);
  if (!cluster) return cluster.error();
  if (args.runtime.empty()) {
    problem_options.runtime = placer::DefaultRuntime(*cluster);
  } else {
    auto runtime = estimator::ParseRuntime(args.runtime);
    if (!runtime) return WithFlagNames(runtime.error(), kPlanFlags);
    problem_options.runtime = *runtime;
  }
  if (!args.amp.empty()) {
    auto amp = estimator::ParseAmp(args.amp);
    if (!amp) return WithFlagNames(amp.error(), kPlanFlags);
    if (*amp != estimator::Amp::kNone &&
        problem_options.runtime == estimator::Runtime::kRoofline) {
      return BadInput(
          "--amp describes how a runtime computes: add --runtime pytorch (or "
          "onnxruntime)");
    }
    if (*amp != estimator::Amp::kNone && !args.float_type.empty()) {
      return BadInput(
          "--amp keeps weights in fp32 and --float-type re-types them: give "
          "one");
    }
    problem_options.amp = *amp;
  }
  if (args.train &&
      problem_options.runtime == estimator::Runtime::kOnnxRuntime) {
    return BadInput(
        "--runtime onnxruntime runs inference: drop --train or use "
        "--runtime pytorch");
  }
  auto model = LoadModelForCommand(args.model, args.inputs, args.batch, load,
                                   "planning");
  if (!model) return model.error();
  auto problem = placer::BuildProblem(*model, *cluster, problem_options);
  if (!problem) return problem.error().WithContext(args.model);
  const int64_t batch = BatchOf(*model, args);
  return Setup{std::move(model).value(),
               std::move(cluster).value(),
               std::move(problem).value(),
               *options,
               std::move(algorithms).value(),
               {args.model, batch,
                std::string(estimator::RuntimeName(problem_options.runtime)),
                std::string(estimator::AmpName(problem_options.amp))},
               std::string(estimator::OptimizerName(*optimizer))};
}

// Writes `path` with `write`; kBadInput naming `flag` and the path when it
// cannot be written.
Status WriteFile(const std::string& flag, const std::string& path,
                 const std::function<void(std::ostream&)>& write) {
  std::ofstream out(path);
  if (!out) {
    return BadInput(flag + " " + path + ": cannot write (" +
                    std::strerror(errno) + ")");
  }
  write(out);
  out.close();
  if (!out) return BadInput(flag + " " + path + ": write failed");
  std::cerr << "tessera: wrote " << path << "\n";
  return {};
}

// `report_note` is a line under the HTML report's title.
Status WriteOutputs(const Setup& s, const Plan& plan, const PlanArgs& args,
                    const std::string& report_note = "") {
  if (!args.output.empty()) {
    const auto j = placer::PlanJson(s.problem, s.cluster, plan, s.context);
    TESSERA_RETURN_IF_ERROR(WriteFile("-o", args.output, [&](auto& out) {
      out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
          << "\n";
    }));
  }
  if (!args.timeline.empty()) {
    const auto j = placer::TimelineJson(s.problem, s.cluster, plan);
    TESSERA_RETURN_IF_ERROR(
        WriteFile("--timeline", args.timeline, [&](auto& out) {
          out << j.dump(-1, ' ', false,
                        nlohmann::json::error_handler_t::replace)
              << "\n";
        }));
  }
  if (!args.dot.empty()) {
    TESSERA_RETURN_IF_ERROR(WriteFile("--dot", args.dot, [&](auto& out) {
      placer::WritePlanDot(s.problem, s.cluster, plan, out);
    }));
  }
  if (!args.html.empty()) {
    TESSERA_RETURN_IF_ERROR(WriteFile("--html", args.html, [&](auto& out) {
      placer::WritePlanHtml(s.problem, s.cluster, plan, s.context,
                            {report_note}, out);
    }));
  }
  return {};
}

std::vector<int> OpsPerDevice(const Setup& s, const Plan& plan) {
  std::vector<int> ops(s.cluster.size(), 0);
  for (const uint16_t d : plan.placement.device) {
    if (d < ops.size()) ++ops[d];
  }
  return ops;
}

std::string ClusterText(const Cluster& c) {
  return c.source + " (" + std::to_string(c.size()) +
         (c.size() == 1 ? " device)" : " devices)");
}

void PrintHeader(const Setup& s, const PlanArgs& args,
                 const std::string& algorithm) {
  std::cout << args.model << ", batch " << s.context.batch << ", "
            << (args.train ? "training (" + s.optimizer + ")"
                           : std::string("inference"))
            << (args.float_type.empty() ? "" : ", " + args.float_type)
            << (s.context.amp == "none" ? ""
                                        : ", " + s.context.amp + " autocast")
            << ", priced as "
            << (s.context.runtime == "none" ? std::string("the roofline")
                                            : s.context.runtime)
            << ", " << algorithm << " on " << ClusterText(s.cluster) << "\n\n";
}

void PrintDevices(const Setup& s, const Plan& plan) {
  const std::vector<int> ops = OpsPerDevice(s, plan);
  TextTable t({"device", "kind", "share", "ops", "memory peak / usable", "used",
               "busy ms", "busy"},
              {false, false, true, true, true, true, true, true});
  for (size_t d = 0; d < s.cluster.size(); ++d) {
    const placer::ClusterDevice& dev = s.cluster.devices[d];
    const placer::DeviceStats& stats = plan.sim.devices[d];
    t.AddRow(
        {dev.id, dev.spec.name, Fixed(dev.compute_share, 2),
         std::to_string(ops[d]),
         HumanBytes(stats.peak_bytes) + " / " + HumanBytes(dev.memory_usable),
         Percent(static_cast<double>(stats.peak_bytes),
                 static_cast<double>(dev.memory_usable)),
         FormatMs(stats.busy_s), Percent(stats.busy_s, plan.sim.step_s)});
  }
  std::cout << t.Render();
}

void PrintLinks(const Setup& s, const Plan& plan) {
  std::vector<placer::LinkStats> links = plan.sim.links;
  std::stable_sort(
      links.begin(), links.end(),
      [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
  TextTable t({"link", "kind", "transfers", "bytes", "busy ms"},
              {false, false, true, true, true});
  for (size_t i = 0; i < links.size() && i < kLinksShown; ++i) {
    const placer::LinkStats& l = links[i];
    t.AddRow(
        {s.cluster.devices[l.from].id + " -> " + s.cluster.devices[l.to].id,
         std::string(placer::LinkKindName(s.cluster.link(l.from, l.to).kind)),
         WithThousands(l.transfers), HumanBytes(l.bytes), FormatMs(l.busy_s)});
  }
  std::cout << t.Render();
  if (links.size() > kLinksShown) {
    std::cout << "  ... and " << links.size() - kLinksShown
              << " more links (--json lists all)\n";
  }
}

void PrintSummary(const Setup& s, const Plan& plan) {
  const placer::SimResult& sim = plan.sim;
  int64_t transfers = 0;
  for (const auto& l : sim.links) transfers += l.transfers;
  TextTable t({"", ""});
  t.AddRow({"step time", FormatMs(sim.step_s) + " ms" +
                             (plan.microbatches > 1
                                  ? " (" + std::to_string(plan.microbatches) +
                                        " microbatches)"
                                  : std::string())});
  t.AddRow({"lower bound", FormatMs(plan.lower_bound_s) +
                               " ms (step / bound = " + Ratio(plan) + ")"});
  t.AddRow({"transfers", WithThousands(transfers) + ", " +
                             HumanBytes(sim.transfer_bytes) + " over " +
                             std::to_string(sim.links.size()) +
                             (sim.links.size() == 1 ? " link" : " links")});
  t.AddRow({"placement", FormatMs(plan.placement_s) + " ms"});
  if (plan.ilp_objective_s || plan.ilp_gap) {
    std::string ilp;
    if (plan.ilp_objective_s) {
      ilp = "objective " + FormatMs(*plan.ilp_objective_s) + " ms";
    }
    if (plan.ilp_gap) {
      ilp += (ilp.empty() ? "" : ", ") + std::string("gap ") +
             Percent(*plan.ilp_gap, 1.0);
    }
    if (plan.ilp_status == placer::SolveStatus::kOptimal) ilp += ", optimal";
    t.AddRow({"ilp", ilp});
  }
  for (size_t i = 0; i < plan.notes.size(); ++i) {
    t.AddRow({i == 0 ? "notes" : "", plan.notes[i]});
  }
  // The header row of `t` is empty; skip it.
  const std::string r = t.Render();
  std::cout << "\n" << r.substr(r.find('\n') + 1);
  if (!sim.links.empty()) {
    std::cout << "\nlinks (most bytes first)\n";
    PrintLinks(s, plan);
  }
  if (!sim.fits) {
    Warn("the simulator shows a device over its memory in this plan");
  }
}

// The plan --algo names, with the timeline recorded when one is asked for.
Result<Plan> PlaceOne(const Setup& s, Algorithm algorithm, const PlanArgs& args,
                      Progress& progress) {
  progress.Stage("placing (" + std::string(placer::AlgorithmName(algorithm)) +
                 ")");
  auto plan = placer::Place(s.problem, s.cluster, algorithm, s.options);
  if (!plan) return plan.error();
  const bool timeline = !args.timeline.empty() || !args.html.empty();
  if (timeline && plan->sim.op_records.empty()) {
    progress.Stage("simulating the timeline");
    placer::SimOptions sim;
    sim.microbatches = plan->microbatches;
    sim.record_ops = true;
    plan->sim = placer::Simulate(s.problem, s.cluster, plan->placement, sim);
  }
  return plan;
}

int RunOne(const Setup& s, const PlanArgs& args) {
  Progress progress("planning " + args.model);
  auto plan = PlaceOne(s, s.algorithms.front(), args, progress);
  progress.Done();
  if (!plan) return ReportError(plan.error().WithContext(args.model));
  if (Status st = WriteOutputs(s, *plan, args); !st) {
    return ReportError(st.error());
  }
  if (args.json) {
    std::cout << placer::PlanJson(s.problem, s.cluster, *plan, s.context)
                     .dump(2, ' ', false,
                           nlohmann::json::error_handler_t::replace)
              << "\n";
    return 0;
  }
  std::string algorithm(placer::AlgorithmName(plan->algorithm));
  if (s.algorithms.front() == Algorithm::kAuto &&
      plan->algorithm != Algorithm::kAuto) {
    algorithm += " (chosen by auto)";
  }
  PrintHeader(s, args, algorithm);
  PrintDevices(s, *plan);
  PrintSummary(s, *plan);
  return 0;
}

void PrintComparison(const Setup& s, const PlanArgs& args,
                     const std::vector<Result<Plan>>& plans, int best) {
  PrintHeader(s, args, "every algorithm");
  TextTable t({"algorithm", "step ms", "/ bound", "devices", "transfers",
               "moved", "peak memory", "placement ms", "note"},
              {false, true, true, true, true, true, true, true, false});
  for (size_t i = 0; i < plans.size(); ++i) {
    const std::string name(placer::AlgorithmName(s.algorithms[i]));
    if (!plans[i]) {
      const Error& e = plans[i].error();
      t.AddRow({name, e.code == ErrorCode::kInfeasible ? "infeasible" : "error",
                "", "", "", "", "", "", Abbreviate(e.message)});
      continue;
    }
    const Plan& p = *plans[i];
    const std::vector<int> ops = OpsPerDevice(s, p);
    const auto used =
        std::count_if(ops.begin(), ops.end(), [](int n) { return n > 0; });
    int64_t transfers = 0;
    for (const auto& l : p.sim.links) transfers += l.transfers;
    int64_t peak = 0;
    for (const auto& d : p.sim.devices) peak = std::max(peak, d.peak_bytes);
    t.AddRow({name + (static_cast<int>(i) == best ? " *" : ""),
              FormatMs(p.sim.step_s), Ratio(p),
              std::to_string(used) + "/" + std::to_string(s.cluster.size()),
              WithThousands(transfers), HumanBytes(p.sim.transfer_bytes),
              HumanBytes(peak), FormatMs(p.placement_s), Join(p.notes, "; ")});
  }
  std::cout << t.Render();
  if (best >= 0) {
    const Plan& p = *plans[best];
    std::cout << "\n  * shortest step: "
              << placer::AlgorithmName(s.algorithms[best]) << ", "
              << FormatMs(p.sim.step_s) << " ms; lower bound "
              << FormatMs(p.lower_bound_s) << " ms\n";
  }
}

int RunAll(const Setup& s, const PlanArgs& args) {
  Progress progress("planning " + args.model);
  std::vector<Result<Plan>> plans;
  int best = -1;
  for (size_t i = 0; i < s.algorithms.size(); ++i) {
    plans.push_back(PlaceOne(s, s.algorithms[i], args, progress));
    if (plans.back() &&
        (best < 0 || plans.back()->sim.step_s < plans[best]->sim.step_s)) {
      best = static_cast<int>(i);
    }
  }
  progress.Done();
  if (best >= 0) {
    const std::string note =
        "--algo all: the shortest step of " + std::to_string(plans.size()) +
        " algorithms (" +
        std::string(placer::AlgorithmName(s.algorithms[best])) + ")";
    if (Status st = WriteOutputs(s, *plans[best], args, note); !st) {
      return ReportError(st.error());
    }
  }
  if (args.json) {
    nlohmann::json all = nlohmann::json::array();
    for (size_t i = 0; i < plans.size(); ++i) {
      if (plans[i]) {
        all.push_back(
            placer::PlanJson(s.problem, s.cluster, *plans[i], s.context));
      } else {
        all.push_back(
            {{"algorithm", std::string(placer::AlgorithmName(s.algorithms[i]))},
             {"error",
              {{"code", ErrorCodeName(plans[i].error().code)},
               {"message", plans[i].error().message}}}});
      }
    }
    std::cout << all.dump(2, ' ', false,
                          nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    PrintComparison(s, args, plans, best);
  }
  // Nothing placed: the first algorithm's error decides the exit code.
  if (best < 0) {
    return ReportError(plans.empty()
                           ? Internal("no algorithm ran")
                           : plans.front().error().WithContext(args.model));
  }
  return 0;
}

}  // namespace

int RunPlan(const PlanArgs& args) {
  if (!args.cost_graph.empty()) {
    if (!args.html.empty()) {
      return ReportError(
          BadInput("--html needs a model: a --cost-graph plan has no "
                   "simulated step to report"));
    }
    return RunPlanCostGraph(args);
  }
  if (args.model.empty()) {
    return ReportError(
        BadInput("give an ONNX model, or --cost-graph FILE.json"));
  }
  auto setup = Prepare(args);
  if (!setup) return ReportError(setup.error());
  return args.algo == "all" ? RunAll(*setup, args) : RunOne(*setup, args);
}

}  // namespace tessera::cli
