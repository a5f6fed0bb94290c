#ifndef TESSERA_CLIENT_QUEUE_CLIENT_H_
#define TESSERA_CLIENT_QUEUE_CLIENT_H_

// A client of the queue service's HTTP API (docs/http_api.md) over
// cpp-httplib: one call per endpoint, the service's JSON back. Errors: the
// service's refusal (4xx) is kBadInput with its message, a server error
// kInternal, no service at the URL (or a 503) kUnavailable. The CLI's submit,
// jobs, job, logs, cancel, cluster and drain are built on it; so can anyone's
// tools be. Stateless between calls; safe to use from several threads.

#include <cstdint>
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

class QueueClient {
 public:
  // `url` "" = $TESSERA_URL or kDefaultUrl; `token` "" = $TESSERA_TOKEN.
  QueueClient(std::string url, std::string token);

  // POST /v1/jobs: the job as accepted (JobJson).
  Result<nlohmann::json> Submit(const scheduler::JobRequest& request) const;
  // POST /v1/models: uploads an ONNX model's bytes (strip its weights
  // first: graph::StripWeightData); {"id", "bytes", "nodes"}, the id for
  // ModelRequest::upload.
  Result<nlohmann::json> UploadModel(const std::string& onnx_bytes) const;
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
  struct Reply;
  Result<Reply> Send(const std::string& method, const std::string& path,
                     const std::string& body,
                     const char* content_type = "application/json") const;
  Result<nlohmann::json> SendJson(
      const std::string& method, const std::string& path,
      const std::string& body,
      const char* content_type = "application/json") const;

  std::string url_;
  std::string token_;
};

// "true" when `state` (a JobStateName) is terminal.
bool IsTerminalStateName(const std::string& state);

}  // namespace tessera::client

#endif  // TESSERA_CLIENT_QUEUE_CLIENT_H_
