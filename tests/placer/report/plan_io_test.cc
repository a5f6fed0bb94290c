// plan.json, the Chrome trace timeline, the DOT picture and the HTML report
// of a plan, on a small problem placed by hand over two devices.
#include "placer/report/plan_io.h"
#include "placer/report/plan_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "placer/core/simulator.h"
#include "tests/placer/test_problems.h"

namespace tessera::placer {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using Json = nlohmann::json;

// const (Constant) -> conv <- input, w; conv -> relu -> fc -> out.
// conv and const on device 0, relu and fc on device 1: one transfer of
// "t1" (1000 bytes) from device 0 to device 1.
Problem SmallProblem(bool training) {
  ProblemBuilder b(1, {0, 0}, training);
  const uint32_t input = b.AddTensor("input", 100, TensorRole::kInput);
  const uint32_t w = b.AddTensor("w", 400, TensorRole::kWeight);
  const uint32_t c = b.AddTensor("c", 8, TensorRole::kWeight);
  const uint32_t t1 = b.AddTensor("t1", 1000, TensorRole::kActivation);
  const uint32_t t2 = b.AddTensor("t2", 1000, TensorRole::kActivation);
  const uint32_t out = b.AddTensor("out", 10, TensorRole::kActivation, true);
  auto add = [&](const char* name, const char* type, double seconds,
                 std::vector<uint32_t> ins, uint32_t output) {
    const double f[] = {seconds};
    const double back[] = {2 * seconds};
    const uint32_t outs[] = {output};
    b.AddOp(
        name, type, f,
        training ? std::span<const double>(back) : std::span<const double>(),
        ins, outs);
  };
  add("const", "Constant", 0.0, {}, c);
  add("conv", "Conv", 0.002, {input, w, c}, t1);
  add("relu", "Relu", 0.001, {t1}, t2);
  add("fc", "Gemm", 0.003, {t2}, out);
  return std::move(b).Build().value();
}

class PlanIo : public ::testing::Test {
 protected:
  void Prepare(bool training) {
    problem_ = SmallProblem(training);
    cluster_ = testing::UniformCluster(2, 1 << 20, 1e6, 1e-5);
    plan_.algorithm = Algorithm::kMEtf;
    plan_.placement.device = {0, 0, 1, 1};
    plan_.sim = Simulate(problem_, cluster_, plan_.placement,
                         SimOptions{.microbatches = 1, .record_ops = true});
    plan_.lower_bound_s = LowerBound(problem_, cluster_);
    plan_.placement_s = 0.0005;
    plan_.notes = {"placed by hand"};
  }
  Problem problem_;
  Cluster cluster_;
  Plan plan_;
};

TEST_F(PlanIo, JsonHasTheContractKeysAndValues) {
  Prepare(false);
  const Json j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 8});
  for (const char* key :
       {"model", "algorithm", "mode", "batch", "step_time_ms", "lower_bound_ms",
        "placement_time_ms", "devices", "placement", "transfers",
        "microbatches", "notes", "links", "ratio_to_lower_bound", "fits"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["model"], "m.onnx");
  EXPECT_EQ(j["algorithm"], "m-etf");
  EXPECT_EQ(j["mode"], "inference");
  EXPECT_EQ(j["batch"], 8);
  EXPECT_EQ(j["microbatches"], 1);
  EXPECT_DOUBLE_EQ(j["step_time_ms"].get<double>(), plan_.sim.step_s * 1e3);
  EXPECT_DOUBLE_EQ(j["lower_bound_ms"].get<double>(),
                   plan_.lower_bound_s * 1e3);
  EXPECT_DOUBLE_EQ(j["placement_time_ms"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["ratio_to_lower_bound"].get<double>(),
                   plan_.sim.step_s / plan_.lower_bound_s);
  EXPECT_EQ(j["fits"], true);
  EXPECT_EQ(j["notes"], Json::array({"placed by hand"}));
  EXPECT_FALSE(j.contains("ilp"));

  ASSERT_EQ(j["devices"].size(), 2u);
  for (int d = 0; d < 2; ++d) {
    const Json& dev = j["devices"][d];
    EXPECT_EQ(dev["id"], "node0/gpu" + std::to_string(d));
    EXPECT_EQ(dev["kind"], "test-gpu");
    EXPECT_EQ(dev["memory_capacity_bytes"], 1 << 20);
    EXPECT_EQ(dev["memory_total_bytes"], 1 << 20);
    EXPECT_EQ(dev["memory_peak_bytes"], plan_.sim.devices[d].peak_bytes);
    EXPECT_EQ(dev["weight_bytes"], plan_.sim.devices[d].weight_bytes);
    EXPECT_DOUBLE_EQ(dev["busy_ms"].get<double>(),
                     plan_.sim.devices[d].busy_s * 1e3);
    EXPECT_EQ(dev["compute_share"], 1.0);
    EXPECT_EQ(dev["ops"], 2);
    EXPECT_TRUE(dev.contains("peak_op"));
  }
  // Busy time is the ops' time: conv on 0, relu + fc on 1.
  EXPECT_NEAR(j["devices"][0]["busy_ms"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(j["devices"][1]["busy_ms"].get<double>(), 4.0, 1e-9);

  // Every op, the Constant included.
  const Json& placement = j["placement"];
  ASSERT_EQ(placement.size(), problem_.num_ops());
  EXPECT_EQ(placement["const"], "node0/gpu0");
  EXPECT_EQ(placement["conv"], "node0/gpu0");
  EXPECT_EQ(placement["relu"], "node0/gpu1");
  EXPECT_EQ(placement["fc"], "node0/gpu1");

  ASSERT_EQ(j["transfers"].size(), 1u);
  const Json& t = j["transfers"][0];
  EXPECT_EQ(t["tensor"], "t1");
  EXPECT_EQ(t["from"], "node0/gpu0");
  EXPECT_EQ(t["to"], "node0/gpu1");
  EXPECT_EQ(t["bytes"], 1000);
  EXPECT_EQ(t["gradient"], false);

  ASSERT_EQ(j["links"].size(), 1u);
  EXPECT_EQ(j["links"][0]["from"], "node0/gpu0");
  EXPECT_EQ(j["links"][0]["to"], "node0/gpu1");
  EXPECT_EQ(j["links"][0]["transfers"], 1);
  EXPECT_EQ(j["links"][0]["bytes"], 1000);
  // latency + bytes / bandwidth
  EXPECT_NEAR(j["links"][0]["busy_ms"].get<double>(), 1.01, 1e-9);
  // conv (2 ms), the transfer (1.01 ms), relu (1 ms), fc (3 ms).
  EXPECT_NEAR(j["step_time_ms"].get<double>(), 7.01, 1e-9);
}

TEST_F(PlanIo, JsonCarriesIlpFactsWhenPresent) {
  Prepare(false);
  plan_.algorithm = Algorithm::kIlp;
  plan_.ilp_objective_s = 0.004;
  plan_.ilp_gap = 0.0;
  plan_.ilp_status = SolveStatus::kOptimal;
  const Json j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 1});
  EXPECT_EQ(j["algorithm"], "ilp");
  ASSERT_TRUE(j.contains("ilp"));
  EXPECT_DOUBLE_EQ(j["ilp"]["objective_ms"].get<double>(), 4.0);
  EXPECT_EQ(j["ilp"]["gap"], 0.0);
  EXPECT_EQ(j["ilp"]["optimal"], true);
}

// plan.json's "optimal" (a contract, never renamed) is the status's
// kOptimal; a time limit's incumbent is kFeasible, "optimal": false.
TEST_F(PlanIo, IlpOptimalIsTheSolveStatus) {
  Prepare(false);
  plan_.algorithm = Algorithm::kIlp;
  plan_.ilp_objective_s = 0.004;
  plan_.ilp_gap = 0.25;
  plan_.ilp_status = SolveStatus::kFeasible;
  Json j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 1});
  EXPECT_EQ(j["ilp"]["optimal"], false);
  EXPECT_EQ(j["ilp"]["gap"], 0.25);
  plan_.ilp_status = SolveStatus::kOptimal;
  j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 1});
  EXPECT_EQ(j["ilp"]["optimal"], true);
}

TEST_F(PlanIo, TransfersOfMicrobatchesAreSummedPerTensorAndLink) {
  Prepare(false);
  // Hand-made: the same tensor sent twice (two microbatches) and a
  // gradient back.
  plan_.sim.transfers = {
      {.tensor = 3, .from = 0, .to = 1, .bytes = 500, .microbatch = 0},
      {.tensor = 3, .from = 0, .to = 1, .bytes = 500, .microbatch = 1},
      {.tensor = 3, .from = 1, .to = 0, .bytes = 1000, .gradient = true}};
  plan_.sim.devices[0].peak_op = kNoOp;
  const Json j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 1});
  ASSERT_EQ(j["transfers"].size(), 2u);
  EXPECT_EQ(j["transfers"][0]["tensor"], "t1");
  EXPECT_EQ(j["transfers"][0]["bytes"], 1000);
  EXPECT_EQ(j["transfers"][0]["gradient"], false);
  EXPECT_EQ(j["transfers"][1]["from"], "node0/gpu1");
  EXPECT_EQ(j["transfers"][1]["gradient"], true);
  EXPECT_TRUE(j["devices"][0]["peak_op"].is_null());
}

// The thread ids of the timeline by name, from its metadata events.
std::map<std::string, int> Threads(const Json& timeline) {
  std::map<std::string, int> threads;
  for (const Json& e : timeline["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      threads[e["args"]["name"].get<std::string>()] = e["tid"].get<int>();
    }
  }
  return threads;
}

TEST_F(PlanIo, TimelineHasATrackPerDeviceAndUsedLink) {
  Prepare(false);
  ASSERT_EQ(plan_.sim.op_records.size(), problem_.num_ops());
  const Json t = TimelineJson(problem_, cluster_, plan_);
  EXPECT_EQ(t["displayTimeUnit"], "ms");
  ASSERT_TRUE(t["traceEvents"].is_array());
  const auto threads = Threads(t);
  ASSERT_EQ(threads.size(), 3u);
  ASSERT_TRUE(threads.count("node0/gpu0 (test-gpu)"));
  ASSERT_TRUE(threads.count("node0/gpu1 (test-gpu)"));
  ASSERT_TRUE(threads.count("node0/gpu0 -> node0/gpu1"));
  bool process_named = false;
  std::map<std::string, const Json*> events;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") {
      process_named = e["args"]["name"] == "tessera plan";
    }
    if (e["ph"] == "X") events[e["name"].get<std::string>()] = &e;
  }
  EXPECT_TRUE(process_named);
  ASSERT_EQ(events.size(), problem_.num_ops() + 1);  // ops + one transfer
  for (const OpRecord& r : plan_.sim.op_records) {
    const std::string& name = problem_.names[r.op];
    ASSERT_TRUE(events.count(name)) << name;
    const Json& e = *events[name];
    const std::string device = cluster_.devices[r.device].id + " (test-gpu)";
    EXPECT_EQ(e["tid"], threads.at(device));
    EXPECT_NEAR(e["ts"].get<double>(), r.start_s * 1e6, 1e-6);
    EXPECT_NEAR(e["dur"].get<double>(), (r.end_s - r.start_s) * 1e6, 1e-6);
    EXPECT_EQ(e["args"]["op"], name);
    EXPECT_EQ(e["args"]["op_type"], problem_.op_types[r.op]);
    EXPECT_EQ(e["args"]["microbatch"], 0);
  }
  EXPECT_NEAR((*events["conv"])["dur"].get<double>(), 2000.0, 1e-6);
  ASSERT_TRUE(events.count("t1"));
  const Json& transfer = *events["t1"];
  EXPECT_EQ(transfer["tid"], threads.at("node0/gpu0 -> node0/gpu1"));
  EXPECT_NEAR(transfer["dur"].get<double>(), 1010.0, 1e-6);
  EXPECT_EQ(transfer["args"]["bytes"], 1000);
}

TEST_F(PlanIo, TimelineNamesBackwardOps) {
  Prepare(true);
  const Json t = TimelineJson(problem_, cluster_, plan_);
  std::set<std::string> names;
  for (const Json& e : t["traceEvents"]) {
    if (e["ph"] == "X") names.insert(e["name"].get<std::string>());
  }
  int backward = 0;
  for (const OpRecord& r : plan_.sim.op_records) {
    if (!r.backward) continue;
    ++backward;
    EXPECT_TRUE(names.count(problem_.names[r.op] + " (backward)"))
        << problem_.names[r.op];
  }
  EXPECT_GE(backward, 3);  // conv, relu and fc have a backward pass
  EXPECT_TRUE(names.count("fc (backward)"));
}

TEST_F(PlanIo, DotColoursEveryOpByItsDevice) {
  Prepare(false);
  std::ostringstream out;
  WritePlanDot(problem_, cluster_, plan_, out);
  const std::string dot = out.str();
  EXPECT_THAT(dot, HasSubstr("digraph"));
  EXPECT_THAT(dot, HasSubstr("subgraph cluster_legend"));
  for (const std::string& name : problem_.names) {
    EXPECT_THAT(dot, HasSubstr("\\n" + name + "\"")) << name;
  }
  // Two devices, two colours, each used by the legend and its ops.
  const std::string colour0 = "fillcolor=\"#77AADD\"";
  const std::string colour1 = "fillcolor=\"#EE8866\"";
  auto count = [&](const std::string& s) {
    int n = 0;
    for (size_t p = dot.find(s); p != std::string::npos;
         p = dot.find(s, p + 1)) {
      ++n;
    }
    return n;
  };
  EXPECT_EQ(count(colour0), 1 + 2);
  EXPECT_EQ(count(colour1), 1 + 2);
  EXPECT_THAT(dot, HasSubstr("n0 -> n1;"));  // const -> conv, same device
  EXPECT_THAT(dot, HasSubstr("n1 -> n2 [penwidth=2"));  // across devices
  EXPECT_THAT(dot, HasSubstr("n2 -> n3;"));
}

int Count(const std::string& text, const std::string& s) {
  int n = 0;
  for (size_t p = text.find(s); p != std::string::npos;
       p = text.find(s, p + 1)) {
    ++n;
  }
  return n;
}

TEST_F(PlanIo, HtmlReportShowsTheSummaryTimelineTransfersAndGraph) {
  Prepare(false);
  std::ostringstream out;
  WritePlanHtml(problem_, cluster_, plan_, {"m.onnx", 8}, {"chosen by hand"},
                out);
  const std::string html = out.str();
  const Json j = PlanJson(problem_, cluster_, plan_, {"m.onnx", 8});
  EXPECT_THAT(html, HasSubstr("<!DOCTYPE html>"));
  EXPECT_THAT(html, HasSubstr("chosen by hand"));
  EXPECT_THAT(html, HasSubstr("placed by hand"));
  EXPECT_THAT(html, HasSubstr("data-step-time-ms=\"" +
                              j["step_time_ms"].dump() + "\""));
  // Four lanes: two devices and the link that carried t1.
  for (const char* lane : {">node0/gpu0 (test-gpu)<", ">node0/gpu1 (test-gpu)<",
                           ">node0/gpu0 -&gt; node0/gpu1<"}) {
    EXPECT_THAT(html, HasSubstr(lane)) << lane;
  }
  EXPECT_THAT(html, HasSubstr("<table id=\"transfers\"><caption>1 transfers"));
  EXPECT_THAT(html, HasSubstr("<tr><td>t1</td><td>node0/gpu0</td>"
                              "<td>node0/gpu1</td>"));
  // Every op in the graph, in its device's colour; one edge crosses devices.
  EXPECT_THAT(html, HasSubstr("fill=\"#77AADD\" stroke=\"#333333\" "
                              "stroke-width=\"0.5\"><title>conv (Conv) on "
                              "node0/gpu0</title>"));
  EXPECT_THAT(html, HasSubstr("fill=\"#EE8866\" stroke=\"#333333\" "
                              "stroke-width=\"0.5\"><title>fc (Gemm) on "
                              "node0/gpu1</title>"));
  EXPECT_EQ(Count(html, "stroke=\"#CC3311\" stroke-width=\"1.5\""), 1);
  EXPECT_EQ(Count(html, "http"), 0);
  for (const char* id : {"zoom-in", "zoom-out", "zoom-reset"}) {
    EXPECT_THAT(html, HasSubstr("id=\"" + std::string(id) + "\" aria-label="))
        << id;
  }
}

// A chain longer than the graph cap: the picture stops at the cap and says
// so, and names are escaped.
TEST_F(PlanIo, HtmlReportCapsTheGraphAndEscapesNames) {
  const size_t n = kReportGraphOps + 5;
  ProblemBuilder b(1, {0}, false);
  uint32_t prev = b.AddTensor("x", 4, TensorRole::kInput);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t next = b.AddTensor("t" + std::to_string(i), 4,
                                      TensorRole::kActivation, i + 1 == n);
    const double f[] = {1e-6};
    const uint32_t ins[] = {prev};
    const uint32_t outs[] = {next};
    b.AddOp("<op" + std::to_string(i) + "&>", "Relu", f, {}, ins, outs);
    prev = next;
  }
  problem_ = std::move(b).Build().value();
  cluster_ = testing::UniformCluster(1, 1 << 20);
  plan_.placement.device.assign(n, 0);
  plan_.sim = Simulate(problem_, cluster_, plan_.placement,
                       SimOptions{.microbatches = 1, .record_ops = true});
  std::ostringstream out;
  WritePlanHtml(problem_, cluster_, plan_, {"chain.onnx", 1}, {}, out);
  const std::string html = out.str();
  EXPECT_THAT(html, HasSubstr("The graph draws the first " +
                              std::to_string(kReportGraphOps) + " of " +
                              std::to_string(n) + " ops"));
  EXPECT_THAT(html, HasSubstr("&lt;op0&amp;&gt; (Relu) on node0/gpu0"));
  EXPECT_THAT(html, Not(HasSubstr("<op0&>")));
  EXPECT_THAT(html, HasSubstr("No transfers"));
}

}  // namespace
}  // namespace tessera::placer
