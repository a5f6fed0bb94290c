#include "cli/plan/plan_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::cli {
namespace {

constexpr const char* kPlanExamples = R"(
Examples:
  tessera plan models/zoo/inception_v3.onnx                 # built-in default cluster
  tessera plan models/zoo/vit_b_16.onnx --batch 32 --amp bf16   # bf16 autocast, PyTorch eager
  tessera plan models/zoo/resnet50.onnx --runtime none      # the operator roofline alone
  tessera plan model.onnx --cluster cluster.yaml --batch 64 --train -o plan.json
  tessera plan model.onnx --cluster cluster.yaml --algo m-sct --timeline step.json
  tessera plan model.onnx --cluster cluster.yaml --algo all  # every algorithm, side by side
  tessera plan models/zoo/gpt2.onnx --cluster models/clusters/two_nodes.yaml \
      --algo pipeline --microbatches 8 --dot plan.dot
  tessera plan models/zoo/mobilenet_v2.onnx --html plan.html  # one page: open in a browser
  tessera plan --cost-graph data/dnn-partitioning/throughput-inputs/LayerGraphs/resnet50_inference.json --json
  tessera profile models/zoo/resnet50.onnx --cost-graph g.json && tessera plan --cost-graph g.json

Cluster: --cluster FILE is a YAML spec of nodes, GPUs (catalog kind, with
the memory_free and compute_share left on each) and links
(models/clusters/example.yaml, docs/cluster.md); without it, one node with
four a100-80gb over NVLink. Algorithms: single, m-topo, m-etf, m-sct,
pipeline, ilp, auto (the default: runs the fast ones, and ilp on small
graphs, and keeps the shortest step), or all.
Every plan is judged by the same simulator: step time, per-device peak
memory, transfers. With --algo all, -o/--timeline/--dot/--html describe the
plan with the shortest step. --timeline writes Chrome Trace Event JSON (open
it in ui.perfetto.dev or chrome://tracing). --html writes one self-contained
page (summary, devices, zoomable timeline, transfers, graph by device;
docs/plan_report.md) that opens offline in any browser.
Exit codes: 0 success, 2 bad input (the message names the file and what is
wrong), 3 infeasible (how many bytes are missing), 1 internal error.)";

constexpr const char* kSplitExamples = R"(
Examples:
  tessera plan model.onnx --cluster cluster.yaml -o plan.json
  tessera split model.onnx --plan plan.json -o parts/
  tessera split model.onnx --plan plan.json -o parts/ --force --json
  tessera split model.onnx --plan plan.json -o parts/ --dot parts.dot
  dot -Tsvg parts.dot -o parts.svg             # the DAG of parts, by device
  tessera split paddleocr_det.onnx --plan plan.json -o parts/ \
      --input x=1x3x640x640       # bind symbolic inputs: sizes in the manifest

Writes DIR/part_0.onnx ... part_K.onnx (one ONNX model per part, in
execution order; a device can hold several parts when the plan's device
graph has a cycle), DIR/manifest.json (each part's device, inputs and
outputs, the transfers between parts with their sizes, the order to run
them) and DIR/device_map.json (PyTorch module paths -> devices, for models
exported from PyTorch). Weights stored as external data stay in their file:
the parts read it through a hard link in DIR, nothing is copied. Every part
is checked with ONNX's checker.
Exit codes: 0 success, 2 bad input (a plan that does not match the model,
a device listed twice, a non-empty DIR without --force), 1 internal error.)";

}  // namespace

void AddPlan(CLI::App& app, PlanArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Split a model across a cluster's residual GPU capacity: which "
      "operator runs where, memory per GPU, predicted step time");
  cmd->footer(kPlanExamples);
  cmd->add_option("model", args.model, "ONNX model file");
  cmd->add_option("--cost-graph", args.cost_graph,
                  "Instead of a model, a graph given by its costs: "
                  "tessera's cost graph (docs/cost_graph.md; tessera profile "
                  "--cost-graph writes one) or the max-load inputs of "
                  "Tarnawski et al. (NeurIPS'20; docs/placer_max_load.md), "
                  "placed exactly over contiguous splits")
      ->type_name("FILE.json");
  cmd->add_option("--cluster", args.cluster,
                  "Cluster spec YAML (default: one node, 4x a100-80gb)")
      ->type_name("FILE");
  cmd->add_option("--devices", args.devices_yaml,
                  "YAML file adding or overriding catalog devices")
      ->type_name("FILE");
  cmd->add_option("--batch", args.batch, "Set the batch dimension")
      ->type_name("N");
  cmd->add_option("--input", args.inputs,
                  "Bind an input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_option("--float-type", args.float_type,
                  "Re-type float tensors: fp32, fp16 or bf16")
      ->type_name("T");
  cmd->add_flag("--train", args.train,
                "Training step: forward, backward and optimizer");
  cmd->add_option("--optimizer", args.optimizer,
                  "adam, sgd, sgd-momentum or none (with --train)")
      ->capture_default_str();
  cmd->add_option("--runtime", args.runtime,
                  "What runs the parts: pytorch (eager; the default on GPUs, "
                  "as the queue assumes), onnxruntime, or none (the "
                  "operator roofline)")
      ->type_name("NAME");
  cmd->add_option("--amp", args.amp,
                  "Autocast under the runtime: bf16 or fp16 (weights fp32)")
      ->type_name("T");
  cmd->add_option("--algo", args.algo,
                  "single, m-topo, m-etf, m-sct, pipeline, ilp, auto or all")
      ->type_name("NAME")
      ->capture_default_str();
  cmd->add_option("--microbatches", args.microbatches,
                  "Microbatches of a pipelined schedule (pipeline)")
      ->type_name("M")
      ->capture_default_str();
  cmd->add_flag("--coplace", args.coplace,
                "Co-place an operator with its only successor before m-topo, "
                "m-etf and m-sct (Baechi's reduction; off by default)");
  cmd->add_flag("--no-fuse", args.no_fuse,
                "Skip fusing operators that read the same weight");
  cmd->add_option("--ilp-time-limit", args.ilp_time_limit_s,
                  "Seconds the ILP solver may take (default 10)")
      ->type_name("S");
  cmd->add_option("--headroom", args.headroom,
                  "Allocator fragmentation kept free on whole GPUs, as a "
                  "fraction of their memory (default 0.08)")
      ->type_name("FRACTION");
  cmd->add_option("-o,--output", args.output, "Write plan.json to FILE")
      ->type_name("FILE");
  cmd->add_option("--timeline", args.timeline,
                  "Write the simulated step as a Chrome trace to FILE")
      ->type_name("FILE");
  cmd->add_option("--dot", args.dot,
                  "Write the graph coloured by device (Graphviz) to FILE")
      ->type_name("FILE");
  cmd->add_option("--html", args.html,
                  "Write a self-contained HTML report of the plan to FILE "
                  "(summary, timeline, transfers, graph by device)")
      ->type_name("FILE");
  cmd->add_flag("--json", args.json,
                "Print the plan JSON on stdout instead of the tables");
}

void AddSplit(CLI::App& app, SplitArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "split",
      "Turn a plan into runnable per-GPU ONNX sub-models, a manifest and a "
      "PyTorch-style device map");
  cmd->footer(kSplitExamples);
  cmd->add_option("model", args.model, "ONNX model file")->required();
  cmd->add_option("--plan", args.plan, "plan.json written by `tessera plan -o`")
      ->type_name("FILE")
      ->required();
  cmd->add_option("-o,--output", args.output, "Directory for the parts")
      ->type_name("DIR")
      ->required();
  cmd->add_option("--batch", args.batch,
                  "Set the batch dimension (fixes the parts' batch too)")
      ->type_name("N");
  cmd->add_option("--input", args.inputs,
                  "Bind an input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_flag("--force", args.force,
                "Write into a non-empty DIR, replacing its parts, manifest "
                "and device map");
  cmd->add_flag("--no-check", args.no_check,
                "Skip ONNX's checker on the parts");
  cmd->add_option("--dot", args.dot,
                  "Write the parts and their transfers (Graphviz) to FILE")
      ->type_name("FILE");
  cmd->add_flag("--json", args.json,
                "Print the manifest, device map and files as JSON");
}

}  // namespace tessera::cli
