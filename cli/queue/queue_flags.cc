#include "cli/queue/queue_flags.h"

#include <CLI/CLI.hpp>

namespace tessera::cli {
namespace {

constexpr const char* kServeExamples = R"(
Examples:
  tessera serve --config examples/serve.yaml --db demo.db --listen 127.0.0.1:8471
  tessera serve --config cluster.yaml          # db and address from the config
  tessera serve --config examples/serve-k8s.yaml --k8s-extender
                               # also kube-scheduler's extender at /k8s/
                               # (examples/kube-scheduler-extender.yaml)
  tessera serve --config serve-ha.yaml --listen 10.0.0.1:8080 --replica r1
  tessera serve --config serve-ha.yaml --listen 10.0.0.2:8080 --replica r2
  tessera serve --config serve-ha.yaml --listen 10.0.0.3:8080 --replica r3
                               # three replicas over one PostgreSQL, one per
                               # host; one leads (examples/serve-ha.yaml)

The configuration (examples/serve.yaml is a commented example) names the
pools and their policies, the nodes and GPUs, and the users with the
SHA-256 of their tokens. Runs until SIGINT or SIGTERM; running jobs keep
running and are re-adopted when the service starts again on the same db.
Exit codes: 0 stopped cleanly, 2 bad configuration or address, 1 internal
error.)";

constexpr const char* kClientFooter = R"(
The service is found at --url or $TESSERA_URL (default
http://127.0.0.1:8471); the token comes from --token or $TESSERA_TOKEN.
Exit codes: 0 success, 2 the service refused the request (the message is
the server's), 1 server error or no service at the URL.)";

void AddClientOptions(CLI::App* cmd, ClientArgs& args, bool with_json = true) {
  cmd->add_option("--url", args.url, "The service's URL (default $TESSERA_URL)")
      ->type_name("URL");
  cmd->add_option("--token", args.token,
                  "Bearer token (default $TESSERA_TOKEN)")
      ->type_name("TOKEN");
  if (with_json) cmd->add_flag("--json", args.json, "Print the API's JSON");
}

}  // namespace

void AddServe(CLI::App& app, ServeArgs& args) {
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
  cmd->add_option("--replica", args.replica,
                  "This replica's name among those sharing the PostgreSQL "
                  "store (overrides ha.replica; default HOSTNAME:PORT)")
      ->type_name("NAME");
  cmd->add_option("--advertise", args.advertise,
                  "The URL the other replicas send clients to (overrides "
                  "ha.advertise; default http(s)://HOSTNAME:PORT)")
      ->type_name("URL");
}

void AddSubmit(CLI::App& app, SubmitArgs& args) {
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
  tessera submit --gpu-milli 250 --gpu-memory 4GiB --on-oom requeue -- python eval.py
  tessera submit --gpus 1:8 -- python elastic_train.py     # elastic: 1 to 8 GPUs
  tessera submit --workers 2:16 --gpu-milli 250 --gpu-memory 4GiB \
      --elastic-mode one-process -- python hpo.py          # docs/elastic.md

While the service cannot be reached or answers 503 (replicas changing
leader), submit tries again for up to 30 s, each time with the same
Idempotency-Key: one job however many tries reach the service.
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
  cmd->add_option("--on-oom", args.on_oom,
                  "Out of GPU memory: fail, or requeue (once, with the "
                  "reservation raised to what it was seen to need plus the "
                  "headroom); default: the pool's")
      ->type_name("fail|requeue")
      ->check(CLI::IsMember({"fail", "requeue"}));
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

void AddProgress(CLI::App& app, ProgressArgs& args) {
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

void AddJobs(CLI::App& app, JobsArgs& args) {
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
                  "queued, starting, running, succeeded, failed, oom (out "
                  "of GPU memory), cancelled or preempted")
      ->type_name("S");
  cmd->add_option("--user", args.user, "Only this user's jobs")->type_name("U");
  cmd->add_option("--pool", args.pool, "Only this pool's jobs")->type_name("P");
  cmd->add_option("--limit", args.limit, "At most N jobs")->type_name("N");
}

void AddJob(CLI::App& app, JobArgs& args) {
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

void AddLogs(CLI::App& app, LogsArgs& args) {
  CLI::App* cmd = app.add_subcommand("logs", "A job's stdout (or stderr)");
  cmd->footer(std::string(R"(
Examples:
  tessera logs 42
  tessera logs 42 --stderr --follow      # until the job ends
)") + kClientFooter);
  AddClientOptions(cmd, args.client, /*with_json=*/false);
  cmd->add_option("id", args.id, "Job id")->required();
  cmd->add_flag("--stderr", args.stderr_log, "The job's stderr");
  cmd->add_flag("-f,--follow", args.follow,
                "Keep printing as the job writes, until it ends");
}

void AddCancel(CLI::App& app, JobArgs& args) {
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

void AddDrain(CLI::App& app, DrainArgs& args) {
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

void AddQueue(CLI::App& app, QueueArgs& args) {
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

void AddCluster(CLI::App& app, ClientArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "cluster",
      "Every GPU: memory and compute reserved, by which jobs, "
      "per pool; with replicas, which one leads");
  cmd->footer(std::string(R"(
Examples:
  tessera cluster
  tessera cluster --json
  tessera cluster --json | jq .replica   # which replica leads, since when

With replicas (tessera serve --replica), the first line says which one
leads and since when, and which answered: a follower's view of the jobs
may be a moment old.
)") + kClientFooter);
  AddClientOptions(cmd, args);
}

}  // namespace tessera::cli
