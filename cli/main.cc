// The `tessera` executable: argument parsing only; each command's work and
// printing lives in its own file. CLI11 is included here and nowhere else
// (it costs ~4 s per translation unit).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/inspect.h"
#include "cli/output.h"
#include "cli/plan.h"
#include "cli/profile.h"
#include "cli/split.h"
#ifdef TESSERA_HAVE_CUDA
#include "cli/calibrate.h"
#endif

namespace {

constexpr const char* kInspectExamples = R"(
Examples:
  tessera inspect models/zoo/resnet50.onnx
  tessera inspect models/zoo/bert_base.onnx --input input_ids=1x128 --json
  tessera inspect models/zoo/gpt2.onnx --batch 8
  tessera inspect models/zoo/resnet50.onnx --dot resnet50.dot && dot -Tsvg -O resnet50.dot

Exit codes: 0 success, 2 bad input (the message names the file and what is
wrong), 1 internal error.)";

void AddInspect(CLI::App& app, tessera::cli::InspectArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "inspect",
      "Describe an ONNX model: nodes, edges, operators, inputs, "
      "outputs, weights and shapes");
  cmd->footer(kInspectExamples);
  cmd->add_option("model", args.model, "ONNX model file")->required();
  cmd->add_option("--input", args.inputs,
                  "Bind an input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_option("--batch", args.batch,
                  "Set the leading (batch) dimension of the batched inputs")
      ->type_name("N");
  cmd->add_flag("--json", args.json, "Print one JSON object on stdout");
  cmd->add_option("--dot", args.dot,
                  "Write the graph as Graphviz DOT to FILE ('-': stdout)")
      ->type_name("FILE");
}

constexpr const char* kProfileExamples = R"(
Examples:
  tessera profile models/zoo/resnet50.onnx --device a100-80gb --batch 32
  tessera profile models/zoo/gpt2.onnx --device h100-sxm --batch 8 --train --dtype bf16 --top 20
  tessera profile models/zoo/bert_base.onnx --device t4 --json     # every operator
  tessera profile models/zoo/vit_b_16.onnx --device l4 --csv > ops.csv
  tessera profile model.onnx --device my-gpu --devices my-devices.yaml
  tessera profile det.onnx --device cpu --input x=1x3x640x640 --calibration ort_profile.json

Calibration (--calibration): fits the per-class efficiencies and the
per-operator overhead to measured times of this model's operators (ONNX
Runtime's profile, tests/ort/run_profile.mjs, or a name,ms CSV), holding
every 4th matched operator out to report an honest error.

Memory: weights + the peak of live activations (inference), or weights +
gradients + optimizer state + activations kept for backward (--train); the
headroom for the CUDA context and fragmentation is reported apart.
Exit codes: 0 success, 2 bad input (unknown device, unbound input, ...).)";

constexpr const char* kDevicesExamples = R"(
Examples:
  tessera devices
  tessera devices --json
  tessera devices --devices models/devices.example.yaml)";

void AddProfile(CLI::App& app, tessera::cli::ProfileArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Per-operator FLOPs, bytes, memory and time of a model on "
      "one device; peak memory and whether it fits");
  cmd->footer(kProfileExamples);
  cmd->add_option("model", args.model, "ONNX model file")->required();
  cmd->add_option("--device", args.device, "Catalog device (tessera devices)")
      ->capture_default_str();
  cmd->add_option("--devices", args.devices_yaml,
                  "YAML file adding or overriding catalog devices")
      ->type_name("FILE");
  cmd->add_option("--input", args.inputs,
                  "Bind an input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_option("--batch", args.batch, "Set the batch dimension")
      ->type_name("N");
  cmd->add_flag("--train", args.train,
                "Training step: forward, backward and optimizer");
  cmd->add_option("--dtype", args.dtype,
                  "Re-type float tensors: fp32, fp16 or bf16");
  cmd->add_option("--optimizer", args.optimizer,
                  "adam, sgd, sgd-momentum or none (with --train)")
      ->capture_default_str();
  cmd->add_option("--headroom", args.headroom,
                  "Allocator fragmentation as a fraction of the model's "
                  "memory (default 0.08)")
      ->type_name("F");
  cmd->add_option("--top", args.top, "Operators listed, by time")
      ->capture_default_str();
  cmd->add_flag("--json", args.json, "One JSON object with every operator");
  cmd->add_flag("--csv", args.csv, "One CSV row per operator");
  cmd->add_option("--calibration", args.calibration,
                  "Fit the time model to this model's measured operator "
                  "times first: ONNX Runtime profile JSON or name,ms CSV")
      ->type_name("FILE");
}

void AddDevices(CLI::App& app, tessera::cli::DevicesArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "devices",
      "The device catalog: memory, peak throughput per dtype, "
      "bandwidths, and the datasheets they come from");
  cmd->footer(kDevicesExamples);
  cmd->add_option("--devices", args.devices_yaml,
                  "YAML file adding or overriding catalog devices")
      ->type_name("FILE");
  cmd->add_flag("--json", args.json, "Print the catalog as JSON");
}

constexpr const char* kPlanExamples = R"(
Examples:
  tessera plan models/zoo/inception_v3.onnx                 # built-in default cluster
  tessera plan model.onnx --cluster cluster.yaml --batch 64 --train -o plan.json
  tessera plan model.onnx --cluster cluster.yaml --algo m-sct --timeline step.json
  tessera plan model.onnx --cluster cluster.yaml --algo all  # every algorithm, side by side
  tessera plan models/zoo/gpt2.onnx --cluster models/clusters/two_nodes.yaml \
      --algo pipeline --microbatches 8 --dot plan.dot

Cluster: --cluster FILE is a YAML spec of nodes, GPUs (catalog kind, with
the memory_free and compute_share left on each) and links
(models/clusters/example.yaml, docs/cluster.md); without it, one node with
four a100-80gb over NVLink. Algorithms: single, m-topo, m-etf, m-sct,
pipeline, ilp, auto (the default: runs the fast ones, and ilp on small
graphs, and keeps the shortest step), or all.
Every plan is judged by the same simulator: step time, per-device peak
memory, transfers. With --algo all, -o/--timeline/--dot describe the plan
with the shortest step. --timeline writes Chrome Trace Event JSON (open it
in ui.perfetto.dev or chrome://tracing).
Exit codes: 0 success, 2 bad input (the message names the file and what is
wrong), 3 infeasible (how many bytes are missing), 1 internal error.)";

void AddPlan(CLI::App& app, tessera::cli::PlanArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "plan",
      "Split a model across a cluster's residual GPU capacity: which "
      "operator runs where, memory per GPU, predicted step time");
  cmd->footer(kPlanExamples);
  cmd->add_option("model", args.model, "ONNX model file")->required();
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
  cmd->add_flag("--json", args.json,
                "Print the plan JSON on stdout instead of the tables");
}

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

void AddSplit(CLI::App& app, tessera::cli::SplitArgs& args) {
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

#ifdef TESSERA_HAVE_CUDA
constexpr const char* kCalibrateExamples = R"(
Examples:
  tessera calibrate                              # YAML for GPU 0 on stdout
  tessera calibrate --gpu 1 --name my-a100 --base a100-80gb -o my-a100.yaml
  tessera profile model.onnx --devices my-a100.yaml --device my-a100
  tessera calibrate --quick --json               # the raw measurements

Measures cuBLAS GEMM throughput (fp32, tf32, fp16, bf16, int8), device
memory bandwidth, pinned host<->device and peer-to-peer transfers (fitted as
latency + bytes / bandwidth) and kernel launch overhead. Takes seconds on
a datacenter GPU, longer on small ones (--quick: smaller problems).
Exit codes: 0 success, 2 no CUDA device / bad --gpu, --name or --base,
1 a benchmark failed.)";

void AddCalibrate(CLI::App& app, tessera::cli::CalibrateArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure a GPU (GEMM throughput per dtype, memory bandwidth, "
      "transfers, launch overhead) and write a device YAML");
  cmd->footer(kCalibrateExamples);
  cmd->add_option("--gpu", args.gpu, "CUDA device index")
      ->capture_default_str();
  cmd->add_option("--name", args.name,
                  "Catalog name of the entry (default calibrated-gpuN)")
      ->type_name("NAME");
  cmd->add_option("--base", args.base,
                  "Catalog device whose figures the entry starts from")
      ->type_name("CATALOG_NAME");
  cmd->add_option("-o,--output", args.output,
                  "Write the YAML to FILE (default: stdout)")
      ->type_name("FILE");
  cmd->add_flag("--json", args.json,
                "Print the measurements (and the YAML) as JSON on stdout");
  cmd->add_flag("--quick", args.quick,
                "Smaller problems, fewer repetitions (seconds, not a minute)");
}
#endif

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "tessera: split ML models across the residual capacity of "
      "shared GPU clusters"};
  app.set_version_flag("--version", "tessera 0.1.0");
  app.require_subcommand(1);
  app.footer(
      "\nRun 'tessera COMMAND --help' for a command's options and "
      "examples.");
  tessera::cli::InspectArgs inspect;
  AddInspect(app, inspect);
  tessera::cli::ProfileArgs profile;
  AddProfile(app, profile);
  tessera::cli::DevicesArgs devices;
  AddDevices(app, devices);
  tessera::cli::PlanArgs plan;
  AddPlan(app, plan);
  tessera::cli::SplitArgs split;
  AddSplit(app, split);
#ifdef TESSERA_HAVE_CUDA
  tessera::cli::CalibrateArgs calibrate;
  AddCalibrate(app, calibrate);
#endif
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? 0 : tessera::ExitCodeFor(tessera::ErrorCode::kBadInput);
  }
  try {
    if (app.got_subcommand("inspect")) return tessera::cli::RunInspect(inspect);
    if (app.got_subcommand("profile")) return tessera::cli::RunProfile(profile);
    if (app.got_subcommand("devices")) return tessera::cli::RunDevices(devices);
    if (app.got_subcommand("plan")) return tessera::cli::RunPlan(plan);
    if (app.got_subcommand("split")) return tessera::cli::RunSplit(split);
#ifdef TESSERA_HAVE_CUDA
    if (app.got_subcommand("calibrate")) {
      return tessera::cli::RunCalibrate(calibrate);
    }
#endif
  } catch (const std::exception& e) {
    return tessera::cli::ReportError(
        tessera::Internal(std::string("unexpected failure: ") + e.what()));
  }
  return 0;
}
