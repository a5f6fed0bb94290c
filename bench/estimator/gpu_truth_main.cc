// tessera's estimator against real GPUs: every PyTorch eager run of
// data/gpu-truth (the zoo on an H100, 17 more architectures on an H200)
// predicted by the PyTorch runtime model on the GPU it ran on, the per-run
// table and the mean errors per GPU, precision and mode.
//
//   gpu_truth_bench [--calibrated] [--fit [--neutral]] [--mps]
//                   [--holdout arch|family|gpu] [--only GPU] [--prior W]
//
// --calibrated: predict with the entries `tessera calibrate` wrote on those
//   GPUs (data/gpu-truth/*_calibrate.yaml) instead of the catalog's;
// --neutral: with --fit, starts from NeutralStart's physical guesses
//   instead of the shipped defaults (held-out folds always do: the
//   defaults were fitted on every run);
// --fit: fits the runtime's constants, the shared kernel-efficiency surface
//   and the H100 host's dispatch cost to every run (coordinate descent in
//   log space on the mean absolute log error of time plus memory) and
//   prints them;
// --holdout arch: for each architecture, fits on the others and reports it
//   (leave-one-architecture-out); --holdout family: the same with each
//   family of architectures (Family: resnets, mobile, ...) held out
//   together; --holdout gpu: fits on one GPU's runs and
//   reports the other's (leave-one-GPU-out);
// --fold KEY[,KEY...]: with --holdout, only the fold holding KEY out (an
//   architecture, a family or a GPU), so folds can run as processes; with
//   a list, one fit holds every key of it out together (the inner folds of
//   a nested cross-validation);
// --only GPU: only the runs of h100-sxm or h200;
// --prior W: the weight of the fit's pull towards its start (default
//   0.002, the shipped procedure's, chosen by leave-one-family-out among
//   0.01 and 0.002; docs/estimator.md has held-out errors for others);
// --mps: one job alone on 100/50/25% of an H200's threads under MPS
//   (h200_mps_fraction.json), measured against predicted slowdowns.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <string_view>

#include "bench/estimator/gpu_truth.h"
#include "common/strings.h"
#include "estimator/device_catalog.h"
#include "tests/testlib/repo_paths.h"

using namespace tessera;

namespace {

// The devices the runs ran on, by catalog name; what a fit adjusts.
struct Devices {
  std::map<std::string, estimator::DeviceSpec> by_name;
  const estimator::DeviceSpec& For(const bench::TruthRun& r) const {
    return by_name.at(r.device);
  }
};

struct Knob {
  std::string name;
  double* value;
};

// What the fit adjusts: the framework's host and runtime constants, the
// kernel-efficiency surface every GPU of the design shares, and the H100
// host's dispatch cost relative to the H200 host's (the hosts differ, the
// GPUs' kernels do not).
std::vector<Knob> Knobs(estimator::RuntimeCosts& c,
                        estimator::EfficiencySurface& s, Devices& d) {
  std::vector<Knob> k = {
      {"op_s", &c.op_s},
      {"view_s", &c.view_s},
      {"cast_s", &c.cast_s},
      {"amp_op_s", &c.amp_op_s},
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
      {"conv_fft_steady", &c.conv_fft_steady},
      {"conv_fft_efficiency", &c.conv_fft_efficiency},
      {"conv_fft_half_flops", &c.conv_fft_half_flops},
      {"conv_layout_traffic", &c.conv_layout_traffic},
      {"kernel_s", &s.kernel_s},
      {"elementwise_bw", &s.elementwise_bandwidth},
      {"normalization_bw", &s.normalization_bandwidth},
      {"reduction_bw", &s.reduction_bandwidth},
      {"data_movement_bw", &s.data_movement_bandwidth},
  };
  const char* kinds[] = {"gemm", "conv", "spatial", "depthwise"};
  for (int tc = 0; tc < 2; ++tc) {
    for (size_t i = 0; i < 4; ++i) {
      if (tc == 1 && i == 3) continue;
      auto& e = tc ? s.tensor_cores[i] : s.cuda_cores[i];
      const std::string base = std::string(tc ? "tc_" : "cc_") + kinds[i];
      k.push_back({base + "_max", &e.max});
      k.push_back({base + "_half", &e.half_flops});
    }
  }
  auto h100 = d.by_name.find("h100-sxm");
  if (h100 != d.by_name.end()) {
    k.push_back({"h100_host_eager_op_s", &h100->second.efficiency.eager_op_s});
  }
  return k;
}

struct Model {
  estimator::RuntimeCosts costs;
  estimator::EfficiencySurface surface;
  Devices devices;
};

// A start that no run of data/gpu-truth chose, for held-out folds: the
// shipped defaults were fitted on every run, the held-out ones included,
// and the fit's prior pulls towards its start. Physical guesses: kernels
// at 70% of the achievable peak (depthwise 15%), half of it at 1 GFLOP
// (depthwise 0.1; FFT's products 70%, half at 10 MFLOP a frequency),
// bandwidth at 60%, backward at twice the forward, Adam
// reading and writing 16 bytes a parameter, 20 us of dispatch an op.
void NeutralStart(Model& m) {
  for (const Knob& k : Knobs(m.costs, m.surface, m.devices)) {
    const std::string& n = k.name;
    const bool depthwise = n.find("depthwise") != std::string::npos;
    double v = *k.value;
    if (n == "conv_fft_half_flops")  // before "_half": a flop count too
      v = 1e7;
    else if (n.find("_max") != std::string::npos || n == "conv_fft_efficiency")
      v = depthwise ? 0.15 : 0.7;
    else if (n.find("_half") != std::string::npos)
      v = depthwise ? 1e8 : 1e9;
    else if (n.find("_bw") != std::string::npos)
      v = 0.6;
    else if (n.rfind("backward_", 0) == 0 && n != "backward_op_s")
      v = 2.0;
    else if (n == "adam_traffic")
      v = 16;
    else if (n == "op_s")
      v = 20e-6;
    else if (n == "view_s" || n == "amp_op_s" || n == "optimizer_tensor_gpu_s")
      v = 5e-6;
    else if (n == "cast_s" || n == "record_s" || n == "backward_op_s")
      v = 10e-6;
    else if (n == "step_fixed_s")
      v = 50e-6;
    else if (n == "kernel_s")
      v = 2e-6;
    else if (n == "conv_workspace_fraction")
      v = 1.0;
    else if (n == "conv_layout_traffic")
      v = 2.0;
    else if (n == "h100_host_eager_op_s")
      v = estimator::kReferenceEagerOpS;
    *k.value = v;
  }
}

Result<bench::Prediction> PredictRun(bench::TruthModels& models,
                                     const bench::TruthRun& r, const Model& m) {
  return bench::Predict(models, r, m.devices.For(r), m.costs, m.surface);
}

// Mean absolute log error of step time and live memory per run, plus the
// per-operator-class GPU times of the profiled runs (half weight each), plus
// a weak pull of every knob towards its starting value (a prior: keeps
// knobs the data cannot see where physics put them).
double Loss(bench::TruthModels& models,
            const std::vector<bench::TruthRun>& runs, const Model& m,
            const std::vector<double>& prior, const std::vector<double>& now,
            double prior_weight) {
  double sum = 0;
  int n = 0;
  for (const auto& r : runs) {
    auto p = PredictRun(models, r, m);
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
  return sum / std::max(n, 1) + prior_weight * reg;
}

// Coordinate descent in log space, steps shrinking from x2 to x1.03.
// Progress on stderr.
void Fit(bench::TruthModels& models, const std::vector<bench::TruthRun>& runs,
         Model& m, double prior_weight) {
  auto knobs = Knobs(m.costs, m.surface, m.devices);
  std::vector<double> prior;
  for (auto& k : knobs) prior.push_back(*k.value);
  auto values = [&] {
    std::vector<double> v;
    for (auto& k : knobs) v.push_back(*k.value);
    return v;
  };
  auto loss = [&] {
    return Loss(models, runs, m, prior, values(), prior_weight);
  };
  double best = loss();
  for (const double step : {2.0, 1.5, 1.2, 1.08, 1.03}) {
    for (int round = 0; round < 5; ++round) {
      bool moved = false;
      for (auto& k : knobs) {
        if (*k.value <= 0) *k.value = 1e-6;
        for (const double f : {step, 1 / step}) {
          const double old = *k.value;
          *k.value = old * f;
          // Fractions of a peak stay physical: at most 1, except for
          // spatial convolutions (Winograd and FFT do fewer flops than the
          // direct formula counts).
          const std::string& n = k.name;
          if (n.find("_max") != std::string::npos ||
              n.find("_bw") != std::string::npos) {
            *k.value = std::min(
                *k.value, n.find("spatial") != std::string::npos ? 1.5 : 1.1);
          }
          const double l = loss();
          if (l < best - 1e-9) {
            best = l;
            moved = true;
            break;
          }
          *k.value = old;
        }
      }
      std::fprintf(stderr, "fit: step x%.2f round %d loss %.4f\n", step, round,
                   best);
      if (!moved) break;
    }
  }
}

// Leave-one-family-out: architectures whose relatives are held out with
// them, so a held-out model has no sibling in the fit (harder than
// leaving one architecture out). A model not listed is its own family.
std::string Family(const std::string& model) {
  static const std::map<std::string, std::string> kFamily = {
      {"resnet18", "resnets"},
      {"resnet50", "resnets"},
      {"resnet152", "resnets"},
      {"wide_resnet50_2", "resnets"},
      {"resnext50_32x4d", "resnets"},
      {"regnet_y_1_6gf", "resnets"},
      {"mobilenet_v2", "mobile"},
      {"mobilenet_v3_large", "mobile"},
      {"shufflenet_v2_x1_0", "mobile"},
      {"efficientnet_b3", "mobile"},
      {"inception_v3", "multi-branch"},
      {"googlenet", "multi-branch"},
      {"densenet169", "multi-branch"},
      {"vgg16", "plain convs"},
      {"vgg19", "plain convs"},
      {"vit_b_16", "vision transformers"},
      {"vit_b_32", "vision transformers"},
      {"vit_l_16", "vision transformers"},
      {"swin_t", "vision transformers"},
      {"convnext_small", "vision transformers"},
      {"gpt2", "text transformers"},
      {"gpt2_6layer", "text transformers"},
      {"bert_base", "text transformers"},
      {"bert_small", "text transformers"}};
  auto it = kFamily.find(model);
  return it == kFamily.end() ? model : it->second;
}

// One job alone on a share of an H200's threads under MPS
// (h200_mps_fraction.json): the measured and predicted step at each share
// and the slowdown against the whole GPU's step.
int ReportMps(bench::TruthModels& models, const Model& m,
              const std::string& src) {
  auto runs =
      bench::LoadTruth(src + "/data/gpu-truth/h200_mps_fraction.json", false);
  if (!runs) {
    std::cerr << runs.error().message << "\n";
    return 2;
  }
  std::printf("%-9s %5s %-5s %-5s %6s %9s %9s %6s %9s %9s\n", "model", "batch",
              "mode", "prec", "share", "ms", "pred", "err", "slowdown", "pred");
  double err = 0;
  int n = 0;
  for (const auto& r : *runs) {
    auto p = PredictRun(models, r, m);
    bench::TruthRun whole = r;
    whole.share = 1.0;
    auto p1 = PredictRun(models, whole, m);
    if (!p || !p1) return 1;
    const bench::TruthRun* twin = bench::WholeGpuTwin(*runs, r);
    const double measured_whole = twin ? twin->ms : 0.0;
    std::printf("%-9s %5d %-5s %-5s %5.0f%% %9.2f %9.2f %+5.0f%%",
                r.model.c_str(), r.batch, r.train ? "train" : "infer",
                r.precision.c_str(), 100 * r.share, r.ms, p->ms,
                100 * (p->ms / r.ms - 1));
    if (measured_whole > 0 && r.share < 1.0) {
      std::printf(" %8.2fx %8.2fx", r.ms / measured_whole, p->ms / p1->ms);
      err += std::abs(p->ms / p1->ms / (r.ms / measured_whole) - 1);
      ++n;
    }
    std::printf("\n");
  }
  if (n > 0)
    std::printf("\nslowdown error (mean absolute): %.1f%% over %d runs\n",
                100 * err / n, n);
  return 0;
}

// One run, measured against predicted (the table's row).
void PrintRun(const bench::Prediction& p) {
  const bench::TruthRun& r = p.run;
  const double mib = 1 << 20;
  std::printf(
      "%-9s %-19s %5d %-5s %-5s %9.2f %9.2f %+5.0f%% %9.0f %9.0f %+5.0f%% "
      "%9.0f %9.0f %5.2f\n",
      r.device.c_str(), r.model.c_str(), r.batch, r.train ? "train" : "infer",
      r.precision.c_str(), r.ms, p.ms, 100 * (p.ms / r.ms - 1),
      r.allocated / mib, p.allocated / mib,
      100 * (static_cast<double>(p.allocated) / r.allocated - 1),
      r.reserved / mib, p.reserved / mib, p.busy);
}

// "batch1", "batchN" or "train": the three modes.
std::string Mode(const bench::TruthRun& r) {
  return r.train ? "train" : (r.batch == 1 ? "batch1" : "batchN");
}

// The mean errors of every group, one line each.
void PrintGroups(
    const std::map<std::string, std::vector<bench::Prediction>>& groups) {
  std::printf("%-28s %4s %8s %8s %9s %7s\n", "group", "n", "time", "memory",
              "reserved", "spread");
  for (const auto& [name, list] : groups) {
    const auto e = bench::MeanErrors(list);
    std::printf("%-28s %4d %7.1f%% %7.1f%% %8.1f%% %6.1f%%\n", name.c_str(),
                e.n, 100 * e.time, 100 * e.memory, 100 * e.reserved,
                100 * e.spread);
  }
}

void AddToGroups(const bench::Prediction& p,
                 std::map<std::string, std::vector<bench::Prediction>>& g) {
  const bench::TruthRun& r = p.run;
  g[r.device + " " + r.precision + " " + Mode(r)].push_back(p);
  g[r.device + " " + r.precision].push_back(p);
  g[r.device + " all"].push_back(p);
  g["all " + r.precision + " " + Mode(r)].push_back(p);
  g["all"].push_back(p);
  // The targets are over batch > 1 and training together.
  if (r.batch > 1 || r.train) {
    g[r.device + " " + r.precision + " batch>1+train"].push_back(p);
    g["all " + r.precision + " batch>1+train"].push_back(p);
  }
}

// The model's starting point on every GPU of the runs: the shipped
// constants and the catalog's entries, or the calibrated ones.
Result<Model> Start(const std::vector<bench::TruthRun>& runs, bool calibrated) {
  const std::string dir = std::string(TESSERA_SOURCE_DIR) + "/data/gpu-truth/";
  auto catalog = estimator::DeviceCatalog::BuiltIn();
  std::map<std::string, std::string> entry = {{"h100-sxm", "h100-sxm"},
                                              {"h200", "h200"}};
  if (calibrated) {
    for (const char* f : {"h100_calibrate.yaml", "h200_calibrate.yaml"}) {
      TESSERA_RETURN_IF_ERROR(catalog.MergeYaml(dir + f));
    }
    entry = {{"h100-sxm", "h100-calibrated"}, {"h200", "h200-cal"}};
  }
  Model m;
  m.costs = estimator::DefaultCosts(estimator::Runtime::kPyTorch);
  m.surface = estimator::DefaultSurface();
  for (const auto& r : runs) {
    if (m.devices.by_name.count(r.device)) continue;
    auto spec = catalog.Get(entry.at(r.device));
    if (!spec) return spec.error();
    m.devices.by_name.emplace(r.device, **spec);
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  bool fit = false, calibrated = false, mps = false, neutral = false;
  double prior_weight = 0.002;
  std::string holdout, only, fold;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fit") {
      fit = true;
    } else if (a == "--neutral") {
      neutral = true;
    } else if (a == "--calibrated") {
      calibrated = true;
    } else if (a == "--mps") {
      mps = true;
    } else if (a == "--holdout" && i + 1 < argc) {
      holdout = argv[++i];
    } else if (a == "--only" && i + 1 < argc) {
      only = argv[++i];
    } else if (a == "--fold" && i + 1 < argc) {
      fold = argv[++i];
    } else if (a == "--prior" && i + 1 < argc) {
      char* end = nullptr;
      prior_weight = std::strtod(argv[++i], &end);
      if (end == argv[i] || *end != '\0' || !(prior_weight >= 0)) {
        std::cerr << "--prior: expected a weight >= 0\n";
        return 2;
      }
    } else {
      std::cerr << "usage: gpu_truth_bench [--calibrated] [--fit [--neutral]] "
                   "[--mps] "
                   "[--holdout arch|family|gpu [--fold KEY[,KEY...]]] "
                   "[--only h100-sxm|h200] [--prior W]\n";
      return 2;
    }
  }
  if (!holdout.empty() && holdout != "arch" && holdout != "family" &&
      holdout != "gpu") {
    std::cerr << "--holdout: expected arch, family or gpu\n";
    return 2;
  }
  const std::string src = TESSERA_SOURCE_DIR;
  auto loaded = bench::LoadAllTruth(src);
  if (!loaded) {
    std::cerr << loaded.error().message << "\n";
    return 2;
  }
  std::vector<bench::TruthRun> runs;
  for (const auto& r : *loaded) {
    if (only.empty() || r.device == only) runs.push_back(r);
  }
  bench::TruthModels models({src + "/models/zoo", src + "/models/archs"});
  auto start = Start(runs, calibrated);
  if (!start) {
    std::cerr << start.error().message << "\n";
    return 2;
  }
  if (!holdout.empty()) {
    std::set<std::string> keys;
    auto key = [&](const bench::TruthRun& r) {
      if (holdout == "arch") return r.model;
      return holdout == "family" ? Family(r.model) : r.device;
    };
    for (const auto& r : runs) keys.insert(key(r));
    // Each fold holds out a set of keys: one key each, or --fold's list.
    std::vector<std::set<std::string>> folds;
    if (fold.empty()) {
      for (const auto& k : keys) folds.push_back({k});
    } else {
      std::set<std::string> set;
      for (const std::string_view piece : Split(fold, ',')) {
        const std::string k(piece);
        if (!keys.count(k)) {
          std::cerr << "--fold: no " << holdout << " named '" << k << "'\n";
          return 2;
        }
        set.insert(k);
      }
      folds.push_back(set);
    }
    std::map<std::string, std::vector<bench::Prediction>> held;
    for (const auto& outs : folds) {
      std::string out;
      for (const auto& k : outs) out += (out.empty() ? "" : ",") + k;
      std::vector<bench::TruthRun> train, test;
      for (const auto& r : runs) {
        (outs.count(key(r)) ? test : train).push_back(r);
      }
      Model m = *start;
      NeutralStart(m);
      Fit(models, train, m, prior_weight);
      for (const auto& r : test) {
        auto p = PredictRun(models, r, m);
        if (!p) return 1;
        PrintRun(*p);
        AddToGroups(*p, held);
        held["out " + out].push_back(*p);
      }
      std::fprintf(stderr, "held out %s\n", out.c_str());
    }
    std::printf("leave-one-%s-out (fitted on the others)\n",
                holdout == "arch"     ? "architecture"
                : holdout == "family" ? "family"
                                      : "GPU");
    PrintGroups(held);
    return 0;
  }
  Model m = *start;
  if (mps) return ReportMps(models, m, src);
  if (fit) {
    if (neutral) NeutralStart(m);
    Fit(models, runs, m, prior_weight);
    for (auto& k : Knobs(m.costs, m.surface, m.devices)) {
      std::printf("%-26s %.6g\n", k.name.c_str(), *k.value);
    }
    std::printf("\n");
  }
  std::map<std::string, std::vector<bench::Prediction>> groups;
  std::printf("%-9s %-19s %5s %-5s %-5s %9s %9s %6s %9s %9s %6s %9s %9s %5s\n",
              "gpu", "model", "batch", "mode", "prec", "ms", "pred", "err",
              "alloc", "pred", "err", "reserved", "pred", "busy");
  for (const auto& r : runs) {
    auto p = PredictRun(models, r, m);
    if (!p) {
      std::cerr << r.model << ": " << p.error().message << "\n";
      return 1;
    }
    PrintRun(*p);
    AddToGroups(*p, groups);
  }
  std::printf("\n");
  PrintGroups(groups);
  return 0;
}
