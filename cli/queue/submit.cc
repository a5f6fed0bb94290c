// `tessera submit`: the flags checked and turned into the service's job
// request, a model stripped of its weights' data and uploaded, the job
// submitted (docs/http_api.md).

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/model_loading.h"
#include "cli/output.h"
#include "cli/queue/queue_client_internal.h"
#include "cli/queue/queue_commands.h"
#include "client/queue_client.h"
#include "common/result.h"
#include "common/units.h"
#include "graph/graph.h"
#include "scheduler/elastic.h"

namespace tessera::cli {
namespace {

using nlohmann::json;

// `tessera submit --model` keeps the values of tensors up to this size
// (shape constants, which shape inference reads) and strips the rest.
constexpr int64_t kKeptTensorBytes = 4096;
// Protobuf parses at most 2 GiB.
constexpr uintmax_t kMaxModelFileBytes = uintmax_t{2} << 30;

// ---- Building a submission -----------------------------------------------

// A size flag ("8GiB") in MiB, rounded up.
Result<int64_t> Mib(const std::string& flag, const std::string& text) {
  Result<int64_t> bytes = ParseBytes(text);
  if (!bytes) return bytes.error().WithContext(flag);
  return (*bytes + kMiB - 1) / kMiB;
}

// "N" (min == max, not elastic) or "MIN:MAX".
Result<std::pair<int, int>> Range(const std::string& flag,
                                  const std::string& text) {
  const size_t colon = text.find(':');
  const auto number = [&](const std::string& t) -> std::optional<int> {
    int v = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || ec != std::errc() || end != t.data() + t.size()) {
      return std::nullopt;
    }
    return v;
  };
  const std::optional<int> lo = number(text.substr(0, colon));
  const std::optional<int> hi =
      colon == std::string::npos ? lo : number(text.substr(colon + 1));
  if (!lo || !hi) {
    return BadInput(flag + ": '" + text + "' is not N or MIN:MAX");
  }
  return std::pair<int, int>{*lo, *hi};
}

Result<scheduler::Resources> ResourcesOf(const SubmitArgs& a,
                                         scheduler::JobRequest& j) {
  scheduler::Resources r;
  if (!a.gpus.empty() && !a.workers.empty()) {
    return BadInput(
        "--gpus MIN:MAX gives a worker a whole GPU, --workers MIN:MAX a "
        "--gpu-milli share: give one or the other");
  }
  if (!a.workers.empty()) {
    Result<std::pair<int, int>> range = Range("--workers", a.workers);
    TESSERA_RETURN_IF_ERROR(range);
    j.elastic = scheduler::ElasticRequest{range->first, range->second,
                                          scheduler::ElasticMode::kOneProcess,
                                          /*whole_gpus=*/false};
  }
  if (!a.gpus.empty()) {
    if (a.gpu_milli || !a.gpu_memory.empty()) {
      return BadInput(
          "--gpus asks for whole GPUs; --gpu-milli/--gpu-memory ask for a "
          "fraction of one: give one or the other");
    }
    Result<std::pair<int, int>> range = Range("--gpus", a.gpus);
    TESSERA_RETURN_IF_ERROR(range);
    r.gpus = range->first;
    if (a.gpus.find(':') != std::string::npos) {
      r.gpus = 1;  // a worker's GPU
      j.elastic = scheduler::ElasticRequest{range->first, range->second};
    }
  } else {
    if (!a.gpu_milli || a.gpu_memory.empty()) {
      return BadInput(
          "say what the job needs: --gpus N, --gpu-milli M with "
          "--gpu-memory SIZE, or --model PATH");
    }
    Result<int64_t> mib = Mib("--gpu-memory", a.gpu_memory);
    TESSERA_RETURN_IF_ERROR(mib);
    r.gpu_milli = *a.gpu_milli;
    r.gpu_memory_mib = *mib;
  }
  if (a.cpu_milli) r.cpu_milli = *a.cpu_milli;
  if (!a.memory.empty()) {
    Result<int64_t> mib = Mib("--memory", a.memory);
    TESSERA_RETURN_IF_ERROR(mib);
    r.memory_mib = *mib;
  }
  if (!a.elastic_mode.empty()) {
    if (!j.elastic) {
      return BadInput(
          "--elastic-mode: only for an elastic job (--gpus MIN:MAX or "
          "--workers MIN:MAX)");
    }
    const std::optional<scheduler::ElasticMode> mode =
        scheduler::ParseElasticMode(a.elastic_mode);
    if (!mode) {
      return BadInput("--elastic-mode: '" + a.elastic_mode +
                      "' must be one-process or per-worker");
    }
    j.elastic->mode = *mode;
  }
  return r;
}

// The model's bytes without the data of its large tensors (the service
// sizes a model from dims and dtypes): what `--model FILE` uploads.
Result<std::string> StrippedModel(const std::string& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec)) {
    return BadInput("--model: " + file +
                    ": no such file, or not a regular file");
  }
  const auto size = std::filesystem::file_size(file, ec);
  if (ec || size > kMaxModelFileBytes) {
    return BadInput("--model: " + file +
                    ": cannot be read, or larger than 2 GiB");
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size))) {
    return BadInput("--model: " + file + ": read error");
  }
  Result<std::string> stripped =
      graph::StripWeightData(bytes, kKeptTensorBytes);
  if (!stripped) return stripped.error().WithContext("--model: " + file);
  return stripped;
}

Result<scheduler::ModelRequest> ModelOf(const SubmitArgs& a) {
  if (!a.gpus.empty() || !a.workers.empty() || a.gpu_milli ||
      !a.gpu_memory.empty() || a.cpu_milli || !a.memory.empty()) {
    return BadInput(
        "--model sizes the job with the estimator: leave out --gpus, "
        "--gpu-milli, --gpu-memory, --cpu-milli and --memory");
  }
  if (!a.model.empty() && !a.model_path.empty()) {
    return BadInput(
        "--model uploads a local file, --model-path names one on the "
        "service's machine: give one");
  }
  scheduler::ModelRequest m;
  if (!a.model_path.empty()) {
    std::error_code ec;
    // The service reads the model: send a path that does not depend on
    // where this command runs.
    const std::filesystem::path path =
        std::filesystem::absolute(a.model_path, ec);
    m.path = ec ? a.model_path : path.lexically_normal().string();
  }
  m.train = a.train;
  if (a.batch) m.batch = *a.batch;
  m.dtype = a.dtype;
  for (const std::string& text : a.inputs) {
    Result<graph::InputBinding> binding = graph::ParseInputBinding(text);
    if (!binding) {
      Error e = binding.error();
      e.message = LoadFlagNames(e.message);
      return e;
    }
    m.inputs[binding->name] = binding->dims;
  }
  return m;
}

Result<scheduler::JobRequest> Submission(const SubmitArgs& a) {
  if (a.command.empty()) {
    return BadInput("give the job's command after --, e.g. -- python train.py");
  }
  scheduler::JobRequest j;
  j.command = a.command;
  j.name = a.name;
  j.pool = a.pool;
  j.queue = a.queue;
  if (a.priority) j.priority = *a.priority;
  j.preemptible = a.preemptible;
  j.on_oom = a.on_oom;
  j.splittable = !a.no_split;
  if (a.time_limit_s) j.time_limit_s = *a.time_limit_s;
  if (a.steps) {
    if (a.model.empty() && a.model_path.empty()) {
      return BadInput(
          "--steps: only a model job (--model or --model-path) declares its "
          "work in steps; give --time-limit instead");
    }
    if (*a.steps < 1) return BadInput("--steps: must be at least 1");
    j.work_steps = *a.steps;
  }
  for (const std::string& kv : a.env) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return BadInput("--env: '" + kv + "' is not NAME=VALUE");
    }
    j.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (!a.model.empty() || !a.model_path.empty()) {
    Result<scheduler::ModelRequest> model = ModelOf(a);
    TESSERA_RETURN_IF_ERROR(model);
    j.model = *model;
  } else {
    Result<scheduler::Resources> resources = ResourcesOf(a, j);
    TESSERA_RETURN_IF_ERROR(resources);
    j.resources = *resources;
  }
  return j;
}

// The submission tried again, with one idempotency key, while no replica
// answers or none leads (a failover: docs/operations.md, "High
// availability"): one job however many tries reach the service.
client::RetryOptions Retries() {
  client::RetryOptions retry;
  retry.idempotency_key = client::NewIdempotencyKey();
  retry.for_s = client::kSubmitRetryS;
  retry.on_retry = [](const Error& why, double wait_s) {
    std::cerr << "tessera: the service is unavailable (" << why.message
              << "); retrying in " << Fixed(wait_s, 1) << " s\n";
  };
  return retry;
}

}  // namespace

int RunSubmit(const SubmitArgs& args) {
  return Run([&]() -> Status {
    Result<scheduler::JobRequest> submission = Submission(args);
    TESSERA_RETURN_IF_ERROR(submission);
    const client::QueueClient client = Client(args.client);
    const client::RetryOptions retry = Retries();
    if (!args.model.empty()) {
      Result<std::string> stripped = StrippedModel(args.model);
      TESSERA_RETURN_IF_ERROR(stripped);
      Result<json> uploaded = client.UploadModel(*stripped, retry);
      if (!uploaded)
        return uploaded.error().WithContext("--model " + args.model);
      submission->model->upload = Str(*uploaded, "id");
    }
    Result<json> job = client.Submit(*submission, retry);
    TESSERA_RETURN_IF_ERROR(job);
    if (args.client.json) {
      PrintJson(*job);
    } else {
      std::cout << "submitted job " << Int(*job, "id") << " ("
                << Str(*job, "state") << " in pool " << Str(*job, "pool")
                << ")\n";
    }
    return {};
  });
}

}  // namespace tessera::cli
