// The placer's quality table: for every zoo model under several
// residual-capacity clusters (models/clusters/), each algorithm's simulated
// step time as a ratio to the lower bound, and whether `auto` is never worse
// than the best of m-topo / m-etf / m-sct (exit status 1 if it is).
//   placer_quality [--train] [--batch N] [--runtime pytorch|onnxruntime|none]
//                  [--models a,b] [--clusters x,y]
// --runtime: what prices the ops (ProblemOptions::runtime; default none,
// the operator roofline, as before `tessera plan` priced by pytorch).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "placer/core/place.h"
#include "tests/testlib/repo_paths.h"

namespace {

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = std::min(s.find(',', start), s.size());
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tessera;
  using namespace tessera::placer;
  bool training = false;
  int64_t batch = 1;
  estimator::Runtime runtime = estimator::Runtime::kRoofline;
  std::vector<std::string> models = {"resnet50", "mobilenet_v2", "inception_v3",
                                     "vgg16",    "vit_b_16",     "gpt2",
                                     "bert_base"};
  std::vector<std::string> clusters = {"default", "slivers", "crumbs", "hetero",
                                       "two_nodes"};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--train")) {
      training = true;
    } else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) {
      batch = std::atoll(argv[++i]);
    } else if (!std::strcmp(argv[i], "--runtime") && i + 1 < argc) {
      auto r = estimator::ParseRuntime(argv[++i]);
      if (!r) {
        std::fprintf(stderr, "%s\n", r.error().message.c_str());
        return 2;
      }
      runtime = *r;
    } else if (!std::strcmp(argv[i], "--models") && i + 1 < argc) {
      models = SplitList(argv[++i]);
    } else if (!std::strcmp(argv[i], "--clusters") && i + 1 < argc) {
      clusters = SplitList(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: placer_quality [--train] [--batch N] "
                   "[--runtime NAME] [--models a,b] [--clusters x,y]\n");
      return 2;
    }
  }
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  const std::string root = TESSERA_SOURCE_DIR;
  const std::vector<Algorithm> algos = {Algorithm::kSingle,   Algorithm::kMTopo,
                                        Algorithm::kMEtf,     Algorithm::kMSct,
                                        Algorithm::kPipeline, Algorithm::kAuto};
  std::printf(
      "mode: %s, batch %lld, priced by %s; cells: simulated step / lower "
      "bound (- = infeasible)\n\n",
      training ? "training" : "inference", static_cast<long long>(batch),
      std::string(estimator::RuntimeName(runtime)).c_str());
  std::printf("| model | cluster | lower bound ms |");
  for (Algorithm a : algos)
    std::printf(" %s |", std::string(AlgorithmName(a)).c_str());
  std::printf(" auto ms | auto chose | auto <= best Baechi |\n|---|---|---:|");
  for (size_t i = 0; i < algos.size(); ++i) std::printf("---:|");
  std::printf("---:|---|---|\n");
  bool all_ok = true;
  for (const std::string& m : models) {
    graph::LoadOptions load;
    load.batch = batch;
    auto model = graph::LoadModel(root + "/models/zoo/" + m + ".onnx", load);
    if (!model) {
      std::fprintf(stderr, "%s\n", model.error().message.c_str());
      return 1;
    }
    for (const std::string& cname : clusters) {
      auto cluster = LoadCluster(root + "/models/clusters/" + cname + ".yaml",
                                 catalog, {});
      if (!cluster) {
        std::fprintf(stderr, "%s\n", cluster.error().message.c_str());
        return 1;
      }
      ProblemOptions po;
      po.training = training;
      po.runtime = runtime;
      auto problem = BuildProblem(*model, *cluster, po);
      if (!problem) {
        std::fprintf(stderr, "%s\n", problem.error().message.c_str());
        return 1;
      }
      const double lb = LowerBound(*problem, *cluster);
      std::printf("| %s | %s | %.3f |", m.c_str(), cname.c_str(), lb * 1e3);
      double best_baechi = std::numeric_limits<double>::infinity();
      double auto_step = std::numeric_limits<double>::infinity();
      std::string chose = "-";
      for (Algorithm a : algos) {
        auto plan = Place(*problem, *cluster, a, {});
        if (!plan) {
          std::printf(" - |");
          continue;
        }
        const double step = plan->sim.step_s;
        std::printf(" %.2f |", step / lb);
        if (a == Algorithm::kMTopo || a == Algorithm::kMEtf ||
            a == Algorithm::kMSct) {
          best_baechi = std::min(best_baechi, step);
        }
        if (a == Algorithm::kAuto) {
          auto_step = step;
          chose = std::string(AlgorithmName(plan->algorithm));
        }
      }
      const bool ok = auto_step <= best_baechi * (1 + 1e-12) ||
                      (auto_step == std::numeric_limits<double>::infinity() &&
                       best_baechi == auto_step);
      all_ok = all_ok && ok;
      std::printf(" %.3f | %s | %s |\n", auto_step * 1e3, chose.c_str(),
                  ok ? "yes" : "NO");
      std::fflush(stdout);
    }
  }
  return all_ok ? 0 : 1;
}
