// Single-sample latency on the published latency inputs
// (data/dnn-partitioning/latency-inputs; docs/placer_latency_benchmark.md):
// per input, the lower bound, the paper's greedy baseline as described,
// the human-expert split where one is published, and tessera's m-TOPO,
// m-ETF, m-SCT and ILP, each judged in the paper's model (EvaluateLatency).
// Prints a latency table, then each run's time, calls and notes.
//   build/bench/placer/latency_bench [--ilp-time-limit S] [--ilp-groups N]
//       [--write-splits DIR] [FILE.json ...]
//   build/bench/placer/latency_bench --split SPLIT.json FILE.json
// --write-splits writes every split in the publishers' output format
// ({"fpgas": [{"nodes": [ids]}], "cpus": [...]}) for other evaluators;
// --split prints the latency of one split in that format.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/placer/published_inputs.h"
#include "placer/latency/latency_input.h"
#include "placer/solver/solve_status.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera::placer;  // NOLINT(google-build-using-namespace)
using Clock = std::chrono::steady_clock;

nlohmann::json Read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

struct Row {
  std::string name;
  bool computed = false;  // false: no split (the algorithm failed)
  LatencySplit split;
  LatencyEvaluation evaluation;
  double seconds = 0;
  std::string detail;  // notes, gap
};

std::string Cell(const Row& r) {
  if (!r.computed) return "failed";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", r.evaluation.latency);
  std::string s = buf;
  if (r.evaluation.split_accelerators > 0) s += "*";
  if (!r.evaluation.violation.empty()) s += " †";
  return s;
}

// A split in the publishers' format, evaluated as their evaluator does:
// with as many accelerators as it uses, memory checked but not enforced
// (a violation is noted).
Row SplitFileRow(const std::string& name, const MaxLoadProblem& parsed,
                 const nlohmann::json& j) {
  MaxLoadProblem wide = parsed;
  const int used = j.contains("fpgas") && j["fpgas"].is_array()
                       ? static_cast<int>(j["fpgas"].size())
                       : 0;
  wide.kinds[0].count = std::max(wide.kinds[0].count, used);
  Row r;
  r.name = name;
  auto split = ParseExpertSplit(j, wide);
  if (!split) {
    r.evaluation.violation = split.error().message;
    return r;
  }
  const LatencyProblem q = LatencyProblemFrom(wide);
  r.split = SplitFromDeviceIndices(q, split->device);
  r.evaluation = EvaluateLatency(q, r.split);
  r.computed = true;
  if (used > parsed.kinds[0].count) {
    std::string& v = r.evaluation.violation;
    v += (v.empty() ? "" : "; ") + std::string("uses ") + std::to_string(used) +
         " accelerators, the input has " +
         std::to_string(parsed.kinds[0].count);
  }
  return r;
}

// The expert split published for this model, if any.
std::string ExpertFile(const std::string& root, const std::string& input) {
  const std::string stem = fs::path(input).stem().string();
  const std::string path = root + "human-experts/" + stem + "_expert.json";
  return fs::path(input).parent_path().filename() == "LayerGraphs" &&
                 fs::exists(path)
             ? path
             : "";
}

void WriteSplit(const std::string& path, const LatencyProblem& p,
                const LatencySplit& x) {
  int accelerators = 0;
  for (const int d : x.device) accelerators = std::max(accelerators, d + 1);
  nlohmann::json fpgas = nlohmann::json::array();
  for (int a = 0; a < accelerators; ++a) {
    fpgas.push_back({{"nodes", nlohmann::json::array()}});
  }
  nlohmann::json cpu = nlohmann::json::array();
  for (size_t v = 0; v < x.device.size(); ++v) {
    if (x.device[v] == kOnCpu) {
      cpu.push_back(p.nodes[v].id);
    } else {
      fpgas[x.device[v]]["nodes"].push_back(p.nodes[v].id);
    }
  }
  nlohmann::json out = {{"fpgas", fpgas},
                        {"cpus", nlohmann::json::array({{{"nodes", cpu}}})}};
  std::ofstream(path) << out.dump(1) << "\n";
}

std::vector<Row> RunAll(const std::string& root, const std::string& file,
                        const MaxLoadProblem& parsed, const LatencyProblem& p,
                        const PlaceOptions& options) {
  std::vector<Row> rows;
  {
    const auto start = Clock::now();
    Row r;
    r.name = "greedy";
    r.split = GreedyLatencySplit(p);
    r.evaluation = EvaluateLatency(p, r.split);
    r.computed = true;
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    rows.push_back(r);
  }
  const std::string expert = ExpertFile(root, file);
  if (!expert.empty())
    rows.push_back(SplitFileRow("expert", parsed, Read(expert)));
  {
    // The paper's other baseline: the exact contiguous max-load split
    // (balanced for throughput), judged for latency.
    Row r;
    r.name = "max-load-dp";
    MaxLoadDpOptions o;
    o.time_limit_s = 60;
    auto dp = SolveContiguousMaxLoad(parsed, o);
    if (!dp) {
      r.evaluation.violation = dp.error().message;
    } else if (!HasSolution(dp->status)) {
      r.evaluation.violation = dp->why;
    } else {
      r.split = SplitFromDeviceIndices(p, dp->placement.device);
      r.evaluation = EvaluateLatency(p, r.split);
      r.computed = true;
      r.seconds = dp->seconds;
      r.detail =
          std::string("max load ") + std::to_string(dp->max_load) +
          (dp->status == SolveStatus::kOptimal ? ", the contiguous optimum"
                                               : "");
    }
    rows.push_back(r);
  }
  for (const Algorithm a : {Algorithm::kMTopo, Algorithm::kMEtf,
                            Algorithm::kMSct, Algorithm::kIlp}) {
    Row r;
    r.name = AlgorithmName(a);
    auto run = PlaceForLatency(p, a, options);
    if (!run) {
      r.evaluation.violation = run.error().message;
      rows.push_back(r);
      continue;
    }
    r.split = run->split;
    r.evaluation = run->evaluation;
    r.computed = true;
    r.seconds = run->seconds;
    char buf[160];
    std::snprintf(buf, sizeof buf, "tessera's simulator %.3f",
                  run->simulated_step);
    r.detail = buf;
    if (run->ilp_gap) {
      std::snprintf(buf, sizeof buf,
                    "; its objective %.3f, gap %.1f%% in its own model",
                    run->ilp_objective.value_or(0), *run->ilp_gap * 100);
      r.detail += buf;
    }
    for (const std::string& note : run->notes) r.detail += "; " + note;
    rows.push_back(r);
  }
  return rows;
}

}  // namespace

int main(int argc, char** argv) {
  PlaceOptions options;
  options.ilp_time_limit_s = 60;
  std::vector<std::string> files;
  std::string write_dir, split_file;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--ilp-time-limit") == 0 && i + 1 < argc) {
      options.ilp_time_limit_s = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--ilp-groups") == 0 && i + 1 < argc) {
      options.ilp_max_groups = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--write-splits") == 0 && i + 1 < argc) {
      write_dir = argv[++i];
    } else if (std::strcmp(argv[i], "--split") == 0 && i + 1 < argc) {
      split_file = argv[++i];
    } else {
      files.emplace_back(argv[i]);
    }
  }
  if (!split_file.empty()) {
    if (files.size() != 1) {
      std::fprintf(stderr, "--split needs exactly one input file\n");
      return 2;
    }
    auto parsed = ParseTarnawski(Read(files[0]), files[0]);
    if (!parsed) {
      std::fprintf(stderr, "%s\n", parsed.error().message.c_str());
      return 2;
    }
    const Row r = SplitFileRow(split_file, *parsed, Read(split_file));
    std::printf("latency %.6f, %d calls, %d accelerators split%s%s\n",
                r.evaluation.latency, r.evaluation.calls,
                r.evaluation.split_accelerators,
                r.evaluation.violation.empty() ? "" : "; ",
                r.evaluation.violation.c_str());
    return r.computed ? 0 : 1;
  }
  const std::string root = tessera::bench::PublishedRoot();
  if (files.empty()) files = tessera::bench::PublishedInputs("latency-inputs");
  std::printf(
      "| input | nodes | k | lower bound | greedy | expert | max-load DP | "
      "m-topo | m-etf | m-sct | ilp |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  std::string details;
  for (const std::string& f : files) {
    const std::string dir = fs::path(f).parent_path().filename().string();
    const std::string stem = fs::path(f).stem().string();
    const std::string name = dir + "/" + stem;
    auto parsed = ParseTarnawski(Read(f), f);
    if (!parsed) {
      std::printf("%s: %s\n", f.c_str(), parsed.error().message.c_str());
      continue;
    }
    const LatencyProblem p = LatencyProblemFrom(*parsed);
    const std::vector<Row> rows = RunAll(root, f, *parsed, p, options);
    auto cell = [&](const char* which) -> std::string {
      for (const Row& r : rows) {
        if (r.name == which) return Cell(r);
      }
      return "-";
    };
    std::printf("| %s | %zu | %d | %.3f | %s | %s | %s | %s | %s | %s | %s |\n",
                name.c_str(), p.nodes.size(), p.accelerators,
                LatencyLowerBound(p), cell("greedy").c_str(),
                cell("expert").c_str(), cell("max-load-dp").c_str(),
                cell("m-topo").c_str(), cell("m-etf").c_str(),
                cell("m-sct").c_str(), cell("ilp").c_str());
    std::fflush(stdout);
    for (const Row& r : rows) {
      char buf[256];
      std::snprintf(buf, sizeof buf,
                    "%-36s %-6s latency %9.3f %7.2f s %3d calls, %d "
                    "accelerators split",
                    name.c_str(), r.name.c_str(), r.evaluation.latency,
                    r.seconds, r.evaluation.calls,
                    r.evaluation.split_accelerators);
      details += buf;
      if (!r.evaluation.violation.empty()) {
        details +=
            (r.computed ? "; breaks: " : "; failed: ") + r.evaluation.violation;
      }
      if (!r.detail.empty()) details += " (" + r.detail + ")";
      details += "\n";
      if (!write_dir.empty() && r.computed && r.name != "expert") {
        WriteSplit(write_dir + "/" + dir + "_" + stem + "." + r.name + ".json",
                   p, r.split);
      }
    }
  }
  std::printf(
      "\n* a non-contiguous split (some accelerator runs > 1 call)\n"
      "† breaks a constraint of the input (below)\n\n%s",
      details.c_str());
  return 0;
}
