#include "estimator/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "common/strings.h"
#include "estimator/profile.h"

namespace tessera::estimator {
namespace {

// ONNX Runtime names a node's kernel event NODE + this suffix.
constexpr std::string_view kKernelSuffix = "_kernel_time";
constexpr double kSecondsPerMicro = 1e-6;
constexpr double kSecondsPerMilli = 1e-3;

// Fitted efficiencies stay in [kMinEfficiency, kMaxEfficiency]: catalog
// figures can be nominal (the `cpu` device) and understate the real peak,
// so efficiencies above 1 are allowed, within reason.
constexpr double kMinEfficiency = 1e-5;
constexpr double kMaxEfficiency = 10.0;
// The per-operator overhead stays in [0, 1 ms]: no framework's dispatch
// costs more than that per node.
constexpr double kMaxOverheadSeconds = 1e-3;
// An overhead of 0 cannot be scaled in log space: the search starts it here.
constexpr double kOverheadFloorSeconds = 1e-8;
// A smooth roofline (TimeModel::roofline_p): with a sharp max, an
// efficiency that never wins the max leaves the MAPE flat and the search
// stalls on plateaus. The second fit starts p here and searches it in
// [kMinRooflineP, kMaxRooflineP].
constexpr double kFitRooflineP = 4.0;
constexpr double kMinRooflineP = 1.0;
constexpr double kMaxRooflineP = 64.0;
// Cache spill (TimeModel::spill_*): the cache size is searched in
// [64 KiB, 1 GiB], from 4 MiB (a typical last-level cache share), the
// slowdown of DRAM against cache in [1, 20], from 1 (no spill).
constexpr double kMinSpillBytes = 64.0 * 1024;
constexpr double kMaxSpillBytes = 1024.0 * 1024 * 1024;
constexpr double kStartSpillBytes = 4.0 * 1024 * 1024;
constexpr double kMaxSpillSlowdown = 20.0;
// Coordinate descent: each round tries every parameter times
// kStep^(-kGridSteps..kGridSteps), then halves the step (in log space).
constexpr int kRounds = 12;
constexpr int kGridSteps = 8;
constexpr double kInitialLogStep = 0.5;  // x1.65 per grid step at first
// A class's efficiencies are fitted only from at least this many training
// operators: one or two ops of a class say little about the others (whose
// arithmetic intensity may differ) and the fit would extrapolate wildly.
constexpr int kMinOpsPerClass = 5;

// Averages repeated names, keeping the order of first appearance.
class Averager {
 public:
  void Add(const std::string& name, double seconds) {
    auto [it, inserted] = index_.try_emplace(name, sums_.size());
    if (inserted) sums_.push_back({name, 0.0, 0});
    sums_[it->second].seconds += seconds;
    ++sums_[it->second].count;
  }
  std::vector<Measurement> Means() const {
    std::vector<Measurement> out;
    out.reserve(sums_.size());
    for (const Sum& s : sums_) out.push_back({s.name, s.seconds / s.count});
    return out;
  }
  bool empty() const { return sums_.empty(); }

 private:
  struct Sum {
    std::string name;
    double seconds;
    int count;
  };
  std::map<std::string, size_t> index_;
  std::vector<Sum> sums_;
};

Result<std::vector<Measurement>> ParseTrace(const std::string& path,
                                            const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    return BadInput(path +
                    ": not valid JSON (expected ONNX Runtime's "
                    "profile, a JSON array of trace events)");
  }
  if (j.is_object() && j.contains("traceEvents")) j = j["traceEvents"];
  if (!j.is_array()) {
    return BadInput(path +
                    ": expected a JSON array of trace events (ONNX "
                    "Runtime's profile), got a JSON " +
                    std::string(j.type_name()));
  }
  Averager avg;
  for (size_t i = 0; i < j.size(); ++i) {
    const nlohmann::json& e = j[i];
    if (!e.is_object() || e.value("cat", "") != "Node") continue;
    const auto name = e.find("name");
    if (name == e.end() || !name->is_string()) continue;
    const auto& n = name->get_ref<const std::string&>();
    if (n.size() <= kKernelSuffix.size() || !n.ends_with(kKernelSuffix)) {
      continue;
    }
    const auto dur = e.find("dur");
    if (dur == e.end() || !dur->is_number() || dur->get<double>() < 0) {
      return BadInput(path + ": event " + std::to_string(i) + " ('" + n +
                      "') has no non-negative \"dur\"");
    }
    avg.Add(n.substr(0, n.size() - kKernelSuffix.size()),
            dur->get<double>() * kSecondsPerMicro);
  }
  if (avg.empty()) {
    return BadInput(path + R"(: no "cat":"Node" events named *)" +
                    std::string(kKernelSuffix) +
                    " (was the session created with enableProfiling?)");
  }
  return avg.Means();
}

bool ParseMs(std::string_view text, double* ms) {
  const std::string s(text);
  char* end = nullptr;
  *ms = std::strtod(s.c_str(), &end);
  return !s.empty() && end == s.c_str() + s.size() && std::isfinite(*ms) &&
         *ms >= 0;
}

Result<std::vector<Measurement>> ParseCsv(const std::string& path,
                                          const std::string& text) {
  Averager avg;
  std::istringstream in(text);
  std::string raw;
  for (int line = 1; std::getline(in, raw); ++line) {
    const std::string_view l = Trim(raw);
    if (l.empty() || l.front() == '#') continue;
    const size_t comma = l.rfind(',');
    const std::string where = path + ":" + std::to_string(line) + ": ";
    if (comma == std::string_view::npos) {
      return BadInput(where + "expected name,ms, got '" + std::string(l) + "'");
    }
    const std::string_view name = Trim(l.substr(0, comma));
    const std::string_view value = Trim(l.substr(comma + 1));
    double ms = 0;
    if (!ParseMs(value, &ms)) {
      if (avg.empty() && line == 1) continue;  // a header
      return BadInput(where + "'" + std::string(value) +
                      "' is not a non-negative number of milliseconds");
    }
    if (name.empty()) return BadInput(where + "empty operator name");
    avg.Add(std::string(name), ms * kSecondsPerMilli);
  }
  if (avg.empty()) return BadInput(path + ": no name,ms lines");
  return avg.Means();
}

// One matched operator: its roofline terms at efficiency 1 and its time.
struct Sample {
  size_t op_class;
  double compute_s, memory_s;  // flops / peak, bytes / bandwidth
  double bytes;
  double measured_s;
  bool free;  // no kernel: the time model predicts 0
};

struct Params {
  TimeModel model;
  double overhead_s;
};

double Predict(const Sample& s, const Params& p) {
  if (s.free) return 0.0;
  const ClassEfficiency& e = p.model.efficiency[s.op_class];
  return RooflineSeconds(s.compute_s / e.compute,
                         MemorySeconds(s.bytes, s.memory_s, e.memory, p.model),
                         p.model) +
         p.overhead_s;
}

// Mean absolute percentage error in %, over kernel ops with a time > 0.
double Mape(const std::vector<Sample>& samples, const Params& p, int* count) {
  double sum = 0;
  int n = 0;
  for (const Sample& s : samples) {
    if (s.free || s.measured_s <= 0) continue;
    sum += std::abs(Predict(s, p) - s.measured_s) / s.measured_s;
    ++n;
  }
  if (count) *count = n;
  return n > 0 ? 100.0 * sum / n : 0.0;
}

struct Matched {
  std::vector<Sample> samples;
  int unmatched = 0;
};

Matched Match(const CalibrationSet& set, const DeviceSpec& device) {
  const graph::OpGraph& g = *set.model->graph;
  const std::vector<OpCost> costs = CostAll(g);
  Matched m;
  for (const Measurement& meas : set.measurements) {
    const auto n = g.FindNode(meas.node);
    if (!n) {
      ++m.unmatched;
      continue;
    }
    const OpCost& c = costs[*n];
    const int64_t bytes = c.bytes_read + c.bytes_written;
    const bool tensor_cores = UsesTensorCores(c.op_class);
    const double peak = PeakFlops(device, ComputeType(g, *n), tensor_cores);
    const double bw = device.memory_bandwidth;
    m.samples.push_back({static_cast<size_t>(c.op_class),
                         peak > 0 ? static_cast<double>(c.flops) / peak : 0.0,
                         bw > 0 ? static_cast<double>(bytes) / bw : 0.0,
                         static_cast<double>(bytes), meas.seconds,
                         c.flops == 0 && bytes == 0});
  }
  return m;
}

SetTotals Totals(const std::string& name, const std::vector<Sample>& samples,
                 const Params& before, const Params& after) {
  SetTotals t{name, static_cast<int>(samples.size()), 0, 0, 0};
  for (const Sample& s : samples) {
    t.measured_s += s.measured_s;
    t.predicted_before_s += Predict(s, before);
    t.predicted_after_s += Predict(s, after);
  }
  return t;
}

// Tries `*value` times exp(k x step) for k in [-kGridSteps, kGridSteps]
// within [lo, hi], keeping a strict improvement of the training MAPE.
void SearchOne(const std::vector<Sample>& train, Params& p, double* value,
               double lo, double hi, double step, double* best) {
  const double start = *value;
  double best_value = start;
  for (int k = -kGridSteps; k <= kGridSteps; ++k) {
    if (k == 0) continue;
    const double v = std::clamp(start * std::exp(k * step), lo, hi);
    *value = v;
    const double err = Mape(train, p, nullptr);
    if (err < *best) {
      *best = err;
      best_value = v;
    }
  }
  *value = best_value;
}

// The class whose efficiencies a class with too few training operators
// shares: dense convolution for depthwise and spatial ones (a model may
// have a single 3x3 stem), otherwise none (it keeps its start values).
size_t Parent(size_t c) {
  const auto oc = static_cast<OpClass>(c);
  return oc == OpClass::kDepthwiseConvolution ||
                 oc == OpClass::kSpatialConvolution
             ? static_cast<size_t>(OpClass::kConvolution)
             : c;
}

// Coordinate descent from `p` over the efficiencies of the classes with
// `ops` >= kMinOpsPerClass, the overhead, the cache spill and, for a smooth
// roofline (roofline_p > 0), p. Returns the training MAPE reached.
double Descend(const std::vector<Sample>& train,
               const std::array<int, kNumOpClasses>& ops, Params& p) {
  double best = Mape(train, p, nullptr);
  double step = kInitialLogStep;
  for (int round = 0; round < kRounds; ++round, step /= 2) {
    for (size_t c = 0; c < kNumOpClasses; ++c) {
      if (ops[c] < kMinOpsPerClass) continue;
      ClassEfficiency& e = p.model.efficiency[c];
      SearchOne(train, p, &e.compute, kMinEfficiency, kMaxEfficiency, step,
                &best);
      SearchOne(train, p, &e.memory, kMinEfficiency, kMaxEfficiency, step,
                &best);
    }
    SearchOne(train, p, &p.overhead_s, kOverheadFloorSeconds,
              kMaxOverheadSeconds, step, &best);
    if (p.model.roofline_p > 0) {
      SearchOne(train, p, &p.model.roofline_p, kMinRooflineP, kMaxRooflineP,
                step, &best);
    }
    SearchOne(train, p, &p.model.spill_slowdown, 1.0, kMaxSpillSlowdown, step,
              &best);
    SearchOne(train, p, &p.model.spill_bytes, kMinSpillBytes, kMaxSpillBytes,
              step, &best);
  }
  return best;
}

// Fits twice, from `start`'s roofline and from a smooth one (p =
// kFitRooflineP), and keeps the lower training MAPE. Operators of a class
// with too few training operators count as their Parent's, and the class
// takes its parent's fitted efficiencies.
Params Fit(const std::vector<Sample>& samples, const Params& start) {
  std::array<int, kNumOpClasses> ops{};
  for (const Sample& s : samples) {
    if (!s.free) ++ops[s.op_class];
  }
  auto tied = [&ops](size_t c) {
    return ops[c] < kMinOpsPerClass && Parent(c) != c &&
           ops[Parent(c)] >= kMinOpsPerClass;
  };
  std::vector<Sample> train = samples;
  for (Sample& s : train) {
    if (tied(s.op_class)) s.op_class = Parent(s.op_class);
  }
  Params sharp = start;
  if (sharp.model.spill_slowdown == 1.0) {
    sharp.model.spill_bytes = kStartSpillBytes;
  }
  sharp.overhead_s = std::max(sharp.overhead_s, kOverheadFloorSeconds);
  Params smooth = sharp;
  if (smooth.model.roofline_p == 0.0) smooth.model.roofline_p = kFitRooflineP;
  const double sharp_mape = Descend(train, ops, sharp);
  const double smooth_mape = Descend(train, ops, smooth);
  Params p = smooth_mape < sharp_mape ? smooth : sharp;
  for (size_t c = 0; c < kNumOpClasses; ++c) {
    if (tied(c)) p.model.efficiency[c] = p.model.efficiency[Parent(c)];
  }
  return p;
}

}  // namespace

Result<std::vector<Measurement>> ReadMeasurements(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return BadInput(path + ": cannot open the calibration file");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  const size_t first = s.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && (s[first] == '[' || s[first] == '{')) {
    return ParseTrace(path, s);
  }
  return ParseCsv(path, s);
}

std::pair<CalibrationSet, CalibrationSet> SplitEveryNth(
    const CalibrationSet& set, int every) {
  std::pair<CalibrationSet, CalibrationSet> out{{set.name, set.model, {}},
                                                {set.name, set.model, {}}};
  int matched = 0;
  for (const Measurement& m : set.measurements) {
    if (!set.model->graph->FindNode(m.node)) continue;
    auto& dest = matched++ % every == 0 ? out.second : out.first;
    dest.measurements.push_back(m);
  }
  return out;
}

Result<CalibrationReport> Calibrate(const std::vector<CalibrationSet>& training,
                                    const std::vector<CalibrationSet>& heldout,
                                    const DeviceSpec& device,
                                    const TimeModel& start) {
  CalibrationReport r;
  std::vector<Sample> train;
  std::vector<std::vector<Sample>> per_set;
  for (const CalibrationSet& set : training) {
    Matched m = Match(set, device);
    r.unmatched += m.unmatched;
    train.insert(train.end(), m.samples.begin(), m.samples.end());
    per_set.push_back(std::move(m.samples));
  }
  r.matched_ops = static_cast<int>(train.size());
  for (const Sample& s : train) {
    if (s.free) {
      ++r.free_ops;
    } else {
      ++r.class_ops[s.op_class];
    }
  }
  const Params before{start, device.launch_overhead_s};
  int fit_ops = 0;
  r.mape_before = Mape(train, before, &fit_ops);
  if (fit_ops == 0) {
    return BadInput("calibration: none of the " +
                    std::to_string(r.matched_ops + r.unmatched) +
                    " training measurements names an operator with a kernel "
                    "(are the node names those of this model?)");
  }
  const Params after = Fit(train, before);
  r.fitted = after.model;
  r.overhead_s = after.overhead_s;
  r.mape_after = Mape(train, after, nullptr);
  for (size_t i = 0; i < training.size(); ++i) {
    r.training_totals.push_back(
        Totals(training[i].name, per_set[i], before, after));
  }
  std::vector<Sample> held;
  for (const CalibrationSet& set : heldout) {
    const Matched m = Match(set, device);
    held.insert(held.end(), m.samples.begin(), m.samples.end());
    r.heldout_totals.push_back(Totals(set.name, m.samples, before, after));
  }
  r.heldout_mape_before = Mape(held, before, &r.heldout_ops);
  r.heldout_mape_after = Mape(held, after, nullptr);
  return r;
}

}  // namespace tessera::estimator
