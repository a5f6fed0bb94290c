// End-to-end tests of `tessera plan`.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/cli/cli_runner.h"
#include "tests/testlib/repo_paths.h"

namespace tessera {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using Json = nlohmann::json;
using testlib::RunResult;

std::string Zoo(const std::string& name) {
  return std::string("'") + TESSERA_SOURCE_DIR + "/models/zoo/" + name +
         ".onnx'";
}
const std::string kResNet = Zoo("resnet50");
const std::string kMobileNet = Zoo("mobilenet_v2");

const char* const kDevices[] = {"node0/gpu0", "node0/gpu1", "node0/gpu2",
                                "node0/gpu3"};

// The names of the top-level nodes of the ONNX file at `path` (unquoted),
// with unnamed nodes named as placer/core/problem.h's BuildProblem documents.
std::vector<std::string> NodeNames(const std::string& path) {
  onnx::ModelProto model;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(model.ParseFromIstream(&in)) << path;
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (const auto& n : model.graph().node()) taken.insert(n.name());
  for (int i = 0; i < model.graph().node_size(); ++i) {
    const auto& n = model.graph().node(i);
    std::string name = n.name();
    if (name.empty()) {
      name = n.op_type() + "_" + std::to_string(i);
      const std::string base = name;
      for (int k = 1; taken.count(name); ++k) {
        name = base + "_" + std::to_string(k);
      }
      taken.insert(name);
    }
    names.push_back(name);
  }
  return names;
}

class PlanCli : public ::testing::Test {
 protected:
  RunResult Run(const std::string& args) const {
    return testlib::RunTessera(args, dir_);
  }
  testlib::TempDir dir_;
};

// A max-load input of Tarnawski et al., placed by the exact contiguous DP
// and then the ILP: the placement names every node, the objective is what
// the evaluator gives, and what cannot be read is refused.
TEST_F(PlanCli, CostGraphOfThePublishedBenchmark) {
  const std::string data =
      std::string(TESSERA_SOURCE_DIR) + "/data/dnn-partitioning/";
  RunResult r = Run("plan --json --algo contiguous --cost-graph " + data +
                    "throughput-inputs/LayerGraphs/resnet50_inference.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["format"], "tarnawski");
  EXPECT_EQ(j["placement"].size(), 177u);
  EXPECT_TRUE(j["optimal"].get<bool>());
  EXPECT_NEAR(j["objective"]["max_load"].get<double>(), 33.7747, 1e-3);
  EXPECT_EQ(j["devices"].size(), 7u);  // acc0..acc5, cpu0
  EXPECT_EQ(j["devices"][0]["id"], "acc0");
  EXPECT_EQ(j["devices"][6]["id"], "cpu0");
  for (const auto& [id, device] : j["placement"].items()) {
    const std::string d = device;
    EXPECT_TRUE(d.rfind("acc", 0) == 0 || d == "cpu0") << id << " " << d;
  }
  EXPECT_EQ(j["algorithm"], "contiguous-dp");
  EXPECT_FALSE(j.contains("ilp"));

  // The ILP from the DP's split: never worse, with a bound below.
  r = Run("plan --json --ilp-time-limit 2 --cost-graph " + data +
          "throughput-inputs/LayerGraphs/bert24_inference.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json k = Json::parse(r.out);
  EXPECT_EQ(k["algorithm"], "ilp");
  const double contiguous = k["contiguous"]["max_load"].get<double>();
  EXPECT_NEAR(contiguous, 17.7899, 1e-3);
  const double best = k["objective"]["max_load"].get<double>();
  EXPECT_LE(best, contiguous + 1e-9);
  EXPECT_LE(k["ilp"]["lower_bound"].get<double>(), best + 1e-9);
  EXPECT_GT(k["ilp"]["lower_bound"].get<double>(), 0);
  EXPECT_EQ(k["placement"].size(), 32u);
  // Not proven in 2 s: local search ran from the ILP's split.
  ASSERT_TRUE(k.contains("local_search"));
  EXPECT_LE(k["local_search"]["max_load"].get<double>(),
            k["ilp"]["max_load"].get<double>() + 1e-9);
  EXPECT_NEAR(k["local_search"]["max_load"].get<double>(), best, 1e-9);
  r = Run("plan --ilp-time-limit 1 --cost-graph " + data +
          "throughput-inputs/LayerGraphs/bert24_inference.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("the optimum over contiguous splits"));
  EXPECT_THAT(r.out, HasSubstr("any split:  max load"));

  r = Run("plan --algo m-etf --cost-graph " + data +
          "throughput-inputs/LayerGraphs/bert24_inference.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--algo m-etf: with --cost-graph"));
  r = Run("plan --cost-graph " + data + "README.md");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("malformed JSON"));
  r = Run("plan --cost-graph " + data +
          "human-experts/resnet50_inference_expert.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not a format tessera reads"));
  r = Run("plan");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--cost-graph"));
}

TEST_F(PlanCli, PrintsTheDeviceTableAndTheStep) {
  const RunResult r = Run("plan " + kResNet);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("batch 1, inference"));
  EXPECT_THAT(r.out, HasSubstr("built-in default (4 devices)"));
  EXPECT_THAT(r.out, HasSubstr("memory peak / usable"));
  for (const char* d : kDevices) EXPECT_THAT(r.out, HasSubstr(d));
  EXPECT_THAT(r.out, HasSubstr("a100-80gb"));
  EXPECT_THAT(r.out, HasSubstr("step time"));
  EXPECT_THAT(r.out, HasSubstr("lower bound"));
  EXPECT_THAT(r.out, HasSubstr("transfers"));
  EXPECT_THAT(r.out, HasSubstr("placement"));
}

TEST_F(PlanCli, JsonHasTheContractKeysAndEveryNode) {
  const RunResult r = Run("plan " + kResNet + " --batch 4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  for (const char* key :
       {"model", "algorithm", "mode", "batch", "step_time_ms", "lower_bound_ms",
        "placement_time_ms", "devices", "placement", "transfers"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["mode"], "inference");
  EXPECT_EQ(j["batch"], 4);
  EXPECT_GE(j["step_time_ms"].get<double>(), j["lower_bound_ms"].get<double>());
  EXPECT_GT(j["lower_bound_ms"].get<double>(), 0.0);
  ASSERT_EQ(j["devices"].size(), 4u);
  std::set<std::string> ids;
  int ops = 0;
  for (const Json& d : j["devices"]) {
    for (const char* key :
         {"id", "kind", "memory_capacity_bytes", "memory_peak_bytes",
          "compute_share", "busy_ms", "ops"}) {
      EXPECT_TRUE(d.contains(key)) << key;
    }
    EXPECT_LE(d["memory_peak_bytes"].get<int64_t>(),
              d["memory_capacity_bytes"].get<int64_t>());
    ids.insert(d["id"].get<std::string>());
    ops += d["ops"].get<int>();
  }
  const std::vector<std::string> nodes =
      NodeNames(std::string(TESSERA_SOURCE_DIR) + "/models/zoo/resnet50.onnx");
  ASSERT_EQ(nodes.size(), 175u);
  EXPECT_EQ(j["placement"].size(), nodes.size());
  EXPECT_EQ(ops, static_cast<int>(nodes.size()));
  for (const std::string& n : nodes) {
    ASSERT_TRUE(j["placement"].contains(n)) << n;
    EXPECT_TRUE(ids.count(j["placement"][n].get<std::string>())) << n;
  }
  for (const Json& t : j["transfers"]) {
    for (const char* key : {"tensor", "from", "to", "bytes"}) {
      EXPECT_TRUE(t.contains(key)) << key;
    }
  }
}

TEST_F(PlanCli, OutputFileHoldsThePlanAndTheTableStillPrints) {
  const std::string path = dir_.File("plan.json");
  // m-etf: deterministic (auto may run the ILP under a time limit).
  const RunResult r =
      Run("plan " + kMobileNet + " --algo m-etf -o '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("memory peak / usable"));
  const RunResult j = Run("plan " + kMobileNet + " --algo m-etf --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  Json written = Json::parse(testlib::ReadFile(path));
  Json printed = Json::parse(j.out);
  // Everything but the wall time of the placement is deterministic.
  written.erase("placement_time_ms");
  printed.erase("placement_time_ms");
  EXPECT_EQ(written, printed);
}

TEST_F(PlanCli, TimelineIsAChromeTraceWithATrackPerDevice) {
  const std::string path = dir_.File("step.json");
  const RunResult r =
      Run("plan " + kMobileNet + " --algo m-etf --timeline '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json t = Json::parse(testlib::ReadFile(path));
  ASSERT_TRUE(t["traceEvents"].is_array());
  std::set<std::string> threads;
  int ops = 0;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      threads.insert(e["args"]["name"].get<std::string>());
    }
    if (e["ph"] == "X") {
      EXPECT_GE(e["dur"].get<double>(), 0.0);
      ops += e["cat"] == "forward";
    }
  }
  for (const char* d : kDevices) {
    EXPECT_TRUE(threads.count(std::string(d) + " (a100-80gb)")) << d;
  }
  const size_t nodes = NodeNames(std::string(TESSERA_SOURCE_DIR) +
                                 "/models/zoo/mobilenet_v2.onnx")
                           .size();
  EXPECT_EQ(ops, static_cast<int>(nodes));
}

TEST_F(PlanCli, DotColoursTheGraph) {
  const std::string path = dir_.File("plan.dot");
  const RunResult r = Run("plan " + kMobileNet + " --dot '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dot = testlib::ReadFile(path);
  EXPECT_THAT(dot, HasSubstr("digraph"));
  EXPECT_THAT(dot, HasSubstr("cluster_legend"));
  EXPECT_THAT(dot, HasSubstr("fillcolor="));
}

// --html: one page that fetches nothing, with the devices, the timeline,
// every transfer and the step time --json prints.
TEST_F(PlanCli, HtmlReportIsOneSelfContainedPage) {
  const std::string path = dir_.File("plan.html");
  // m-topo: deterministic, and it moves tensors between devices.
  const RunResult r =
      Run("plan " + kMobileNet + " --algo m-topo --html '" + path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("memory peak / usable"));
  const std::string html = testlib::ReadFile(path);
  EXPECT_THAT(html, StartsWith("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("</html>"));
  for (const char* outside :
       {"src=\"http", "href=\"http", "src='http", "href='http", "<link",
        "@import", "url(", "http://", "https://"}) {
    EXPECT_THAT(html, Not(HasSubstr(outside))) << outside;
  }
  for (const char* d : kDevices) EXPECT_THAT(html, HasSubstr(d)) << d;
  EXPECT_THAT(html, HasSubstr("<svg id=\"tl-svg\""));
  EXPECT_THAT(html, HasSubstr("<script>"));
  const RunResult j = Run("plan " + kMobileNet + " --algo m-topo --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json plan = Json::parse(j.out);
  EXPECT_THAT(html, HasSubstr("data-step-time-ms=\"" +
                              plan["step_time_ms"].dump() + "\""));
  ASSERT_FALSE(plan["transfers"].empty());
  EXPECT_THAT(
      html, HasSubstr("<table id=\"transfers\"><caption>" +
                      std::to_string(plan["transfers"].size()) + " transfers"));
  for (const Json& t : plan["transfers"]) {
    EXPECT_THAT(html,
                HasSubstr("<tr><td>" + t["tensor"].get<std::string>() +
                          "</td><td>" + t["from"].get<std::string>() +
                          "</td><td>" + t["to"].get<std::string>() + "</td>"))
        << t;
  }
  // Every op has a rectangle in the timeline and one in the graph.
  const size_t nodes = NodeNames(std::string(TESSERA_SOURCE_DIR) +
                                 "/models/zoo/mobilenet_v2.onnx")
                           .size();
  size_t rects = 0;
  for (size_t p = html.find("<rect x="); p != std::string::npos;
       p = html.find("<rect x=", p + 1)) {
    ++rects;
  }
  EXPECT_GE(rects, 2 * nodes);
}

TEST_F(PlanCli, HtmlReportOfAllIsTheShortestStep) {
  const std::string path = dir_.File("all.html");
  const RunResult r =
      Run("plan " + kMobileNet + " --algo all --ilp-time-limit 1 --html '" +
          path + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(testlib::ReadFile(path),
              HasSubstr("--algo all: the shortest step of 6 algorithms"));
}

TEST_F(PlanCli, HtmlReportToAnUnwritablePathIsBadInput) {
  const RunResult missing = Run("plan " + kMobileNet + " --html '" +
                                dir_.File("no/such/dir/p.html") + "'");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--html"));
  EXPECT_THAT(missing.err, HasSubstr("p.html: cannot write"));
  const RunResult folder =
      Run("plan " + kMobileNet + " --html '" + dir_.path().string() + "'");
  EXPECT_EQ(folder.exit_code, 2);
  EXPECT_THAT(folder.err, HasSubstr("cannot write (a folder)"));
  const RunResult cost =
      Run("plan --cost-graph " + std::string(TESSERA_SOURCE_DIR) +
          "/data/dnn-partitioning/throughput-inputs/LayerGraphs/"
          "resnet50_inference.json --html '" +
          dir_.File("c.html") + "'");
  EXPECT_EQ(cost.exit_code, 2);
  EXPECT_THAT(cost.err, HasSubstr("--html needs a model"));
}

TEST_F(PlanCli, AllListsEveryAlgorithm) {
  const RunResult r = Run("plan " + kResNet + " --algo all --ilp-time-limit 2");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* a :
       {"single", "m-topo", "m-etf", "m-sct", "pipeline", "ilp"}) {
    EXPECT_THAT(r.out, HasSubstr(a));
  }
  EXPECT_THAT(r.out, HasSubstr("shortest step"));
  const RunResult j =
      Run("plan " + kResNet + " --algo all --ilp-time-limit 2 --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const Json all = Json::parse(j.out);
  ASSERT_TRUE(all.is_array());
  EXPECT_EQ(all.size(), 6u);
  for (const Json& p : all) {
    EXPECT_TRUE(p.contains("algorithm"));
    EXPECT_TRUE(p.contains("step_time_ms") || p.contains("error")) << p;
  }
}

TEST_F(PlanCli, TrainingPlans) {
  const RunResult r =
      Run("plan " + kMobileNet + " --train --batch 16 --optimizer sgd --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["mode"], "training");
  EXPECT_EQ(j["batch"], 16);
  const RunResult human = Run("plan " + kMobileNet + " --train --batch 16");
  ASSERT_EQ(human.exit_code, 0) << human.err;
  EXPECT_THAT(human.out, HasSubstr("training (adam)"));
}

// What prices the ops: the PyTorch runtime on GPUs by default (as the
// queue), the roofline on request; said in the header and plan.json.
TEST_F(PlanCli, PricesOpsAsPyTorchRunsThemUnlessToldOtherwise) {
  const RunResult r = Run("plan " + kMobileNet + " --batch 8 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  EXPECT_EQ(j["runtime"], "pytorch");
  EXPECT_EQ(j["amp"], "none");
  const RunResult none =
      Run("plan " + kMobileNet + " --batch 8 --runtime none --json");
  ASSERT_EQ(none.exit_code, 0) << none.err;
  const Json n = Json::parse(none.out);
  EXPECT_EQ(n["runtime"], "none");
  // The roofline knows no host: its step is another, shorter figure.
  EXPECT_LT(n["step_time_ms"].get<double>(), j["step_time_ms"].get<double>());
  const RunResult bf16 = Run("plan " + kMobileNet + " --batch 8 --amp bf16");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  EXPECT_THAT(bf16.out, HasSubstr("bf16 autocast, priced as pytorch"));
  EXPECT_THAT(Run("plan " + kMobileNet + " --runtime none").out,
              HasSubstr("priced as the roofline"));
}

TEST_F(PlanCli, RuntimeFlagsThatCannotHoldAreBadInput) {
  const RunResult bogus = Run("plan " + kMobileNet + " --runtime tensorrt");
  EXPECT_EQ(bogus.exit_code, 2);
  EXPECT_THAT(bogus.err, HasSubstr("--runtime 'tensorrt'"));
  const RunResult amp = Run("plan " + kMobileNet + " --amp int8");
  EXPECT_EQ(amp.exit_code, 2);
  EXPECT_THAT(amp.err, HasSubstr("--amp 'int8'"));
  // The parser names LoadOptions::float_type; plan, its own flag.
  const RunResult dtype = Run("plan " + kMobileNet + " --float-type int8");
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_THAT(dtype.err,
              HasSubstr("error: --float-type 'int8': expected fp32, fp16"));
  const RunResult roofline =
      Run("plan " + kMobileNet + " --runtime none --amp bf16");
  EXPECT_EQ(roofline.exit_code, 2);
  EXPECT_THAT(roofline.err, HasSubstr("--amp describes how a runtime"));
  const RunResult both =
      Run("plan " + kMobileNet + " --amp bf16 --float-type fp16");
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_THAT(both.err, HasSubstr("give one"));
  const RunResult ort =
      Run("plan " + kMobileNet + " --runtime onnxruntime --train");
  EXPECT_EQ(ort.exit_code, 2);
  EXPECT_THAT(ort.err, HasSubstr("onnxruntime runs inference"));
}

TEST_F(PlanCli, UnnamedNodesGetTheDocumentedNames) {
  testlib::OnnxModelBuilder m = testlib::SmallCnn(int64_t{2});
  m.proto().mutable_node(1)->clear_name();        // Relu -> "Relu_1"
  m.proto().mutable_node(2)->set_name("Relu_1");  // ... which is taken
  const std::string model = dir_.Write("cnn.onnx", m);
  const RunResult r = Run("plan '" + model + "' --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json j = Json::parse(r.out);
  std::set<std::string> names;
  for (const auto& [name, device] : j["placement"].items()) names.insert(name);
  EXPECT_EQ(names, (std::set<std::string>{"conv", "Relu_1_1", "Relu_1", "fc"}));
}

TEST_F(PlanCli, BadClusterFileNamesTheFileAndField) {
  const std::string path =
      dir_.Write("cluster.yaml",
                 "nodes:\n  - name: node0\n    gpus:\n      - kind: a100-80gb\n"
                 "        compute_share: 1.5\n");
  const RunResult r = Run("plan " + kResNet + " --cluster '" + path + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("cluster.yaml"));
  EXPECT_THAT(r.err, HasSubstr("compute_share"));
  const RunResult missing =
      Run("plan " + kResNet + " --cluster '" + dir_.File("none.yaml") + "'");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("none.yaml"));
}

TEST_F(PlanCli, BadFlagsAreBadInput) {
  const RunResult algo = Run("plan " + kResNet + " --algo m-fast");
  EXPECT_EQ(algo.exit_code, 2);
  EXPECT_THAT(algo.err, HasSubstr("--algo"));
  EXPECT_THAT(algo.err, HasSubstr("m-etf"));
  const RunResult micro = Run("plan " + kResNet + " --microbatches 0");
  EXPECT_EQ(micro.exit_code, 2);
  EXPECT_THAT(micro.err, HasSubstr("--microbatches"));
  EXPECT_EQ(Run("plan " + kResNet + " --headroom 1.5").exit_code, 2);
  EXPECT_EQ(Run("plan " + kResNet + " --train --optimizer lamb").exit_code, 2);
  const RunResult out = Run("plan " + kMobileNet + " -o '" +
                            dir_.File("no/such/dir/p.json") + "'");
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.err, HasSubstr("p.json: cannot write"));
}

TEST_F(PlanCli, InfeasibleClusterExitsThreeWithTheMissingBytes) {
  const std::string path =
      dir_.Write("tiny.yaml",
                 "nodes:\n  - name: node0\n    gpus:\n      - kind: a100-80gb\n"
                 "        memory_free: 64MiB\n");
  const RunResult r = Run("plan " + Zoo("vgg16") + " --cluster '" + path + "'");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_THAT(r.err, HasSubstr("missing"));
  const RunResult all =
      Run("plan " + Zoo("vgg16") + " --cluster '" + path + "' --algo all");
  EXPECT_EQ(all.exit_code, 3) << all.err;
  EXPECT_THAT(all.out, HasSubstr("infeasible"));
}

TEST_F(PlanCli, HelpShowsExamples) {
  const RunResult r = Run("plan --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_THAT(r.out, HasSubstr("Examples:"));
  EXPECT_THAT(r.out, HasSubstr("--algo all"));
  EXPECT_THAT(r.out, HasSubstr("--timeline"));
  EXPECT_THAT(r.out, HasSubstr("--html"));
}

}  // namespace
}  // namespace tessera

namespace tessera {
namespace {

// The reproduction: CBC's preprocessing segfaulted when a short
// time limit fell inside it, and took `tessera plan` down (exit 139). Now
// each ends as a plan (exit 0) or a clear error, never a signal.
TEST(PlanCliSolver, ShortIlpTimeLimitsNeverCrash) {
  testlib::TempDir dir;
  const std::string crumbs =
      std::string("'") + TESSERA_SOURCE_DIR + "/models/clusters/crumbs.yaml'";
  for (const char* model : {"resnet50", "vgg16"}) {
    for (const char* limit : {"0.0001", "0.001", "0.005", "0.02"}) {
      const testlib::RunResult r = testlib::RunTessera(
          "plan " + Zoo(model) + " --algo ilp --ilp-time-limit " +
              std::string(limit) + " --cluster " + crumbs,
          dir);
      const std::string what = std::string(model) + " at " + limit + " s";
      ASSERT_GE(r.exit_code, 0) << what << ": killed by a signal\n" << r.err;
      EXPECT_THAT(r.exit_code, ::testing::AnyOf(0, 1)) << what << r.err;
      if (r.exit_code == 0) {
        EXPECT_THAT(r.out, HasSubstr("ilp")) << what;
      } else {
        EXPECT_THAT(r.err, HasSubstr("found no placement within the time"))
            << what;
      }
      EXPECT_THAT(r.err, Not(HasSubstr("crashed"))) << what;
    }
  }
}

}  // namespace
}  // namespace tessera
