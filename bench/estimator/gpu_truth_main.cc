// tessera's estimator against a real GPU: every run of
// data/gpu-truth/h100_pytorch_eager.json predicted by the PyTorch runtime
// model on h100-sxm, the per-run table and the mean errors per precision and
// mode.
//
//   gpu_truth_bench [--truth FILE] [--zoo DIR] [--fit] [--holdout]
//
// --fit: fits the runtime's constants and h100-sxm's efficiency surface to
// every run (coordinate descent in log space on the mean absolute log error
// of time plus memory) and prints them; --holdout: fits on three models and
// reports the fourth, for each model (leave-one-model-out).

#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <string>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <set>

#include "bench/estimator/gpu_truth.h"
#include "estimator/device_catalog.h"
#include "tests/testlib/repo_paths.h"

using namespace tessera;

namespace {

struct Knob {
  const char* name;
  double* value;
};

std::vector<Knob> Knobs(estimator::RuntimeCosts& c,
                        estimator::EfficiencySurface& s) {
  std::vector<Knob> k = {
      {"op_s", &c.op_s},
      {"view_s", &c.view_s},
      {"cast_s", &c.cast_s},
      {"record_s", &c.record_s},
      {"backward_op_s", &c.backward_op_s},
      {"step_fixed_s", &c.step_fixed_s},
      {"backward_gemm", &c.backward_gemm},
      {"backward_conv", &c.backward_conv},
      {"backward_spatial_conv", &c.backward_spatial_conv},
      {"backward_depthwise", &c.backward_depthwise},
      {"backward_memory", &c.backward_memory},
      {"adam_traffic", &c.adam_traffic},
      {"optimizer_tensor_gpu_s", &c.optimizer_tensor_gpu_s},
      {"conv_workspace_fraction", &c.conv_workspace_fraction},
      {"kernel_s", &s.kernel_s},
      {"elementwise_bw", &s.elementwise_bandwidth},
      {"normalization_bw", &s.normalization_bandwidth},
      {"reduction_bw", &s.reduction_bandwidth},
      {"data_movement_bw", &s.data_movement_bandwidth},
  };
  const char* kinds[] = {"gemm", "conv", "spatial", "depthwise"};
  static std::vector<std::string> names;
  names.clear();
  names.reserve(32);
  for (int tc = 0; tc < 2; ++tc) {
    for (size_t i = 0; i < 4; ++i) {
      if (tc == 1 && i == 3) continue;
      auto& e = tc ? s.tensor_cores[i] : s.cuda_cores[i];
      names.push_back(std::string(tc ? "tc_" : "cc_") + kinds[i] + "_max");
      k.push_back({names.back().c_str(), &e.max});
      names.push_back(std::string(tc ? "tc_" : "cc_") + kinds[i] + "_half");
      k.push_back({names.back().c_str(), &e.half_flops});
    }
  }
  return k;
}

// Mean absolute log error of step time and live memory per run, plus the
// per-operator-class GPU times of the profiled runs (half weight each), plus
// a weak pull of every knob towards its starting value (a prior: keeps
// knobs the data cannot see where physics put them).
double Loss(bench::TruthModels& models,
            const std::vector<bench::TruthRun>& runs,
            const estimator::DeviceSpec& device,
            const estimator::RuntimeCosts& costs,
            const std::vector<double>& prior, const std::vector<double>& now) {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    auto p = bench::Predict(models, r, device, costs);
    if (!p) return 1e9;
    sum += std::abs(std::log(p->ms / r.ms)) +
           std::abs(std::log(static_cast<double>(p->allocated) /
                             static_cast<double>(r.allocated)));
    ++n;
    auto part = [&](double measured, double predicted) {
      if (measured <= 0.05) return;
      sum += 0.5 * std::abs(std::log(std::max(predicted, 1e-3) / measured));
    };
    part(r.gemm_ms, p->gemm_ms);
    part(r.conv_fwd_ms, p->conv_fwd_ms);
    part(r.conv_bwd_ms, p->conv_bwd_ms);
    part(r.norm_fwd_ms, p->norm_fwd_ms);
    part(r.norm_bwd_ms, p->norm_bwd_ms);
  }
  double reg = 0;
  for (size_t i = 0; i < prior.size(); ++i) {
    if (prior[i] > 0 && now[i] > 0)
      reg += std::pow(std::log(now[i] / prior[i]), 2);
  }
  return sum / n + 0.01 * reg;
}

// Coordinate descent in log space, steps shrinking from x1.5 to x1.03.
void Fit(bench::TruthModels& models, const std::vector<bench::TruthRun>& runs,
         estimator::DeviceSpec& device, estimator::RuntimeCosts& costs) {
  auto knobs = Knobs(costs, device.efficiency);
  std::vector<double> prior;
  for (auto& k : knobs) prior.push_back(*k.value);
  auto values = [&] {
    std::vector<double> v;
    for (auto& k : knobs) v.push_back(*k.value);
    return v;
  };
  double best = Loss(models, runs, device, costs, prior, values());
  for (const double step : {1.5, 1.2, 1.08, 1.03}) {
    for (int round = 0; round < 3; ++round) {
      bool moved = false;
      for (auto& k : knobs) {
        if (*k.value <= 0) *k.value = 1e-6;
        for (const double f : {step, 1 / step}) {
          const double old = *k.value;
          *k.value = old * f;
          // Fractions of a peak stay physical: at most 1, except for
          // spatial convolutions (Winograd and FFT do fewer flops than the
          // direct formula counts).
          const std::string n = k.name;
          if (n.find("_max") != std::string::npos ||
              n.find("_bw") != std::string::npos) {
            *k.value = std::min(
                *k.value, n.find("spatial") != std::string::npos ? 1.5 : 1.0);
          }
          const double l = Loss(models, runs, device, costs, prior, values());
          if (l < best - 1e-9) {
            best = l;
            moved = true;
            break;
          }
          *k.value = old;
        }
      }
      if (!moved) break;
    }
  }
}

// "batch1", "batchN" or "train": the three modes.
std::string Mode(const bench::TruthRun& r) {
  return r.train ? "train" : (r.batch == 1 ? "batch1" : "batchN");
}

// The mean errors of every group, one line each.
void PrintGroups(
    const std::map<std::string, std::vector<bench::Prediction>>& groups) {
  std::printf("%-20s %4s %8s %8s %9s\n", "group", "n", "time", "memory",
              "reserved");
  for (const auto& [name, list] : groups) {
    const auto e = bench::MeanErrors(list);
    std::printf("%-20s %4d %7.1f%% %7.1f%% %8.1f%%\n", name.c_str(), e.n,
                100 * e.time, 100 * e.memory, 100 * e.reserved);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string truth = std::string(TESSERA_SOURCE_DIR) +
                      "/data/gpu-truth/h100_pytorch_eager.json";
  std::string zoo = std::string(TESSERA_SOURCE_DIR) + "/models/zoo";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--truth")) truth = argv[i + 1];
    if (!std::strcmp(argv[i], "--zoo")) zoo = argv[i + 1];
  }
  auto runs = bench::LoadTruth(truth, false);
  if (!runs) {
    std::cerr << runs.error().message << "\n";
    return 2;
  }
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  estimator::DeviceSpec device = *catalog.Find("h100-sxm");
  bench::TruthModels models(zoo);
  auto costs = estimator::DefaultCosts(estimator::Runtime::kPyTorch);
  bool fit = false, holdout = false;
  for (int i = 1; i < argc; ++i) {
    fit |= !std::strcmp(argv[i], "--fit");
    holdout |= !std::strcmp(argv[i], "--holdout");
  }
  if (fit || holdout) {
    device.efficiency = estimator::SurfaceFor(device);
    device.efficiency.measured = true;
    if (device.efficiency.kernel_s <= 0)
      device.efficiency.kernel_s = costs.kernel_s;
  }
  if (holdout) {
    std::set<std::string> names;
    for (const auto& r : *runs) names.insert(r.model);
    std::map<std::string, std::vector<bench::Prediction>> held;
    for (const auto& out : names) {
      std::vector<bench::TruthRun> train, test;
      for (const auto& r : *runs) (r.model == out ? test : train).push_back(r);
      estimator::DeviceSpec d = device;
      auto c = costs;
      Fit(models, train, d, c);
      for (const auto& r : test) {
        auto p = bench::Predict(models, r, d, c);
        if (!p) return 1;
        const std::string mode = Mode(r);
        held[r.precision + " " + mode].push_back(*p);
        held[r.precision].push_back(*p);
        held["all"].push_back(*p);
        held["model " + out].push_back(*p);
      }
      std::fprintf(stderr, "held out %s\n", out.c_str());
    }
    std::printf("leave-one-model-out (fitted on the other models)\n");
    PrintGroups(held);
    return 0;
  }
  if (fit) {
    Fit(models, *runs, device, costs);
    for (auto& k : Knobs(costs, device.efficiency)) {
      std::printf("%-26s %.6g\n", k.name, *k.value);
    }
    std::printf("\n");
  }
  std::map<std::string, std::vector<bench::Prediction>> groups;
  std::vector<bench::Prediction> all;
  std::printf("%-13s %5s %-5s %-5s %9s %9s %6s %9s %9s %6s %9s %9s %5s\n",
              "model", "batch", "mode", "prec", "ms", "pred", "err", "alloc",
              "pred", "err", "reserved", "pred", "busy");
  for (const auto& r : *runs) {
    auto p = bench::Predict(models, r, device, costs);
    if (!p) {
      std::cerr << r.model << ": " << p.error().message << "\n";
      return 1;
    }
    const double mib = 1 << 20;
    std::printf(
        "%-13s %5d %-5s %-5s %9.2f %9.2f %+5.0f%% %9.0f %9.0f %+5.0f%% %9.0f "
        "%9.0f %5.2f\n",
        r.model.c_str(), r.batch, r.train ? "train" : "infer",
        r.precision.c_str(), r.ms, p->ms, 100 * (p->ms / r.ms - 1),
        r.allocated / mib, p->allocated / mib,
        100 * (static_cast<double>(p->allocated) / r.allocated - 1),
        r.reserved / mib, p->reserved / mib, p->busy);
    const std::string mode = Mode(r);
    groups[r.precision + " " + mode].push_back(*p);
    groups[r.precision].push_back(*p);
    all.push_back(*p);
  }
  std::printf("\n");
  groups["all"] = all;
  PrintGroups(groups);
  return 0;
}
