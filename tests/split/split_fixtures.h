#ifndef TESSERA_TESTS_SPLIT_SPLIT_FIXTURES_H_
#define TESSERA_TESTS_SPLIT_SPLIT_FIXTURES_H_

// What the end-to-end split tests share: plans made at random or by the
// placer, the structural checks every split must pass, and running splits
// through ONNX Runtime (tests/ort/run_split.mjs).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "estimator/estimator.h"
#include "placer/core/cluster.h"
#include "placer/core/place.h"
#include "placer/core/problem.h"
#include "placer/report/plan_io.h"
#include "split/split.h"
#include "tests/testlib/repo_paths.h"

namespace tessera::split::testing {

using Json = nlohmann::json;

// Every node on one of `devices` devices, uniformly at random (which makes
// device cycles likely).
inline PlanAssignment RandomPlan(const graph::OpGraph& g, int devices,
                                 uint32_t seed) {
  PlanAssignment plan;
  plan.source = "random plan (seed " + std::to_string(seed) + ")";
  plan.algorithm = "random";
  for (int d = 0; d < devices; ++d) {
    plan.devices.push_back("node0/gpu" + std::to_string(d));
  }
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> pick(0, devices - 1);
  for (const std::string& name : graph::UniqueNodeNames(g)) {
    plan.placement.emplace_back(name, pick(rng));
  }
  return plan;
}

// The plan `algorithm` makes for `model` on `cluster`, through plan.json as
// `tessera plan -o` writes it and `tessera split` reads it.
// A pipeline plan uses 4 microbatches (with one it would be one stage).
inline Result<PlanAssignment> PlacerPlan(const graph::Model& model,
                                         const placer::Cluster& cluster,
                                         placer::Algorithm algorithm) {
  auto problem = placer::BuildProblem(model, cluster, {});
  if (!problem) return problem.error();
  placer::PlaceOptions options;
  options.ilp_time_limit_s = 5;
  if (algorithm == placer::Algorithm::kPipeline) options.microbatches = 4;
  auto plan = placer::Place(*problem, cluster, algorithm, options);
  if (!plan) return plan.error();
  const Json j = placer::PlanJson(*problem, cluster, *plan, {model.path, 1});
  return ParsePlan(j, std::string(placer::AlgorithmName(algorithm)));
}

// Four A100 slivers that each have `fraction` of what `model` needs on one
// device: the placer must spread it.
inline Result<placer::Cluster> TightCluster(const graph::Model& model,
                                            double fraction) {
  const auto catalog = estimator::DeviceCatalog::BuiltIn();
  const placer::Cluster roomy = placer::DefaultCluster(catalog, {});
  auto problem = placer::BuildProblem(model, roomy, {});
  if (!problem) return problem.error();
  auto single = placer::Place(*problem, roomy, placer::Algorithm::kSingle, {});
  if (!single) return single.error();
  const int64_t need = single->sim.devices.at(0).peak_bytes;
  const int64_t each =
      static_cast<int64_t>(static_cast<double>(need) * fraction);
  std::string yaml =
      "nodes:\n  - name: node0\n    interconnect: nvlink\n"
      "    gpus:\n";
  for (int d = 0; d < 4; ++d) {
    yaml += "      - {kind: a100-80gb, memory_free: " + std::to_string(each) +
            "B, compute_share: " + (d % 2 ? "0.25" : "0.5") + "}\n";
  }
  return placer::ParseCluster(yaml, "tight cluster", catalog, {});
}

// The invariants of any split: every node in one part (copied Constants
// aside), inputs available when a part runs, transfers forward, every
// original output produced.
inline void ExpectWellFormed(const graph::OpGraph& g, const Partition& p) {
  std::vector<int> seen(g.num_nodes(), 0);
  std::vector<int> produced_by(g.num_tensors(), -1);
  for (size_t i = 0; i < p.parts.size(); ++i) {
    const Part& part = p.parts[i];
    EXPECT_TRUE(std::is_sorted(part.nodes.begin(), part.nodes.end()));
    EXPECT_GT(part.ops, 0) << "part " << i;
    for (const graph::TensorId t : part.inputs) {
      const graph::TensorView v = g.tensor(t);
      if (v.kind == graph::TensorKind::kInput) continue;
      ASSERT_NE(v.producer, graph::kNoNode) << v.name;
      EXPECT_GE(produced_by[t], 0)
          << "part " << i << " reads '" << v.name << "' before it is made";
      EXPECT_LT(produced_by[t], static_cast<int>(i));
    }
    for (const graph::NodeId n : part.nodes) {
      if (p.node_part[n] >= 0) ++seen[n];
    }
    for (const graph::TensorId t : part.outputs) {
      produced_by[t] = static_cast<int>(i);
    }
  }
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    if (p.node_part[n] >= 0) {
      EXPECT_EQ(seen[n], 1) << g.node(n).name;
    }
  }
  for (const Transfer& t : p.transfers) {
    EXPECT_LT(t.from_part, t.to_part) << g.tensor(t.tensor).name;
  }
  for (const graph::TensorId t : g.outputs()) {
    // An output that is an input or initializer is passed by part 0.
    EXPECT_GE(produced_by[t], 0) << "output '" << g.tensor(t).name << "'";
  }
}

// device_map.json agrees with the plan: a node's nearest enclosing module
// in the map has the node's device; a node with no mapped enclosing module
// belongs to a module listed as split below its boundary, or whose own
// operators are listed on the node's device.
inline void ExpectDeviceMapConsistent(const graph::OpGraph& g,
                                      const Partition& partition,
                                      const Json& device_map) {
  const std::vector<int>& node_device = partition.node_device;
  const Json& map = device_map["device_map"];
  std::set<std::string> split_below;
  for (const Json& m : device_map["split_below_module"]) {
    split_below.insert(m["module"].get<std::string>());
    EXPECT_GE(m["devices"].size(), 2u) << m.dump();
  }
  std::map<std::string, int> own_ops;
  for (const Json& m : device_map["own_ops_of_split_modules"]) {
    own_ops[m["module"].get<std::string>()] = m["device"].get<int>();
  }
  for (graph::NodeId n = 0; n < g.num_nodes(); ++n) {
    // Copied nodes and Constant nodes are not in the map.
    if (partition.node_part[n] < 0 || g.node(n).op_type == "Constant") {
      continue;
    }
    bool pytorch = false;
    const std::string module = ModulePath(g.node(n).name, &pytorch);
    if (!pytorch) continue;
    std::string m = module;
    for (;;) {
      if (map.contains(m)) {
        EXPECT_EQ(map[m].get<int>(), node_device[n])
            << g.node(n).name << " in " << m;
        break;
      }
      if (m.empty()) {
        const auto own = own_ops.find(module);
        if (own != own_ops.end()) {
          EXPECT_EQ(own->second, node_device[n]) << g.node(n).name;
        } else {
          EXPECT_TRUE(split_below.count(module))
              << g.node(n).name << ": no mapped module and '" << module
              << "' is not listed as split below its boundary";
        }
        break;
      }
      const size_t dot = m.rfind('.');
      m = dot == std::string::npos ? "" : m.substr(0, dot);
    }
  }
}

inline std::string OrtDir() {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/ort";
}

// Fails (never skips) when ONNX Runtime for Node.js is not installed.
inline bool OrtInstalled() {
  const std::string marker =
      OrtDir() + "/node_modules/onnxruntime-node/package.json";
  if (std::filesystem::exists(marker) && std::string(TESSERA_NODE) != "") {
    return true;
  }
  ADD_FAILURE() << "ONNX Runtime for Node.js is missing (" << marker
                << "); run scripts/fetch_ort.sh (scripts/test.sh does)";
  return false;
}

// Runs tests/ort/run_split.mjs over `cases` (its CASES.json "cases") and
// returns RESULTS.json's "results", one per case, in order.
inline Json RunOrt(const Json& cases, const std::filesystem::path& dir) {
  const std::string cases_path = (dir / "cases.json").string();
  const std::string results_path = (dir / "results.json").string();
  std::ofstream(cases_path) << Json{{"cases", cases}}.dump(1);
  const std::string command = std::string("'") + TESSERA_NODE + "' '" +
                              OrtDir() + "/run_split.mjs' '" + cases_path +
                              "' '" + results_path + "' > '" +
                              (dir / "ort.log").string() + "' 2>&1";
  const int rc = std::system(command.c_str());
  std::ifstream log(dir / "ort.log");
  const std::string log_text((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(rc, 0) << command << "\n" << log_text;
  std::ifstream in(results_path);
  if (!in) {
    ADD_FAILURE() << "no " << results_path << "\n" << log_text;
    return Json::array();
  }
  return Json::parse(in)["results"];
}

// rel_err as the runner writes it: a number, or "inf"/"nan".
inline double RelErr(const Json& v) {
  if (v.is_number()) return v.get<double>();
  return std::numeric_limits<double>::infinity();
}

}  // namespace tessera::split::testing

#endif  // TESSERA_TESTS_SPLIT_SPLIT_FIXTURES_H_
