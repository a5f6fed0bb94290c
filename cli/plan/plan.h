#ifndef TESSERA_CLI_PLAN_PLAN_H_
#define TESSERA_CLI_PLAN_PLAN_H_

#include <optional>
#include <string>
#include <vector>

namespace tessera::cli {

struct PlanArgs {
  std::string model;
  std::string cluster;       // --cluster: spec path; "" = built-in default
  std::string devices_yaml;  // --devices: extra/overriding catalog entries
  std::vector<std::string> inputs;  // NAME=DIMS
  std::optional<long long> batch;
  std::string float_type;  // "" = as exported
  bool train = false;
  std::string optimizer = "adam";
  // --runtime: what runs the parts (pytorch, onnxruntime or none: the
  // operator roofline); "" = pytorch when every device is a GPU.
  std::string runtime;
  std::string amp;            // --amp: bf16 or fp16 autocast (with a runtime)
  std::string algo = "auto";  // an algorithm name or "all"
  int microbatches = 1;
  bool coplace = false;
  bool no_fuse = false;
  std::optional<double> ilp_time_limit_s;
  std::optional<double> headroom;  // allocator fragmentation of whole GPUs
  std::string output;              // -o: plan.json
  std::string timeline;            // --timeline: Chrome trace JSON
  std::string dot;                 // --dot: Graphviz
  std::string html;                // --html: the report page
  bool json = false;
  // --cost-graph: a graph given by its costs instead of `model`
  // (plan_cost_graph.cc).
  std::string cost_graph;
};

// `tessera plan`: places a model's operators over a cluster's residual
// capacity and prints the plan. Returns the process exit code.
int RunPlan(const PlanArgs& args);
// `tessera plan --cost-graph FILE.json`: the max-load inputs of Tarnawski
// et al. (placer/maxload/max_load.h), placed by the exact contiguous DP.
int RunPlanCostGraph(const PlanArgs& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_PLAN_PLAN_H_
