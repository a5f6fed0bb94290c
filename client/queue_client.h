#ifndef TESSERA_CLIENT_QUEUE_CLIENT_H_
#define TESSERA_CLIENT_QUEUE_CLIENT_H_

// A client of the queue service's HTTP API (docs/http_api.md) over
// cpp-httplib: one call per endpoint, the service's JSON back. Errors: the
// service's refusal (4xx) is kBadInput with its message, a server error
// kInternal, no service at the URL (or a 503) kUnavailable. The CLI's submit,
// jobs, job, logs, cancel, cluster and drain are built on it; so can anyone's
// tools be. Stateless between calls; safe to use from several threads.
//
// Replicas (docs/operations.md, "High availability"): a follower answers
// what only the leader does with a 307 to the leader; every call follows
// one such redirect (same method, body and token; http(s) URLs only, never
// from https to http). Submit can try again through a failover without
// making two jobs (RetryOptions).

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "scheduler/job.h"

namespace tessera::client {

// Defaults for the URL and the token.
inline constexpr const char* kUrlEnv = "TESSERA_URL";
inline constexpr const char* kTokenEnv = "TESSERA_TOKEN";
inline constexpr const char* kDefaultUrl = "http://127.0.0.1:8471";

// GET /v1/jobs's filters ("" / 0 = any).
struct JobQuery {
  std::string state, user, pool;
  int64_t limit = 0;
};

// A piece of a job's log from `offset` on, the offset after it, and the
// job's state when it was read (a terminal job's log is whole).
struct LogChunk {
  std::string text;
  int64_t next_offset = 0;
  std::string job_state;
};

// How Submit and UploadModel try again when no service answers, or it
// answers 503 (no replica leads for a moment: a failover under way): the
// same request, with the same idempotency key, so that the service makes
// one job however many of the tries reached it.
struct RetryOptions {
  // Sent as the Idempotency-Key header (NewIdempotencyKey()); "" = none.
  // Without one, a try whose answer was lost may have made a job that the
  // next try makes again.
  std::string idempotency_key;
  // Tries again until this long has passed since the first try (0: one
  // try), waiting the service's Retry-After, else a short backoff.
  double for_s = 0;
  // Told, before each wait, why the last try failed and the wait.
  std::function<void(const Error& why, double wait_s)> on_retry;
};

// What `tessera submit` retries for: longer than a failover (the lease,
// 10 s by default, plus the new leader's recovery) mostly takes.
inline constexpr double kSubmitRetryS = 30;

// A fresh random 128-bit id, 32 lower-case hex digits: an idempotency key.
std::string NewIdempotencyKey();

class QueueClient {
 public:
  // `url` "" = $TESSERA_URL or kDefaultUrl; `token` "" = $TESSERA_TOKEN.
  QueueClient(std::string url, std::string token);

  // POST /v1/jobs: the job as accepted (JobJson); the job the key first
  // made when `retry` has an idempotency key the service saw before.
  Result<nlohmann::json> Submit(const scheduler::JobRequest& request,
                                const RetryOptions& retry = {}) const;
  // POST /v1/models: uploads an ONNX model's bytes (strip its weights
  // first: graph::StripWeightData); {"id", "bytes", "nodes"}, the id for
  // ModelRequest::upload. The id is the content's: a retry (`retry`'s
  // key is not sent) stores nothing twice.
  Result<nlohmann::json> UploadModel(const std::string& onnx_bytes,
                                     const RetryOptions& retry = {}) const;
  // GET /v1/jobs: {"jobs": [...]}.
  Result<nlohmann::json> Jobs(const JobQuery& query) const;
  // GET /v1/jobs/ID.
  Result<nlohmann::json> Job(int64_t id) const;
  // GET /v1/jobs/{id}/events: {"job": ID, "events": [...]}.
  Result<nlohmann::json> Events(int64_t id) const;
  // GET /v1/jobs/ID/logs.
  Result<LogChunk> Logs(int64_t id, bool stderr_log, int64_t offset) const;
  // POST /v1/jobs/ID/cancel: the job after the request.
  Result<nlohmann::json> Cancel(int64_t id) const;
  // POST /v1/jobs/{id}/progress: `steps` done in all.
  Result<nlohmann::json> Progress(int64_t id, int64_t steps) const;
  // GET /v1/cluster.
  Result<nlohmann::json> Cluster() const;
  // GET /v1/queue: why each queued job waits ("" = every pool).
  Result<nlohmann::json> Queue(const std::string& pool) const;
  // POST /v1/nodes/NODE/drain (or undrain).
  Result<nlohmann::json> Drain(const std::string& node, bool undo) const;

  const std::string& url() const { return url_; }

 private:
  struct Call;
  struct Reply;
  // Any answer (following a 307 once), or why none came.
  Result<Reply> Exchange(const Call& call) const;
  // A 2xx answer, or the error its status means (kUnavailable for a 503,
  // with its Retry-After in retry_after_s).
  Result<Reply> Send(const Call& call) const;
  Result<nlohmann::json> SendJson(const Call& call) const;
  // SendJson, tried again as `retry` says while it fails kUnavailable.
  Result<nlohmann::json> SendJsonRetried(const Call& call,
                                         const RetryOptions& retry) const;

  std::string url_;
  std::string token_;
};

// "true" when `state` (a JobStateName) is terminal.
bool IsTerminalStateName(const std::string& state);

}  // namespace tessera::client

#endif  // TESSERA_CLIENT_QUEUE_CLIENT_H_
