#include "cli/simulate/simulate_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::cli {
namespace {

constexpr const char* kSimulateExamples = R"(
Examples:
  tessera simulate --nodes data/openb/openb_node_list_gpu_node.csv \
                   --pods data/openb/openb_pod_list_default.csv \
                   --policy fgd --seeds 10 --json
  tessera simulate --nodes N.csv --pods P.csv --policy all --plot alloc.svg
  tessera simulate --nodes N.csv --pods P.csv --policy tessera \
                   --round-pods 128 --reserve 0.0625
                                           # rounds, idle GPUs kept for whole pods
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

}  // namespace

void AddSimulate(CLI::App& app, SimulateArgs& args) {
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
  cmd->add_option("--round-pods", args.round_pods,
                  "snapshot: decide this many consecutive arrivals together, "
                  "the largest GPU request first, then each fraction placed "
                  "again smallest first (1: one at a time, as the paper)")
      ->type_name("N")
      ->capture_default_str();
  cmd->add_flag("--no-repack", args.no_repack,
                "snapshot: with --round-pods, place a round's pods largest "
                "first only (no second pass)");
  cmd->add_option("--reserve", args.reserve_share,
                  "snapshot: keep idle GPUs for whole-GPU pods: this share "
                  "of the GPUs times the whole one-GPU pods' share of the "
                  "GPU requests; a fraction that would open one of the last "
                  "ones fails (0: keep none)")
      ->type_name("SHARE")
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

}  // namespace tessera::cli
