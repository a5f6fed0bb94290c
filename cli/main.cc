// The `tessera` executable: argument parsing only; each command's work and
// printing lives in its own file. CLI11 is included here and nowhere else
// (it costs ~4 s per translation unit).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/inspect.h"
#include "cli/output.h"
#include "cli/plan.h"
#include "cli/profile.h"
#include "cli/queue_commands.h"
#include "cli/serve.h"
#include "cli/simulate.h"
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

void AddPlan(CLI::App& app, tessera::cli::PlanArgs& args) {
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

constexpr const char* kServeExamples = R"(
Examples:
  tessera serve --config examples/serve.yaml --db demo.db --listen 127.0.0.1:8471
  tessera serve --config cluster.yaml          # db and address from the config
  tessera serve --config examples/serve-k8s.yaml --k8s-extender
                               # also kube-scheduler's extender at /k8s/
                               # (examples/kube-scheduler-extender.yaml)

The configuration (examples/serve.yaml is a commented example) names the
pools and their policies, the nodes and GPUs, and the users with the
SHA-256 of their tokens. Runs until SIGINT or SIGTERM; running jobs keep
running and are re-adopted when the service starts again on the same db.
Exit codes: 0 stopped cleanly, 2 bad configuration or address, 1 internal
error.)";

void AddServe(CLI::App& app, tessera::cli::ServeArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the job queue service: packs jobs onto fractions of GPUs, serves "
      "the HTTP API the client commands use");
  cmd->footer(kServeExamples);
  cmd->add_option("--config", args.config, "Service configuration YAML")
      ->type_name("FILE")
      ->required();
  cmd->add_option("--db", args.db, "SQLite database (overrides the config)")
      ->type_name("PATH");
  cmd->add_option("--listen", args.listen,
                  "Address to serve on (overrides the config; port 0: any)")
      ->type_name("HOST:PORT");
  cmd->add_flag("--k8s-extender", args.k8s_extender,
                "Also serve the kube-scheduler extender endpoints "
                "(/k8s/filter, /k8s/prioritize, /k8s/bind)");
}

constexpr const char* kSimulateExamples = R"(
Examples:
  tessera simulate --nodes data/openb/openb_node_list_gpu_node.csv \
                   --pods data/openb/openb_pod_list_default.csv \
                   --policy fgd --seeds 10 --json
  tessera simulate --nodes N.csv --pods P.csv --policy all --plot alloc.svg
  tessera simulate --nodes N.csv --pods P.csv --mode timed --policy tessera \
                   --queue-policy all --cluster-fraction 0.02 --plot util.svg
  tessera simulate --nodes N.csv --pods P.csv --mode timed --policy fgd \
                   --cluster-fraction 0.05 --load 4 --model-pods 20 \
                   --interference 0.5      # fixed vs tessera for model pods
  tessera simulate --nodes N.csv --pods P.csv --mode timed --policy fgd \
                   --cluster-fraction 0.02 --load 2 --elastic 100
                                           # gang-only vs elastic, same arrivals
  tessera simulate --mode models --config examples/serve.yaml --jobs 200 \
                   --duration lognormal:7.0,1.0 --sharing mps
  tessera simulate --mode models --interference-sweep 0,0.25,0.5,1
  tessera simulate --mode models --elastic 50 --elastic-workers 1:4
                                           # sweeps: gang vs elastic

Modes: snapshot (default) replays the ATC'23 experiment: pods arrive in a
seeded shuffle of the list, then drawn with replacement, until their GPU
requests reach --inflation % of capacity; they never leave; one that fits
nowhere fails. The GPU allocation ratio is read when the arrived requests
reach 80, 90, 100, 110 and 120% of capacity. timed: pods arrive at their
creation_time, leave after their duration and wait in a queue policy
(fifo, backfill, priority, fair-share); with --model-pods, some declare
a model and are admitted by their request (fixed) or by the split-or-wait
decision (tessera). models: training jobs from the model
zoo arriving as a Poisson process under three admissions (whole GPUs,
fractions, fractions plus splitting); co-located jobs slow each other as
measured on an H100 (--sharing timeslice or mps), or by a linear law
(--interference).
Policies are the queue service's scorers (`scorer:` in the serve config):
random, best-fit, dot-product, gpu-packing, gpu-clustering, fgd (the
published ones), tessera (ours), worst-fit, first-fit; all = the first
seven. Exit codes: 0 success, 2 bad input (a file, column or flag; the
message names it), 1 internal error.)";

void AddSimulate(CLI::App& app, tessera::cli::SimulateArgs& args) {
  // tessera: long-table (the option list of simulate, one option a statement)
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Replay a cluster trace (or model jobs) on the queue's own admission "
      "code: allocation, fragmentation and queueing per placement policy");
  cmd->footer(kSimulateExamples);
  cmd->add_option("--mode", args.mode, "snapshot, timed or models")
      ->capture_default_str();
  cmd->add_option("--nodes", args.nodes, "openb node list CSV")
      ->type_name("FILE");
  cmd->add_option("--pods", args.pods, "openb pod list CSV")->type_name("FILE");
  cmd->add_option("--policy", args.policy,
                  "Placement policy (scorer), a comma list, or all")
      ->type_name("NAME")
      ->capture_default_str();
  cmd->add_option("--seeds", args.seeds,
                  "snapshot, models: runs with seeds first-seed, +1, ... "
                  "(timed: one run, seed first-seed)")
      ->capture_default_str();
  cmd->add_option("--first-seed", args.first_seed, "The first seed")
      ->capture_default_str();
  cmd->add_option("--inflation", args.inflation_pct,
                  "snapshot: arrivals stop when requests reach this % of "
                  "the GPU capacity")
      ->type_name("PCT")
      ->capture_default_str();
  cmd->add_option("--threads", args.threads,
                  "Seeds run in parallel on this many threads (0: one per "
                  "core)")
      ->capture_default_str();
  cmd->add_flag("--strict", args.strict,
                "Fail on a bad CSV row or a pod no node could ever hold "
                "(else: skip or count it, with a warning)");
  cmd->add_flag("--json", args.json, "Print one JSON object on stdout");
  cmd->add_option("--plot", args.plot,
                  "Write a chart (SVG): allocation against arrived load, or "
                  "utilization over time (timed, models)")
      ->type_name("FILE.svg");
  cmd->add_option("--queue-policy", args.queue_policy,
                  "timed: fifo, backfill, priority, fair-share or all")
      ->capture_default_str();
  cmd->add_option("--load", args.load,
                  "timed: arrivals F times faster (offered load x F); "
                  "durations stay")
      ->type_name("F")
      ->capture_default_str();
  cmd->add_option("--cluster-fraction", args.cluster_fraction,
                  "timed: replay on a seeded sample of this fraction of the "
                  "nodes, at least one node per GPU model")
      ->type_name("F")
      ->capture_default_str();
  cmd->add_option("--model-pods", args.model_pods,
                  "timed: this % of the GPU pods declare a model: they slow "
                  "down when sharing a GPU and may be admitted by the "
                  "split-or-wait decision")
      ->type_name("PCT")
      ->capture_default_str();
  cmd->add_option("--admission", args.admission,
                  "timed, with --model-pods: fixed (their request), tessera "
                  "(the decision) or both (default)")
      ->type_name("MODE");
  cmd->add_option("--teams", args.teams,
                  "timed: split the pods into N teams by FNV-1a 64 of their "
                  "name (fair-share's accounts; per-team waits)")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_option("--quotas", args.quotas,
                  "timed, with --teams: none, equal (each team guaranteed "
                  "1/N of the GPUs, idle quota lent and reclaimed), "
                  "gpu-hours (guarantees by each team's share of the "
                  "trace's GPU-hours), both (none,equal) or a comma list")
      ->type_name("MODE")
      ->capture_default_str();
  cmd->add_option("--elastic", args.elastic,
                  "timed: this % of the multi-GPU pods (by name) are elastic "
                  "jobs (--elastic-min to their GPUs); models: this % of the "
                  "jobs that fit one GPU are data-parallel sweeps "
                  "(--elastic-workers); prints gang-only vs elastic on the "
                  "same arrivals")
      ->type_name("PCT")
      ->capture_default_str();
  cmd->add_option("--elastic-min", args.elastic_min,
                  "timed, with --elastic: an elastic pod's min workers")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_option("--elastic-workers", args.elastic_workers,
                  "models, with --elastic: a sweep's workers MIN:MAX (MAX "
                  "replicas, one whole GPU each; elastic from MIN)")
      ->type_name("MIN:MAX")
      ->capture_default_str();
  cmd->add_option("--elastic-efficiency", args.elastic_efficiency,
                  "timed and models, with --elastic: speedup of k workers is "
                  "1 + (k-1) x E (1: linear)")
      ->type_name("E")
      ->capture_default_str();
  cmd->add_option("--team-split", args.team_split,
                  "timed, with --teams: hash (FNV-1a 64 of the pod name, the "
                  "same mix per team) or skewed (fractional-GPU pods to the "
                  "first half of the teams, whole-GPU pods to the rest)")
      ->type_name("SPLIT")
      ->capture_default_str();
  cmd->add_option("--config", args.config,
                  "models: the serve configuration whose cluster the jobs "
                  "run on")
      ->type_name("FILE")
      ->capture_default_str();
  cmd->add_option("--pool", args.pool,
                  "models: the serve config's pool the jobs go to (default: "
                  "the first)")
      ->type_name("POOL");
  cmd->add_option("--models", args.models,
                  "models: ONNX files to draw jobs from (default: "
                  "models/zoo/*.onnx)")
      ->type_name("FILE")
      ->delimiter(',');
  cmd->add_option("--jobs", args.jobs, "models: jobs generated")
      ->capture_default_str();
  cmd->add_option("--arrival-rate", args.arrival_per_hour,
                  "models: Poisson arrivals per hour")
      ->type_name("PER_HOUR")
      ->capture_default_str();
  cmd->add_option("--duration", args.duration,
                  "models: run time alone, in seconds: lognormal:MU,SIGMA, "
                  "exp:MEAN, uniform:LO,HI or fixed:S")
      ->type_name("DIST")
      ->capture_default_str();
  cmd->add_option("--batches", args.batches,
                  "models: training batch sizes drawn from")
      ->type_name("B,B,...")
      ->delimiter(',');
  cmd->add_option("--sharing", args.sharing,
                  "models, timed: how jobs share a GPU, for the co-location "
                  "slowdown measured on an H100: timeslice (default) or mps")
      ->type_name("MODE");
  cmd->add_option("--interference", args.interference,
                  "models, timed: instead of the measured slowdown, a linear "
                  "law: "
                  "time x (1 + F (k - 1)) with k jobs on a GPU")
      ->type_name("F");
  cmd->add_option("--interference-sweep", args.interference_sweep,
                  "models: several linear factors, compared side by side")
      ->type_name("F,F,...")
      ->delimiter(',');
}

constexpr const char* kClientFooter = R"(
The service is found at --url or $TESSERA_URL (default
http://127.0.0.1:8471); the token comes from --token or $TESSERA_TOKEN.
Exit codes: 0 success, 2 the service refused the request (the message is
the server's), 1 server error or no service at the URL.)";

void AddClientOptions(CLI::App* cmd, tessera::cli::ClientArgs& args,
                      bool json = true) {
  cmd->add_option("--url", args.url, "The service's URL (default $TESSERA_URL)")
      ->type_name("URL");
  cmd->add_option("--token", args.token,
                  "Bearer token (default $TESSERA_TOKEN)")
      ->type_name("TOKEN");
  if (json) cmd->add_flag("--json", args.json, "Print the API's JSON");
}

void AddSubmit(CLI::App& app, tessera::cli::SubmitArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "submit",
      "Queue a job: whole GPUs, a fraction of one, or a model the "
      "estimator sizes (split over GPUs when it fits no one GPU)");
  cmd->footer(std::string(R"(
Examples:
  tessera submit --gpu-milli 250 --gpu-memory 8GiB -- python train.py --lr 3e-4
  tessera submit --gpus 2 --cpu-milli 8000 --memory 64GiB --pool a100 -- ./run.sh
  tessera submit --model models/zoo/gpt2.onnx --batch 8 --train --pool a100 -- python train_gpt2.py
  tessera submit --model models/zoo/resnet50.onnx --batch 32 --train --steps 20000 -- python train.py
  tessera submit --model-path /srv/models/gpt2.onnx --batch 8 -- python train_gpt2.py
  tessera submit --name sweep-3 --priority 5 --preemptible --time-limit 600 \
      --env SEED=3 --gpu-milli 500 --gpu-memory 12GiB --json -- python sweep.py
  tessera submit --gpus 1:8 -- python elastic_train.py     # elastic: 1 to 8 GPUs
  tessera submit --workers 2:16 --gpu-milli 250 --gpu-memory 4GiB \
      --elastic-mode one-process -- python hpo.py          # docs/elastic.md
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("--name", args.name, "A name for people")->type_name("NAME");
  cmd->add_option("--pool", args.pool, "Resource pool (default: the first)")
      ->type_name("POOL");
  cmd->add_option("--queue", args.queue,
                  "The queue of the queue tree (default: your user's, else "
                  "your team's; docs/quotas.md)")
      ->type_name("Q");
  cmd->add_option("--priority", args.priority,
                  "Higher runs first in a priority pool")
      ->type_name("K");
  cmd->add_flag("--preemptible", args.preemptible,
                "May be stopped (and requeued) for higher-priority jobs");
  cmd->add_option("--gpus", args.gpus,
                  "Whole GPUs on one node; MIN:MAX: an elastic job that "
                  "starts with MIN and grows to MAX (docs/elastic.md)")
      ->type_name("N|MIN:MAX");
  cmd->add_option("--workers", args.workers,
                  "An elastic job of MIN to MAX workers, each a --gpu-milli "
                  "share of its own GPU")
      ->type_name("MIN:MAX");
  cmd->add_option("--elastic-mode", args.elastic_mode,
                  "An elastic job's processes: one-process (default: it "
                  "manages its workers) or per-worker")
      ->type_name("MODE");
  cmd->add_option("--gpu-milli", args.gpu_milli,
                  "Compute share of one GPU, 1..1000 (with --gpu-memory)")
      ->type_name("M");
  cmd->add_option("--gpu-memory", args.gpu_memory,
                  "GPU memory of the share, e.g. 8GiB")
      ->type_name("SIZE");
  cmd->add_option("--cpu-milli", args.cpu_milli, "CPU, 1000 = one core")
      ->type_name("C");
  cmd->add_option("--memory", args.memory, "Host memory, e.g. 16GiB")
      ->type_name("SIZE");
  cmd->add_option("--model", args.model,
                  "ONNX model the service sizes the job by: uploaded "
                  "without its weights (which sizing does not need)")
      ->type_name("FILE");
  cmd->add_option("--model-path", args.model_path,
                  "Or a model file on the service's machine, under its "
                  "model_roots")
      ->type_name("PATH");
  cmd->add_option("--batch", args.batch, "Batch of the model job")
      ->type_name("B");
  cmd->add_flag("--train", args.train, "The model job trains (else infers)");
  cmd->add_option("--dtype", args.dtype, "fp32, fp16 or bf16 (model jobs)")
      ->type_name("T");
  cmd->add_option("--input", args.inputs,
                  "Bind a model input's shape, NAME=DxDxD (repeatable)")
      ->type_name("NAME=DIMS");
  cmd->add_flag("--no-split", args.no_split,
                "Never split the model job over several GPUs");
  cmd->add_option("--time-limit", args.time_limit_s,
                  "Expected run time in seconds (lets backfill start it "
                  "early)")
      ->type_name("S");
  cmd->add_option("--steps", args.steps,
                  "A model job's work: steps, each the estimator's step on "
                  "one whole GPU (the split-or-wait decision predicts its "
                  "end from it; else --time-limit, else the service's "
                  "model_default_work_s)")
      ->type_name("N");
  cmd->add_option("--env", args.env,
                  "Environment variable for the job (repeatable)")
      ->type_name("K=V");
  cmd->add_option("command", args.command, "The job's command, after --")
      ->required();
}

void AddProgress(CLI::App& app, tessera::cli::ProgressArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "progress",
      "Report a running job's steps done (the service measures its step "
      "time, predicts its end and calibrates the interference factor)");
  cmd->footer(std::string(R"(
Examples:
  tessera progress 42 1500          # job 42 has done 1500 steps in all
  tessera progress "$TESSERA_JOB_ID" "$STEP" --json   # from inside the job
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("id", args.id, "Job id")->required();
  cmd->add_option("steps", args.steps, "Steps done in all")->required();
}

void AddJobs(CLI::App& app, tessera::cli::JobsArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "jobs", "The queue: every job, its state and which GPUs it holds");
  cmd->footer(std::string(R"(
Examples:
  tessera jobs
  tessera jobs --state running --pool a100
  tessera jobs --user alice --limit 20 --json
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("--state", args.state,
                  "queued, running, succeeded, failed, cancelled or "
                  "preempted")
      ->type_name("S");
  cmd->add_option("--user", args.user, "Only this user's jobs")->type_name("U");
  cmd->add_option("--pool", args.pool, "Only this pool's jobs")->type_name("P");
  cmd->add_option("--limit", args.limit, "At most N jobs")->type_name("N");
}

void AddJob(CLI::App& app, tessera::cli::JobArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "job",
      "One job: state, resources, allocation, the plan if split, "
      "exit code");
  cmd->footer(std::string(R"(
Examples:
  tessera job 42
  tessera job 42 --json | jq .allocation
  tessera job 42 --events            # who did what to it, and when
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("id", args.id, "Job id")->required();
  cmd->add_flag("--events", args.events,
                "The job's audit trail: every state change, who made it "
                "(user and token name, or the scheduler) and when");
}

void AddLogs(CLI::App& app, tessera::cli::LogsArgs& args) {
  CLI::App* cmd = app.add_subcommand("logs", "A job's stdout (or stderr)");
  cmd->footer(std::string(R"(
Examples:
  tessera logs 42
  tessera logs 42 --stderr --follow      # until the job ends
)") + kClientFooter);
  AddClientOptions(cmd, args.client, /*json=*/false);
  cmd->add_option("id", args.id, "Job id")->required();
  cmd->add_flag("--stderr", args.stderr_log, "The job's stderr");
  cmd->add_flag("-f,--follow", args.follow,
                "Keep printing as the job writes, until it ends");
}

void AddCancel(CLI::App& app, tessera::cli::JobArgs& args) {
  CLI::App* cmd =
      app.add_subcommand("cancel",
                         "Cancel a job: dequeue it, or stop it (SIGTERM, then "
                         "SIGKILL)");
  cmd->footer(std::string(R"(
Examples:
  tessera cancel 42
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("id", args.id, "Job id")->required();
}

void AddDrain(CLI::App& app, tessera::cli::DrainArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "drain",
      "Admins: stop admitting jobs on a node (its running jobs continue)");
  cmd->footer(std::string(R"(
Examples:
  tessera drain node1            # before maintenance
  tessera drain node1 --undo     # back in service
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("node", args.node, "Node name")->required();
  cmd->add_flag("--undo", args.undo, "Admit jobs on the node again");
}

void AddQueue(CLI::App& app, tessera::cli::QueueArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "queue",
      "Why each queued job waits: its position, the reason and the earliest "
      "start, per pool");
  cmd->footer(std::string(R"(
Examples:
  tessera queue
  tessera queue --pool a100 --user alice
  tessera queue --json | jq '.pools[].queued[] | {id, why_code, why}'

Reasons (why_code in --json): quota, decision (the split-or-wait decision
chose to wait), next_round, behind, no_room, drained, never_fits; the
earliest start ignores the jobs ahead (docs/http_api.md, "The queue").
)") + kClientFooter);
  AddClientOptions(cmd, args.client);
  cmd->add_option("--pool", args.pool, "Only this pool")->type_name("P");
  cmd->add_option("--user", args.user, "Only this user's jobs")->type_name("U");
}

void AddCluster(CLI::App& app, tessera::cli::ClientArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "cluster",
      "Every GPU: memory and compute reserved, by which jobs, "
      "per pool");
  cmd->footer(std::string(R"(
Examples:
  tessera cluster
  tessera cluster --json
)") + kClientFooter);
  AddClientOptions(cmd, args);
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
  cmd->add_flag("--skip-efficiency", args.skip_efficiency,
                "Leave out the efficiency sweep (GEMM and convolution shapes, "
                "kernel time, elementwise bandwidth, PyTorch eager dispatch)");
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
  tessera::cli::ServeArgs serve;
  AddServe(app, serve);
  tessera::cli::SubmitArgs submit;
  AddSubmit(app, submit);
  tessera::cli::JobsArgs jobs;
  AddJobs(app, jobs);
  tessera::cli::JobArgs job;
  AddJob(app, job);
  tessera::cli::ProgressArgs progress;
  AddProgress(app, progress);
  tessera::cli::LogsArgs logs;
  AddLogs(app, logs);
  tessera::cli::JobArgs cancel;
  AddCancel(app, cancel);
  tessera::cli::ClientArgs cluster;
  AddCluster(app, cluster);
  tessera::cli::QueueArgs queue;
  AddQueue(app, queue);
  tessera::cli::DrainArgs drain;
  AddDrain(app, drain);
  tessera::cli::SimulateArgs simulate;
  AddSimulate(app, simulate);
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
    if (app.got_subcommand("serve")) return tessera::cli::RunServe(serve);
    if (app.got_subcommand("submit")) return tessera::cli::RunSubmit(submit);
    if (app.got_subcommand("jobs")) return tessera::cli::RunJobs(jobs);
    if (app.got_subcommand("job")) return tessera::cli::RunJob(job);
    if (app.got_subcommand("progress")) {
      return tessera::cli::RunProgress(progress);
    }
    if (app.got_subcommand("logs")) return tessera::cli::RunLogs(logs);
    if (app.got_subcommand("cancel")) return tessera::cli::RunCancel(cancel);
    if (app.got_subcommand("cluster")) return tessera::cli::RunCluster(cluster);
    if (app.got_subcommand("queue")) return tessera::cli::RunQueue(queue);
    if (app.got_subcommand("drain")) return tessera::cli::RunDrain(drain);
    if (app.got_subcommand("simulate")) {
      return tessera::cli::RunSimulate(simulate);
    }
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
