// The max-load benchmark of Tarnawski et al. (data/dnn-partitioning;
// docs/placer_max_load.md): per throughput input, the exact contiguous DP
// (units, ideals, blocks, seconds), then the ILP over all placements
// started from the DP's split (its max load, lower bound, seconds),
// then local search from the ILP's split when it is not proven, and the
// human-expert split under the same model where one is published
// (a training graph without its own uses the inference split, backward
// nodes with their forward twins). Each input runs in its own process so
// its peak memory is its own.
// The ILP runs the branch and bound first (max_load_bnb.cc) for its
// --bnb-share of the ILP's time; "bnb bound" is its part of the lower bound
// (with the star bound), "gap%" the proven gap of the final split.
//   build/bench/placer/max_load_bench [--budget S] [--no-ilp]
//       [--bnb-share F] [FILE.json ...]
// --budget: seconds per input for DP and ILP together (default 60).
// --bnb-share: MaxLoadIlpOptions::bnb_share (default 0.25; 0: CBC alone).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/placer/published_inputs.h"
#include "placer/maxload/max_load.h"
#include "placer/solver/solve_status.h"

namespace {

namespace fs = std::filesystem;
using namespace tessera::placer;

nlohmann::json Read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

double PeakMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// The expert split's max load, or -1 where none is published.
double Expert(const std::string& root, const std::string& file,
              const MaxLoadProblem& p) {
  if (file.find("LayerGraphs") == std::string::npos) return -1;
  std::string stem = fs::path(file).stem().string();  // resnet50_training
  const std::string model = stem.substr(0, stem.find('_'));
  bool follow = false;
  std::string path = root + "human-experts/" + stem + "_expert.json";
  if (!fs::exists(path)) {
    path = root + "human-experts/" + model + "_inference_expert.json";
    follow = true;
  }
  if (!fs::exists(path)) return -1;
  auto x = ParseExpertSplit(Read(path), p, follow);
  if (!x) {
    std::printf("    expert: %s\n", x.error().message.c_str());
    return -1;
  }
  const MaxLoadEvaluation e = EvaluateMaxLoad(p, *x);
  if (!e.violation.empty()) {
    std::printf("    expert: %s\n", e.violation.c_str());
    return -1;
  }
  return e.max_load;
}

void RunOne(const std::string& root, const std::string& f, double budget,
            bool ilp, double bnb_share) {
  const std::string name = fs::path(f).parent_path().filename().string() + "/" +
                           fs::path(f).stem().string();
  auto problem = ParseTarnawski(Read(f), f);
  if (!problem) {
    std::printf("%s: %s\n", name.c_str(), problem.error().message.c_str());
    return;
  }
  MaxLoadDpOptions options;
  options.time_limit_s = budget;
  auto dp = SolveContiguousMaxLoad(*problem, options);
  if (!dp) {
    std::printf("%-32s %s\n", name.c_str(), dp.error().message.c_str());
    return;
  }
  if (!HasSolution(dp->status)) {
    std::printf("%-32s %s\n", name.c_str(), dp->why.c_str());
    return;
  }
  const bool dp_optimal = dp->status == SolveStatus::kOptimal;
  double ilp_load = -1, bound = -1, ilp_s = 0, local_load = -1, local_s = 0;
  double bnb_bound = -1, bnb_s = 0;
  bool proven = false;
  if (ilp) {
    MaxLoadIlpOptions io;
    // CBC checks its limit between nodes and passes it by the root's work
    // (cuts, heuristics): up to twice the limit was measured on a busy
    // machine, so the ILP gets 40% of the budget.
    io.time_limit_s = std::max(1.0, 0.4 * budget - dp->seconds);
    io.warm = &dp->placement;
    io.bnb_share = bnb_share;
    auto r = SolveMaxLoadIlp(*problem, io);
    if (!r) {
      std::printf("    ilp: %s\n", r.error().message.c_str());
    } else if (!HasSolution(r->status)) {
      std::printf("    ilp: %s\n", r->why.c_str());
    } else {
      if (!r->solver_failure.empty()) {
        std::printf("    ilp: %s\n", r->solver_failure.c_str());
      }
      ilp_load = r->max_load;
      bound = r->lower_bound;
      ilp_s = r->seconds;
      bnb_bound = r->bnb_lower_bound;
      bnb_s = r->bnb_seconds;
      proven = r->status == SolveStatus::kOptimal;
      local_load = ilp_load;
      if (!proven) {
        // The rest of the budget, at most 10 s, for local search.
        const double left = budget - dp->seconds - ilp_s;
        const MaxLoadLocalResult l = ImproveMaxLoadLocally(
            *problem, r->placement, std::clamp(left, 0.5, 10.0));
        local_load = l.max_load;
        local_s = l.seconds;
      }
    }
  }
  const double expert = Expert(root, f, *problem);
  const double gap = local_load > 0 && bound >= 0
                         ? 100 * (local_load - bound) / local_load
                         : -1;
  std::printf(
      "%-32s %5zu %2d %5lld %7lld %11lld %9.4f %3s %7.3f %9.4f %9.4f %3s "
      "%6.1f %9.4f %5.1f %5.2f %9.4f %5.1f %9s %7.1f\n",
      name.c_str(), problem->nodes.size(), problem->kinds[0].count,
      static_cast<long long>(dp->units), static_cast<long long>(dp->ideals),
      static_cast<long long>(dp->blocks), dp->max_load,
      dp_optimal ? "yes" : "no", dp->seconds, ilp_load, bound,
      proven ? "yes" : "no", ilp_s, local_load, local_s, gap, bnb_bound, bnb_s,
      expert < 0 ? "-" : std::to_string(expert).substr(0, 8).c_str(),
      PeakMiB());
  if (!dp_optimal) std::printf("    dp stopped: %s\n", dp->why.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  double budget = 60;
  bool ilp = true;
  double bnb_share = MaxLoadIlpOptions{}.bnb_share;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--budget") == 0 && i + 1 < argc) {
      budget = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--bnb-share") == 0 && i + 1 < argc) {
      bnb_share = std::atof(argv[++i]);
    } else if (std::strcmp(argv[i], "--no-ilp") == 0) {
      ilp = false;
    } else {
      files.emplace_back(argv[i]);
    }
  }
  const std::string root = tessera::bench::PublishedRoot();
  if (files.empty())
    files = tessera::bench::PublishedInputs("throughput-inputs");
  std::printf(
      "%-32s %5s %2s %5s %7s %11s %9s %3s %7s %9s %9s %3s %6s %9s %5s %5s "
      "%9s %5s %9s %7s\n",
      "input", "nodes", "k", "units", "ideals", "blocks", "dp", "opt", "dp s",
      "ilp", "bound", "opt", "ilp s", "local", "s", "gap%", "bnb bound",
      "bnb s", "expert", "MiB");
  std::fflush(stdout);
  for (const std::string& f : files) {
    const pid_t child = fork();
    if (child == 0) {
      RunOne(root, f, budget, ilp, bnb_share);
      std::fflush(stdout);
      std::_Exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
  }
  return 0;
}
