#include "cli/model/model_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::cli {
namespace {

constexpr const char* kInspectExamples = R"(
Examples:
  tessera inspect models/zoo/resnet50.onnx
  tessera inspect models/zoo/bert_base.onnx --input input_ids=1x128 --json
  tessera inspect models/zoo/gpt2.onnx --batch 8
  tessera inspect models/zoo/resnet50.onnx --dot resnet50.dot && dot -Tsvg -O resnet50.dot

Exit codes: 0 success, 2 bad input (the message names the file and what is
wrong), 1 internal error.)";

constexpr const char* kProfileExamples = R"(
Examples:
  tessera profile models/zoo/resnet50.onnx --device a100-80gb --batch 32
  tessera profile models/zoo/bert_base.onnx --device h100-sxm --runtime pytorch --batch 32 --train
  tessera profile models/zoo/vit_b_16.onnx --device h100-sxm --runtime pytorch --amp bf16 --batch 32
  tessera profile models/zoo/gpt2.onnx --device h100-sxm --batch 8 --train --dtype bf16 --top 20
  tessera profile models/zoo/bert_base.onnx --device t4 --json     # every operator
  tessera profile models/zoo/vit_b_16.onnx --device l4 --csv > ops.csv
  tessera profile model.onnx --device my-gpu --devices my-devices.yaml
  tessera profile det.onnx --device cpu --input x=1x3x640x640 --calibration ort_profile.json
  tessera profile models/zoo/resnet50.onnx --batch 32 --cost-graph resnet50.json   # then plan --cost-graph

Calibration (--calibration): fits the per-class efficiencies and the
per-operator overhead to measured times of this model's operators (ONNX
Runtime's profile, tests/ort/run_profile.mjs, or a name,ms CSV), holding
every 4th matched operator out to report an honest error.

Runtimes (--runtime pytorch|onnxruntime): the graph as the framework runs
it (fusions, copies, autocast, in-place), step time from host dispatch and
GPU kernels overlapping, memory through a caching-allocator simulation:
the live peak (totals.peak_memory_bytes) and the allocator's reserved peak
(totals.reserved_peak_bytes), which the queue reserves. Fitted on an H100
(docs/estimator.md, "Runtimes").

Memory: weights + the peak of live activations (inference), or weights +
gradients + optimizer state + activations kept for backward (--train); the
headroom for the CUDA context and fragmentation is reported apart.
Cost graph (--cost-graph FILE.json): also writes the model as tessera's
cost graph on --cluster (default: one node, 4x a100-80gb): each operator's
estimated time per device kind, memory, and the bytes between operators,
to patch measured times into and place with `tessera plan --cost-graph`
(docs/cost_graph.md).
Exit codes: 0 success, 2 bad input (unknown device, unbound input, ...).)";

constexpr const char* kDevicesExamples = R"(
Examples:
  tessera devices
  tessera devices --json
  tessera devices --devices models/devices.example.yaml)";

#ifdef TESSERA_HAVE_CUDA
constexpr const char* kCalibrateExamples = R"(
Examples:
  tessera calibrate                              # YAML for GPU 0 on stdout
  tessera calibrate --gpu 1 --name my-a100 --base a100-80gb -o my-a100.yaml
  tessera profile model.onnx --devices my-a100.yaml --device my-a100
  tessera calibrate --quick --json               # the raw measurements

Measures cuBLAS GEMM throughput (fp32, tf32, fp16, bf16, int8), device
memory bandwidth, pinned host<->device and peer-to-peer transfers (fitted as
latency + bytes / bandwidth) and kernel launch overhead. Then the efficiency
sweep (skip it with --skip-efficiency): GEMM shapes in fp32 and bf16 and,
when built with cuDNN, convolution shapes, fitted as max x W / (W + half)
of the peaks above; the GPU time of an empty kernel; an elementwise
kernel's share of the memory bandwidth; and, when python3 can import torch,
PyTorch's eager dispatch time per operator. Written as the entry's
`efficiency:` block. Takes tens of seconds on a datacenter GPU, longer on
small ones (--quick: smaller problems, fewer shapes).
Exit codes: 0 success, 2 no CUDA device / bad --gpu, --name or --base,
1 a benchmark failed.)";
#endif

}  // namespace

void AddInspect(CLI::App& app, InspectArgs& args) {
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

void AddProfile(CLI::App& app, ProfileArgs& args) {
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
  cmd->add_option("--runtime", args.runtime,
                  "What runs the model: pytorch (eager; the queue's "
                  "default), onnxruntime, or none (operators alone)")
      ->capture_default_str();
  cmd->add_option("--amp", args.amp,
                  "Autocast: bf16 or fp16 products, fp32 weights and "
                  "optimizer (with --runtime)")
      ->type_name("bf16|fp16");
  cmd->add_flag("--tf32", args.tf32,
                "fp32 products on TF32 tensor cores (with --runtime)");
  cmd->add_option("--attention", args.attention,
                  "auto, fused (scaled_dot_product_attention) or unfused "
                  "(with --runtime)")
      ->capture_default_str();
  cmd->add_option("--cost-graph", args.cost_graph,
                  "Also write the model's cost graph (tessera-cost-graph "
                  "JSON, docs/cost_graph.md) on --cluster to FILE")
      ->type_name("FILE.json");
  cmd->add_option("--cluster", args.cluster,
                  "Cluster spec YAML for --cost-graph (default: one node, "
                  "4x a100-80gb)")
      ->type_name("FILE");
}

void AddDevices(CLI::App& app, DevicesArgs& args) {
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

#ifdef TESSERA_HAVE_CUDA
void AddCalibrate(CLI::App& app, CalibrateArgs& args) {
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
  cmd->add_flag("--skip-efficiency", args.skip_efficiency,
                "Leave out the efficiency sweep (GEMM and convolution shapes, "
                "kernel time, elementwise bandwidth, PyTorch eager dispatch)");
}
#endif

}  // namespace tessera::cli
