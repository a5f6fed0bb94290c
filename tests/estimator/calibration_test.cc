// Calibration of the time model: reading ONNX Runtime profiles and CSVs
// (and their errors), recovering a known time model from synthetic times,
// and fitting real measurements of PaddleOCR on a CPU (committed in
// tests/data by tests/ort/run_profile.mjs; no timing is asserted, only that
// the fit lowers the error it minimizes).
#include "estimator/calibration.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "estimator/profile.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::estimator {
namespace {

std::string Data(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/data/" + name;
}

const DeviceSpec& Cpu() {
  static const DeviceCatalog catalog = DeviceCatalog::BuiltIn();
  return *catalog.Find("cpu");
}

// The cls profile holds 3 runs of each of the model's 179 executed nodes.
constexpr size_t kClsProfiledNodes = 179;

TEST(ReadMeasurements, ParsesOnnxRuntimeProfileAndAveragesRuns) {
  auto m = ReadMeasurements(Data("ort_profile_paddleocr_cls.json"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->size(), kClsProfiledNodes);
  EXPECT_EQ(m->front().node, "p2o.Conv.0");
  for (const Measurement& x : *m) EXPECT_GT(x.seconds, 0.0) << x.node;
}

TEST(ReadMeasurements, ParsesCsvWithOrWithoutHeader) {
  testlib::TempDir dir;
  auto with =
      ReadMeasurements(dir.Write("a.csv",
                                 "name,ms\n# comment\n\nconv_1,2.0\nrelu, 0.5\n"
                                 "conv_1,4.0\n"));
  ASSERT_TRUE(with) << with.error().message;
  ASSERT_EQ(with->size(), 2u);
  EXPECT_EQ((*with)[0].node, "conv_1");
  EXPECT_DOUBLE_EQ((*with)[0].seconds, 3e-3);  // mean of 2 and 4 ms
  EXPECT_DOUBLE_EQ((*with)[1].seconds, 0.5e-3);
  auto without = ReadMeasurements(dir.Write("b.csv", "x,1\n"));
  ASSERT_TRUE(without) << without.error().message;
  EXPECT_EQ(without->size(), 1u);
}

TEST(ReadMeasurements, CsvErrorsNameTheFileAndLine) {
  testlib::TempDir dir;
  const std::string path = dir.Write("bad.csv", "name,ms\na,1\nb,fast\n");
  auto r = ReadMeasurements(path);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
  EXPECT_NE(r.error().message.find(path + ":3:"), std::string::npos)
      << r.error().message;
  EXPECT_NE(r.error().message.find("'fast'"), std::string::npos);
  auto no_comma = ReadMeasurements(dir.Write("c.csv", "a,1\njust_a_name\n"));
  ASSERT_FALSE(no_comma);
  EXPECT_NE(no_comma.error().message.find(":2: expected name,ms"),
            std::string::npos)
      << no_comma.error().message;
  EXPECT_FALSE(ReadMeasurements(dir.Write("d.csv", "a,-1\n")));
  EXPECT_FALSE(ReadMeasurements(dir.Write("e.csv", "name,ms\n")));
  EXPECT_FALSE(ReadMeasurements(dir.File("missing.csv")));
}

TEST(ReadMeasurements, JsonErrorsSayWhatIsWrong) {
  testlib::TempDir dir;
  auto object = ReadMeasurements(dir.Write("o.json", R"({"a": 1})"));
  ASSERT_FALSE(object);
  EXPECT_NE(object.error().message.find("JSON array"), std::string::npos)
      << object.error().message;
  auto empty = ReadMeasurements(dir.Write(
      "e.json", R"([{"cat": "Session", "name": "model_run", "dur": 5}])"));
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().message.find("no \"cat\":\"Node\" events"),
            std::string::npos)
      << empty.error().message;
  auto no_dur = ReadMeasurements(
      dir.Write("d.json", R"([{"cat": "Node", "name": "a_kernel_time"}])"));
  ASSERT_FALSE(no_dur);
  EXPECT_NE(no_dur.error().message.find("a_kernel_time"), std::string::npos);
  auto broken = ReadMeasurements(dir.Write("b.json", "[{\"cat\": "));
  ASSERT_FALSE(broken);
  EXPECT_NE(broken.error().message.find("not valid JSON"), std::string::npos);
}

graph::Model LoadZoo(const std::string& name) {
  graph::LoadOptions options;
  options.batch = 1;
  auto m = graph::LoadModel(
      std::string(TESSERA_SOURCE_DIR) + "/models/zoo/" + name + ".onnx",
      options);
  EXPECT_TRUE(m) << m.error().message;
  return std::move(m).value();
}

// Times of every kernel of `model` as `truth` and `overhead_s` predict them.
std::vector<Measurement> Synthetic(const graph::Model& model,
                                   const TimeModel& truth, double overhead_s) {
  DeviceSpec device = Cpu();
  device.launch_overhead_s = overhead_s;
  const graph::OpGraph& g = *model.graph;
  const std::vector<OpCost> costs = CostAll(g);
  std::vector<Measurement> out;
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    const double s = OpSeconds(costs[n], ComputeType(g, n), device, truth);
    if (s > 0) out.push_back({std::string(g.node(n).name), s});
  }
  return out;
}

TEST(Calibrate, RecoversAKnownTimeModelFromSyntheticTimes) {
  const graph::Model model = LoadZoo("mobilenet_v2");
  TimeModel truth = TimeModel::Defaults();
  // MobileNetV2's convolutions span three classes (1x1, depthwise, the 3x3
  // stem); the truth moves them all.
  for (const OpClass c : {OpClass::kConvolution, OpClass::kDepthwiseConvolution,
                          OpClass::kSpatialConvolution}) {
    truth.efficiency[static_cast<size_t>(c)] = {0.12, 0.3};
  }
  truth.efficiency[static_cast<size_t>(OpClass::kElementwise)] = {0.5, 0.15};
  constexpr double kTrueOverhead = 4e-6;
  const CalibrationSet all{"mobilenet_v2", &model,
                           Synthetic(model, truth, kTrueOverhead)};
  const auto [train, held] = SplitEveryNth(all, 4);
  auto r = Calibrate({train}, {held}, Cpu(), TimeModel::Defaults());
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_GT(r->mape_before, 50.0);
  EXPECT_LT(r->mape_after, 1.0);
  EXPECT_LT(r->heldout_mape_after, 1.0);
  EXPECT_GT(r->heldout_ops, 0);
  EXPECT_EQ(r->unmatched, 0);
  // Convolutions are compute-bound on the CPU device, element-wise
  // operators memory-bound: those efficiencies are the identifiable ones.
  constexpr double kTolerance = 0.05;  // relative
  EXPECT_NEAR(r->fitted.of(OpClass::kConvolution).compute, 0.12,
              0.12 * kTolerance);
  EXPECT_NEAR(r->fitted.of(OpClass::kElementwise).memory, 0.15,
              0.15 * kTolerance);
  EXPECT_NEAR(r->overhead_s, kTrueOverhead, kTrueOverhead * 0.2);
  ASSERT_EQ(r->training_totals.size(), 1u);
  const SetTotals& t = r->training_totals[0];
  EXPECT_NEAR(t.predicted_after_s, t.measured_s, t.measured_s * 0.01);
}

TEST(Calibrate, NoMatchingNodeIsAnError) {
  const graph::Model model = LoadZoo("mobilenet_v2");
  auto r = Calibrate({{"m", &model, {{"no_such_node", 1e-3}}}}, {}, Cpu(),
                     TimeModel::Defaults());
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::kBadInput);
}

std::string PretrainedPath(const std::string& file) {
  const char* cache = std::getenv("TESSERA_CACHE");
  const char* home = std::getenv("HOME");
  const std::string dir =
      cache ? std::string(cache)
            : std::string(home ? home : ".") + "/.cache/tessera";
  const std::string path = dir + "/pretrained/" + file;
  if (!std::filesystem::exists(path)) {
    ADD_FAILURE() << path
                  << " is missing: run models/fetch_pretrained.sh (the test "
                     "script does)";
  }
  return path;
}

struct Loaded {
  graph::Model model;
  std::vector<Measurement> measured;
};

Loaded LoadPaddle(const std::string& name, const std::string& shape) {
  graph::LoadOptions options;
  auto binding = graph::ParseInputBinding("x=" + shape);
  EXPECT_TRUE(binding);
  options.inputs.push_back(*binding);
  auto m =
      graph::LoadModel(PretrainedPath("paddleocr_" + name + ".onnx"), options);
  EXPECT_TRUE(m) << m.error().message;
  auto measured = ReadMeasurements(Data("ort_paddleocr_" + name + ".csv"));
  EXPECT_TRUE(measured) << measured.error().message;
  return {std::move(m).value(), std::move(measured).value()};
}

void Print(const std::string& title, const CalibrationReport& r) {
  std::cout << title << ": " << r.matched_ops << " ops matched (" << r.free_ops
            << " free), " << r.unmatched << " unmatched; MAPE training "
            << r.mape_before << "% -> " << r.mape_after << "%, held-out ops ("
            << r.heldout_ops << ") " << r.heldout_mape_before << "% -> "
            << r.heldout_mape_after << "%, overhead " << r.overhead_s * 1e6
            << " us, cache spill beyond " << r.fitted.spill_bytes / 1024
            << " KiB x" << r.fitted.spill_slowdown << ", roofline p "
            << r.fitted.roofline_p << "\n";
  for (size_t c = 0; c < kNumOpClasses; ++c) {
    if (r.class_ops[c] == 0) continue;
    std::cout << "  " << OpClassName(static_cast<OpClass>(c)) << " ("
              << r.class_ops[c] << " ops): compute "
              << r.fitted.efficiency[c].compute << ", memory "
              << r.fitted.efficiency[c].memory << "\n";
  }
  auto totals = [](const char* kind, const std::vector<SetTotals>& ts) {
    for (const SetTotals& t : ts) {
      std::cout << "  " << kind << " " << t.name << ": measured "
                << t.measured_s * 1e3 << " ms, predicted "
                << t.predicted_before_s * 1e3 << " -> "
                << t.predicted_after_s * 1e3 << " ms (error "
                << 100 * (t.predicted_after_s - t.measured_s) / t.measured_s
                << "%)\n";
    }
  };
  totals("training", r.training_totals);
  totals("held-out", r.heldout_totals);
}

// Real measurements (ONNX Runtime 1.30, CPU, one thread): calibrating on
// detection + recognition lowers their error; classification is held out.
TEST(Calibrate, RealPaddleOcrMeasurementsLowerTheTrainingError) {
  const Loaded det = LoadPaddle("det", "1x3x640x640");
  const Loaded rec = LoadPaddle("rec", "1x3x48x320");
  const Loaded cls = LoadPaddle("cls", "1x3x48x192");
  const CalibrationSet det_set{"det", &det.model, det.measured};
  const CalibrationSet rec_set{"rec", &rec.model, rec.measured};
  const CalibrationSet cls_set{"cls", &cls.model, cls.measured};
  auto models =
      Calibrate({det_set, rec_set}, {cls_set}, Cpu(), TimeModel::Defaults());
  ASSERT_TRUE(models) << models.error().message;
  Print("held-out model (cls)", *models);
  EXPECT_LT(models->mape_after, models->mape_before);
  EXPECT_GT(models->heldout_ops, 0);

  const auto [det_train, det_held] = SplitEveryNth(det_set, 4);
  const auto [rec_train, rec_held] = SplitEveryNth(rec_set, 4);
  auto ops = Calibrate({det_train, rec_train}, {det_held, rec_held}, Cpu(),
                       TimeModel::Defaults());
  ASSERT_TRUE(ops) << ops.error().message;
  Print("held-out ops (every 4th of det+rec)", *ops);
  EXPECT_LT(ops->mape_after, ops->mape_before);
}

}  // namespace
}  // namespace tessera::estimator
