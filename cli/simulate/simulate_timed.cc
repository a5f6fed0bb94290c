// `tessera simulate --mode timed`: the trace's pods arrive at their
// creation_time, wait in a queue policy and leave after their duration;
// one replay per scorer x queue policy. scheduler/timed_replay.h does the
// work; this file prints (docs/simulate_timed.md).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/output.h"
#include "cli/simulate/simulate.h"
#include "cli/simulate/svg_chart.h"
#include "common/strings.h"
#include "estimator/interference.h"
#include "scheduler/policy.h"
#include "scheduler/start_decision.h"
#include "sim/timed_replay.h"

namespace tessera::cli {
namespace {

using scheduler::InterferenceLaw;
using sim::AdmissionComparison;
using sim::DelayStats;
using sim::TimedAdmission;
using sim::TimedRun;

// The timed replay's fields (sim::TimedOptions) its errors name, and their
// flags (WithFlagNames).
constexpr FieldFlag kTimedFlags[] = {{"model_pods_pct", "--model-pods"},
                                     {"law.alpha", "--interference"},
                                     {"sharing", "--sharing"}};

constexpr double kDay = 86400, kHour = 3600;

// The delays of the trace's own scheduler (scheduled_time - creation_time,
// over the pods it scheduled), for reference.
struct TraceDelays {
  int64_t scheduled = 0;
  DelayStats delay_s;
  double span_s = 0;  // last creation - first creation
};

TraceDelays TraceOwnDelays(const std::vector<sim::TracePod>& pods) {
  TraceDelays t;
  std::vector<double> delays;
  double first = 1e300, last = -1e300;
  for (const sim::TracePod& p : pods) {
    first = std::min(first, p.creation_time);
    last = std::max(last, p.creation_time);
    if (p.scheduled_time >= 0)
      delays.push_back(p.scheduled_time - p.creation_time);
  }
  t.scheduled = static_cast<int64_t>(delays.size());
  t.delay_s = sim::SummarizeDelays(std::move(delays));
  t.span_s = pods.empty() ? 0 : last - first;
  return t;
}

// --quotas equal: each of `teams` teams a top-level queue guaranteed an
// equal share of the cluster's GPU milli and memory, no limit, weight 1.
std::vector<scheduler::QueueSpec> EqualQueues(const scheduler::Topology& t,
                                              int teams) {
  std::vector<scheduler::QueueSpec> out;
  if (teams <= 0) return out;
  int64_t milli = 0, memory = 0;
  for (const scheduler::GpuInfo& g : t.gpus) {
    milli += scheduler::kFullGpuMilli;
    memory += g.memory_mib;
  }
  for (int k = 0; k < teams; ++k) {
    scheduler::QueueSpec q;
    q.name = "team" + std::to_string(k);
    q.guaranteed = {milli / teams, memory / teams};
    out.push_back(std::move(q));
  }
  return out;
}

// --quotas gpu-hours: each team a top-level queue guaranteed the cluster's
// GPU milli and memory in proportion to the team's share of the trace's
// GPU-hours (GPUs x milli x (deletion - creation) of its pods), no limit,
// weight 1. What an admin would set from last quarter's use; here it is the
// replayed trace's own (foresight).
std::vector<scheduler::QueueSpec> GpuHourQueues(
    const scheduler::Topology& t, const std::vector<sim::TracePod>& pods,
    int teams, sim::TeamSplit split) {
  std::vector<scheduler::QueueSpec> out = EqualQueues(t, teams);
  if (teams <= 0) return out;
  std::vector<double> use(teams, 0.0);
  double all = 0;
  for (const sim::TracePod& p : pods) {
    const double u = static_cast<double>(p.num_gpu) * p.gpu_milli *
                     std::max(0.0, p.deletion_time - p.creation_time);
    use[sim::TeamOf(p, teams, split)] += u;
    all += u;
  }
  if (!(all > 0)) return out;
  int64_t milli = 0, memory = 0;
  for (const scheduler::QueueSpec& q : out) {
    milli += q.guaranteed.gpu_milli;
    memory += q.guaranteed.gpu_memory_mib;
  }
  for (int k = 0; k < teams; ++k) {
    const double share = use[k] / all;
    out[k].guaranteed = {
        static_cast<int64_t>(static_cast<double>(milli) * share),
        static_cast<int64_t>(static_cast<double>(memory) * share)};
  }
  return out;
}

// A run's label in the queue column: the policy, "+quotas" under the tree
// (equal guarantees), "+quotas(gpu-hours)" under the others.
std::string QueueLabel(const TimedRun& r) {
  if (!r.quotas) return r.queue_policy;
  if (r.quota_guarantees.empty() || r.quota_guarantees == "equal") {
    return r.queue_policy + "+quotas";
  }
  return r.queue_policy + "+quotas(" + r.quota_guarantees + ")";
}

sim::TeamSplit SplitOf(const SimulateArgs& args) {
  return args.team_split == "skewed" ? sim::TeamSplit::kSkewed
                                     : sim::TeamSplit::kHash;
}

// Per team: pods that started, their mean and p95 queueing delay.
struct TeamDelays {
  int64_t started = 0;
  DelayStats delay_s;
};
std::vector<TeamDelays> ByTeam(const std::vector<sim::TracePod>& pods,
                               const TimedRun& r, int teams,
                               sim::TeamSplit split) {
  std::vector<std::vector<double>> delays(teams);
  for (size_t i = 0; i < pods.size() && i < r.pod_delay_s.size(); ++i) {
    if (r.pod_delay_s[i] < 0) continue;
    delays[sim::TeamOf(pods[i], teams, split)].push_back(r.pod_delay_s[i]);
  }
  std::vector<TeamDelays> out(teams);
  for (int k = 0; k < teams; ++k) {
    out[k].started = static_cast<int64_t>(delays[k].size());
    out[k].delay_s = sim::SummarizeDelays(std::move(delays[k]));
  }
  return out;
}

// The model pods' flags: --model-pods, --admission and the law
// (--interference or --sharing). kBadInput naming the flag.
struct ModelPodArgs {
  std::vector<TimedAdmission> admissions;  // empty: no model pods
  InterferenceLaw law;
};

Result<ModelPodArgs> ParseModelPodArgs(const SimulateArgs& args) {
  ModelPodArgs out;
  if (args.model_pods < 0 || args.model_pods > 100) {
    return BadInput(
        "--model-pods: a percentage of the GPU pods in 0..100, "
        "got " +
        std::to_string(args.model_pods));
  }
  if (args.interference && !(*args.interference >= 0)) {
    return BadInput("--interference: must be >= 0");
  }
  if (!args.interference_sweep.empty()) {
    return BadInput(
        "--interference-sweep: models mode only; timed mode takes one "
        "--interference F");
  }
  if (args.sharing) {
    auto sharing = estimator::ParseGpuSharing(*args.sharing);
    if (!sharing) return WithFlagNames(sharing.error(), kTimedFlags);
    if (args.interference) {
      return BadInput(
          "--sharing: applies to the measured co-location slowdown, which "
          "--interference replaces");
    }
    out.law = InterferenceLaw::Measured(*sharing);
  }
  if (args.interference) out.law = InterferenceLaw::Linear(*args.interference);
  const std::string admission = args.admission.value_or("both");
  if (admission == "fixed") {
    out.admissions = {TimedAdmission::kFixed};
  } else if (admission == "tessera") {
    out.admissions = {TimedAdmission::kTessera};
  } else if (admission == "both") {
    out.admissions = {TimedAdmission::kFixed, TimedAdmission::kTessera};
  } else {
    return BadInput("--admission: fixed, tessera or both, got '" + admission +
                    "'");
  }
  if (args.model_pods == 0) {
    if (args.admission) {
      return BadInput(
          "--admission: applies to model pods; none without --model-pods "
          "PCT");
    }
    out.admissions.clear();
  }
  return out;
}

// The fixed and tessera runs of one scorer x queue policy, side by side.
struct Pair {
  const TimedRun* fixed = nullptr;
  const TimedRun* tessera = nullptr;
};
std::vector<Pair> Pairs(const std::vector<TimedRun>& runs) {
  std::vector<Pair> out;
  for (const TimedRun& f : runs) {
    if (f.admission != "fixed") continue;
    for (const TimedRun& t : runs) {
      if (t.admission == "tessera" && t.scorer == f.scorer &&
          t.queue_policy == f.queue_policy) {
        out.push_back({&f, &t});
      }
    }
  }
  return out;
}

// "+12.5%" / "-3.0%" of b against a; "-" when a is 0.
std::string Change(double a, double b) {
  if (!(a > 0)) return "-";
  const double pct = 100 * (b - a) / a;
  return (pct >= 0 ? "+" : "") + Fixed(pct, 1) + "%";
}

nlohmann::json ModelStatsJson(const sim::ModelPodStats& m) {
  return {{"pods", m.pods},
          {"fractional", m.fractional},
          {"finished", m.finished},
          {"mean_jct_s", m.mean_jct_s},
          {"mean_queueing_delay_s", m.mean_delay_s},
          {"mean_slowdown", m.mean_slowdown},
          {"waited", m.waited},
          {"whole_gpu", m.whole}};
}

nlohmann::json DelayJson(const DelayStats& d) {
  return {{"mean", d.mean},
          {"p50", d.p50},
          {"p95", d.p95},
          {"p99", d.p99},
          {"max", d.max}};
}

nlohmann::json TimedJson(const SimulateArgs& args, const TraceInput& in,
                         size_t all_nodes, const TraceDelays& trace,
                         const ModelPodArgs& model,
                         const std::vector<TimedRun>& runs) {
  nlohmann::json results = nlohmann::json::array();
  for (const TimedRun& r : runs) {
    nlohmann::json curve = nlohmann::json::array();
    for (const auto& [t, pct] : r.utilization) curve.push_back({t, pct});
    results.push_back(
        {{"policy", r.scorer},
         {"queue_policy", r.queue_policy},
         {"quotas", r.quotas},
         {"quota_guarantees", r.quotas ? r.quota_guarantees : "none"},
         {"reclaims", r.reclaims},
         {"pods", r.pods},
         {"started", r.started},
         {"never_started", r.never_started()},
         {"unplaceable", r.unplaceable},
         {"still_queued", r.stuck},
         {"preemptions", r.preemptions},
         {"lost_gpu_hours", r.lost_gpu_hours},
         {"queueing_delay_s", DelayJson(r.delay_s)},
         {"makespan_s", r.makespan_s},
         {"utilization_pct",
          {{"mean", r.mean_utilization_pct},
           {"peak", r.peak_utilization_pct},
           {"while_queued", r.queued_utilization_pct}}},
         {"queue_length", {{"mean", r.mean_queue}, {"peak", r.peak_queue}}},
         {"policy_rounds", r.rounds},
         {"seconds", r.seconds},
         {"utilization_over_time", curve}});
    if (args.teams > 0) {
      nlohmann::json teams = nlohmann::json::array();
      const std::vector<TeamDelays> by =
          ByTeam(in.pods, r, args.teams, SplitOf(args));
      for (int k = 0; k < args.teams; ++k) {
        teams.push_back({{"team", "team" + std::to_string(k)},
                         {"started", by[k].started},
                         {"queueing_delay_s", DelayJson(by[k].delay_s)}});
      }
      results.back()["teams"] = std::move(teams);
      results.back()["team_split"] = args.team_split;
    }
    if (!r.admission.empty()) {
      results.back()["admission"] = r.admission;
      results.back()["model_pods"] = ModelStatsJson(r.model);
    }
  }
  nlohmann::json out = {
      {"mode", "timed"},
      {"nodes_file", args.nodes},
      {"pods_file", args.pods},
      {"seed", args.first_seed},
      {"load_factor", args.load},
      {"cluster",
       {{"nodes", in.topology.nodes.size()},
        {"gpus", in.topology.gpus.size()},
        {"fraction", args.cluster_fraction},
        {"nodes_in_file", all_nodes}}},
      {"pods", in.pods.size()},
      {"trace_queueing_delay_s",
       {{"pods", trace.scheduled}, {"delay", DelayJson(trace.delay_s)}}},
      {"results", results}};
  if (model.admissions.empty()) return out;
  nlohmann::json compared = nlohmann::json::array();
  for (const Pair& p : Pairs(runs)) {
    const AdmissionComparison c = sim::CompareAdmissions(*p.fixed, *p.tessera);
    compared.push_back(
        {{"policy", p.fixed->scorer},
         {"queue_policy", p.fixed->queue_policy},
         {"model_pods", c.model_pods},
         {"mean_jct_s",
          {{"fixed", c.fixed_jct_s}, {"tessera", c.tessera_jct_s}}},
         {"earlier", c.earlier},
         {"later", c.later},
         {"other_pods", c.other_pods},
         {"other_mean_queueing_delay_s",
          {{"fixed", c.fixed_other_delay_s},
           {"tessera", c.tessera_other_delay_s}}},
         {"makespan_s",
          {{"fixed", c.fixed_makespan_s}, {"tessera", c.tessera_makespan_s}}}});
  }
  const InterferenceLaw& law = model.law;
  out["model_pods"] = {
      {"pct", args.model_pods},
      {"interference_law", law.alpha ? "linear" : "measured"},
      {"interference",
       law.alpha ? nlohmann::json(*law.alpha) : nlohmann::json(nullptr)},
      {"sharing", law.alpha ? nlohmann::json(nullptr)
                            : nlohmann::json(std::string(
                                  estimator::GpuSharingName(law.sharing)))},
      {"busy_fraction", estimator::kTrainingBusyFraction},
      {"tessera_vs_fixed", compared}};
  return out;
}

void PrintModelPods(const SimulateArgs& args, const ModelPodArgs& model,
                    const std::vector<TimedRun>& runs) {
  const sim::ModelPodStats& m = runs.front().model;
  std::cout << "\nModel pods: " << WithThousands(m.pods) << " ("
            << args.model_pods << "% of the GPU pods by name; "
            << WithThousands(m.fractional) << " ask a fraction of a GPU), busy "
            << Fixed(estimator::kTrainingBusyFraction, 2) << ", interference "
            << scheduler::InterferenceName(model.law)
            << ".\nfixed: their request; tessera: their request, a whole GPU "
               "of their own, or wait\nfor one, by predicted finish "
               "(DecideStart).\n\n";
  TextTable table({"policy", "queue", "admission", "finished", "mean JCT",
                   "delay mean", "slowdown", "waited", "whole GPU"},
                  {false, false, false, true, true, true, true, true, true});
  for (const TimedRun& r : runs) {
    const bool tessera = r.admission == "tessera";
    table.AddRow(
        {r.scorer, r.queue_policy, r.admission, WithThousands(r.model.finished),
         HumanDuration(r.model.mean_jct_s), HumanDuration(r.model.mean_delay_s),
         "x" + Fixed(r.model.mean_slowdown, 2),
         tessera ? WithThousands(r.model.waited) : "-",
         tessera ? WithThousands(r.model.whole) : "-"});
  }
  std::cout << table.Render()
            << "  slowdown: run time / duration (co-location); waited: held "
               "back at least once\n  while their request fitted; whole GPU: "
               "started alone on a GPU instead of a fraction.\n";
  const std::vector<Pair> pairs = Pairs(runs);
  if (pairs.empty()) return;
  std::cout << "\nWhere the decision changes the outcome (same arrivals, "
               "tessera against fixed):\n\n";
  TextTable diff(
      {"policy", "queue", "model JCT fixed", "tessera", "change", "earlier",
       "later", "others' delay fixed", "tessera", "makespan change"},
      {false, false, true, true, true, true, true, true, true, true});
  for (const Pair& p : pairs) {
    const AdmissionComparison c = sim::CompareAdmissions(*p.fixed, *p.tessera);
    diff.AddRow({p.fixed->scorer, p.fixed->queue_policy,
                 HumanDuration(c.fixed_jct_s), HumanDuration(c.tessera_jct_s),
                 Change(c.fixed_jct_s, c.tessera_jct_s),
                 WithThousands(c.earlier), WithThousands(c.later),
                 HumanDuration(c.fixed_other_delay_s),
                 HumanDuration(c.tessera_other_delay_s),
                 Change(c.fixed_makespan_s, c.tessera_makespan_s)});
  }
  std::cout << diff.Render()
            << "  over the model pods that finished in both runs (earlier / "
               "later: model pods whose JCT\n  tessera shortened / "
               "lengthened); others' delay: the pods without a model.\n";
}

// Per team and run: pods started, mean and p95 delay; and the runs'
// utilization and reclaims. Up to 6 teams one row per run (the teams side
// by side, the same arrivals in every row), else one row per team and run.
void PrintTeams(const SimulateArgs& args, const TraceInput& in,
                const std::vector<TimedRun>& runs) {
  const sim::TeamSplit split = SplitOf(args);
  std::cout << "\nTeams: the pods split into " << args.teams << " by ";
  if (split == sim::TeamSplit::kSkewed && args.teams > 1) {
    const int small = (args.teams + 1) / 2;
    std::cout << "size: fractional-GPU pods to team0.." << small - 1
              << ", whole-GPU pods to team" << small << ".." << args.teams - 1
              << ", each side by FNV-1a 64 of the name";
  } else {
    std::cout << "FNV-1a 64 of their name mod " << args.teams;
  }
  std::cout << ".\n  Pods per team:";
  std::vector<int64_t> count(args.teams, 0);
  for (const sim::TracePod& p : in.pods) {
    ++count[sim::TeamOf(p, args.teams, split)];
  }
  for (int k = 0; k < args.teams; ++k) std::cout << " " << count[k];
  std::cout << ".\n";
  if (args.quotas != "none") {
    std::cout << "  +quotas: each team a queue guaranteed 1/" << args.teams
              << " of the GPUs";
    if (args.quotas.find("gpu-hours") != std::string::npos) {
      std::cout << " (+quotas(gpu-hours): its share of the trace's GPU-hours)";
    }
    std::cout << ", idle quota lent, reclaimed youngest first.\n";
  }
  std::cout << "  Delay: mean / p95, the same arrivals in every row.\n";
  if (args.teams <= 6) {
    std::vector<std::string> head = {"policy", "queue"};
    std::vector<bool> right = {false, false};
    for (int k = 0; k < args.teams; ++k) {
      head.push_back("team" + std::to_string(k));
      right.push_back(true);
    }
    for (const char* h : {"all", "util", "queued util", "reclaims"}) {
      head.push_back(h);
      right.push_back(true);
    }
    TextTable table(head, right);
    for (const TimedRun& r : runs) {
      const std::vector<TeamDelays> by = ByTeam(in.pods, r, args.teams, split);
      std::vector<std::string> row = {r.scorer, QueueLabel(r)};
      for (int k = 0; k < args.teams; ++k) {
        row.push_back(HumanDuration(by[k].delay_s.mean) + " / " +
                      HumanDuration(by[k].delay_s.p95));
      }
      row.push_back(HumanDuration(r.delay_s.mean) + " / " +
                    HumanDuration(r.delay_s.p95));
      row.push_back(Fixed(r.mean_utilization_pct, 1) + "%");
      row.push_back(Fixed(r.queued_utilization_pct, 1) + "%");
      row.push_back(WithThousands(r.reclaims));
      table.AddRow(row);
    }
    std::cout << table.Render();
    return;
  }
  TextTable table(
      {"policy", "queue", "team", "started", "delay mean", "p95", "reclaimed"},
      {false, false, false, true, true, true, true});
  for (const TimedRun& r : runs) {
    const std::vector<TeamDelays> by = ByTeam(in.pods, r, args.teams, split);
    for (int k = 0; k < args.teams; ++k) {
      table.AddRow({r.scorer, QueueLabel(r), "team" + std::to_string(k),
                    WithThousands(by[k].started),
                    HumanDuration(by[k].delay_s.mean),
                    HumanDuration(by[k].delay_s.p95),
                    k == 0 ? WithThousands(r.reclaims) : ""});
    }
  }
  std::cout << table.Render();
}

void PrintTimed(const SimulateArgs& args, const TraceInput& in,
                size_t all_nodes, const TraceDelays& trace,
                const ModelPodArgs& model, const std::vector<TimedRun>& runs) {
  std::cout << "Cluster " << WithThousands(int64_t(in.topology.nodes.size()));
  if (in.topology.nodes.size() != all_nodes) {
    std::cout << " of " << WithThousands(int64_t(all_nodes)) << " nodes ("
              << Fixed(100 * args.cluster_fraction, 1)
              << "% sample by GPU model), ";
  } else {
    std::cout << " nodes, ";
  }
  std::cout << WithThousands(int64_t(in.topology.gpus.size())) << " GPUs ("
            << args.nodes << "); " << WithThousands(int64_t(in.pods.size()))
            << " pods (" << args.pods << ") arriving over "
            << HumanDuration(trace.span_s / args.load);
  if (args.load != 1) {
    std::cout << " (" << Fixed(args.load, args.load < 10 ? 2 : 0)
              << "x faster than the trace)";
  }
  std::cout << "\nTimed replay, seed " << args.first_seed
            << ": pods arrive at creation_time, run deletion_time - "
               "scheduled_time,\nqueue when they do not fit. Delay = time "
               "queued before starting.\n\n";
  std::vector<std::string> header = {
      "policy", "queue",      "started",   "never",    "delay mean", "p50",
      "p95",    "p99",        "max",       "makespan", "util mean",  "peak",
      "queued", "peak queue", "preempted", "run s"};
  std::vector<bool> right = {false, false, true, true, true, true, true, true,
                             true,  true,  true, true, true, true, true, true};
  const bool models = !model.admissions.empty();
  if (models) {
    header.insert(header.begin() + 2, "admission");
    right.insert(right.begin() + 2, false);
  }
  TextTable table(header, right);
  for (const TimedRun& r : runs) {
    std::string never = WithThousands(r.never_started());
    if (r.unplaceable > 0) {
      never += " (" + WithThousands(r.unplaceable) + " unplaceable)";
    }
    std::vector<std::string> row = {
        r.scorer,
        QueueLabel(r),
        WithThousands(r.started),
        never,
        HumanDuration(r.delay_s.mean),
        HumanDuration(r.delay_s.p50),
        HumanDuration(r.delay_s.p95),
        HumanDuration(r.delay_s.p99),
        HumanDuration(r.delay_s.max),
        HumanDuration(r.makespan_s),
        Fixed(r.mean_utilization_pct, 1) + "%",
        Fixed(r.peak_utilization_pct, 1) + "%",
        r.peak_queue > 0 ? Fixed(r.queued_utilization_pct, 1) + "%" : "-",
        WithThousands(r.peak_queue),
        WithThousands(r.preemptions),
        Fixed(r.seconds, 1)};
    if (models) row.insert(row.begin() + 2, r.admission);
    table.AddRow(row);
  }
  std::cout << table.Render() << "\n  never: unplaceable (fit no node even "
            << "when empty) plus still queued at the end.\n"
            << "  util: allocated GPU / capacity, time-weighted over the "
               "makespan; queued: the same\n  over the times when pods were "
               "waiting.\n"
            << "  The trace's own scheduler: delay mean "
            << HumanDuration(trace.delay_s.mean) << ", p50 "
            << HumanDuration(trace.delay_s.p50) << ", p95 "
            << HumanDuration(trace.delay_s.p95) << ", p99 "
            << HumanDuration(trace.delay_s.p99) << " over "
            << WithThousands(trace.scheduled) << " scheduled pods.\n";
  if (args.teams > 0) PrintTeams(args, in, runs);
  if (models) PrintModelPods(args, model, runs);
}

Status PlotTimed(const SimulateArgs& args, const TraceInput& in,
                 const std::vector<TimedRun>& runs) {
  double span = 0;
  for (const TimedRun& r : runs) span = std::max(span, r.makespan_s);
  const bool days = span >= 2 * kDay;
  const double unit = days ? kDay : kHour;
  LineChart chart;
  chart.title = "GPU utilization over time";
  chart.subtitle = std::to_string(in.topology.gpus.size()) + " GPUs, " +
                   std::to_string(in.pods.size()) + " pods (" + args.pods +
                   "); timed replay, seed " + std::to_string(args.first_seed);
  chart.x_label = std::string("time since the first arrival (") +
                  (days ? "days" : "hours") + ")";
  chart.y_label = "allocated GPUs (% of capacity)";
  chart.y_range = std::make_pair(0.0, 100.0);
  chart.step = true;
  for (const TimedRun& r : runs) {
    ChartSeries s;
    s.name = r.scorer + " / " + r.queue_policy +
             (r.admission.empty() ? "" : " / " + r.admission);
    for (const auto& [t, pct] : r.utilization) {
      s.points.emplace_back(t / unit, pct);
    }
    chart.series.push_back(std::move(s));
  }
  return WriteSvg(args.plot, chart);
}

}  // namespace

int RunSimulateTimed(const SimulateArgs& args) {
  if (args.elastic != 0) return RunSimulateTimedElastic(args);
  auto loaded = LoadTimedInput(args);
  if (!loaded) return ReportError(loaded.error());
  const TraceInput& in = loaded->trace;
  const size_t all_nodes = loaded->all_nodes;
  auto scorers = PolicyList(args.policy);
  if (!scorers) return ReportError(scorers.error());
  auto queue_policies = QueuePolicyList(args.queue_policy);
  if (!queue_policies) return ReportError(queue_policies.error());
  auto model = ParseModelPodArgs(args);
  if (!model) return ReportError(model.error());
  // Without model pods one run per pair, as before; with them one per
  // admission.
  std::vector<std::optional<TimedAdmission>> admissions = {std::nullopt};
  if (!model->admissions.empty()) {
    admissions.assign(model->admissions.begin(), model->admissions.end());
  }
  if (args.teams < 0 || args.teams > 1000) {
    return ReportError(BadInput("--teams: a count in 0..1000, got " +
                                std::to_string(args.teams)));
  }
  // --quotas: a comma list of none, equal, gpu-hours; both = none,equal.
  std::vector<std::string> quota_modes;
  {
    const std::string list = args.quotas == "both" ? "none,equal" : args.quotas;
    size_t at = 0;
    while (true) {
      const size_t comma = list.find(',', at);
      const std::string m = list.substr(at, comma - at);
      if (m != "none" && m != "equal" && m != "gpu-hours") {
        return ReportError(BadInput(
            "--quotas: none, equal, gpu-hours, both or a comma list of "
            "them, got '" +
            args.quotas + "'"));
      }
      quota_modes.push_back(m);
      if (comma == std::string::npos) break;
      at = comma + 1;
    }
  }
  if (args.team_split != "hash" && args.team_split != "skewed") {
    return ReportError(BadInput("--team-split: hash or skewed, got '" +
                                args.team_split + "'"));
  }
  if (args.quotas != "none" && args.teams == 0) {
    return ReportError(
        BadInput("--quotas: needs --teams N (the queues are "
                 "the teams)"));
  }
  const std::vector<scheduler::QueueSpec> equal =
      EqualQueues(in.topology, args.teams);
  const std::vector<scheduler::QueueSpec> by_use =
      GpuHourQueues(in.topology, in.pods, args.teams, SplitOf(args));
  std::vector<sim::TimedOptions> options;
  for (const std::string& scorer : *scorers) {
    for (const std::string& queue_policy : *queue_policies) {
      for (const std::string& quota_mode : quota_modes)
        for (const std::optional<TimedAdmission>& admission : admissions) {
          sim::TimedOptions o;
          o.teams = args.teams;
          o.team_split = SplitOf(args);
          if (quota_mode != "none") {
            o.queues = quota_mode == "equal" ? equal : by_use;
            o.quota_guarantees = quota_mode;
          }
          o.scorer = scorer;
          o.queue_policy = queue_policy;
          o.seed = args.first_seed;
          o.load_factor = args.load;
          if (admission) {
            o.model_pods_pct = args.model_pods;
            o.admission = *admission;
            o.law = model->law;
          }
          options.push_back(std::move(o));
        }
    }
  }
  Progress progress("simulate --mode timed");
  const std::string count = std::to_string(options.size());
  auto runs = sim::RunTimedAll(
      in.topology, in.pods, options, args.threads, [&](double done) {
        progress.Stage(count + (options.size() == 1 ? " run, " : " runs, ") +
                       Fixed(100 * done, 0) + "% done");
      });
  progress.Done();
  if (!runs) return ReportError(WithFlagNames(runs.error(), kTimedFlags));
  const TraceDelays trace = TraceOwnDelays(in.pods);
  if (args.json) {
    std::cout << TimedJson(args, in, all_nodes, trace, *model, *runs).dump(2)
              << "\n";
  } else {
    PrintTimed(args, in, all_nodes, trace, *model, *runs);
  }
  if (!args.plot.empty()) {
    if (Status s = PlotTimed(args, in, *runs); !s.ok()) {
      return ReportError(s.error());
    }
    if (!args.json) std::cout << "\nChart written to " << args.plot << "\n";
  }
  return 0;
}

}  // namespace tessera::cli
