#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

// The queue's HTTP/JSON API (docs/http_api.md) over a Service: bearer
// tokens from the configuration, roles, input checks and the mapping of
// errors to status codes. Serves on its own threads (http/transport.h: one
// I/O thread and a worker pool), optionally over TLS.

#include <memory>
#include <string>

#include "common/result.h"
#include "server/serve_config.h"
#include "service/service.h"

namespace tessera::server {

// Routes (docs/http_api.md; every one but /healthz and the console's files
// needs "Authorization: Bearer TOKEN"):
//   POST /v1/jobs                   submit; 201 and the job
//   GET  /v1/jobs                   ?state=&user=&pool=&limit=; {"jobs": [...]}
//   GET  /v1/jobs/{id}              one job
//   POST /v1/jobs/{id}/cancel       own jobs; an admin's any job
//   GET  /v1/jobs/{id}/logs         ?stream=stdout|stderr&offset=N; text
//   GET  /v1/jobs/{id}/events       who did what to the job
//   POST /v1/jobs/{id}/progress     a running job's steps done
//   GET  /v1/jobs/{id}/allocation   ?after=V&wait_s=S: an elastic job's
//                                   workers (a long-poll)
//   POST /v1/jobs/{id}/release      an elastic job lets extras go
//   GET  /v1/jobs/{id}/plan/timeline.html, graph.html   a split job's plan
//   POST /v1/models                 upload an ONNX model
//   GET  /v1/queue                  ?pool=: why each queued job waits
//   GET  /v1/cluster                every GPU and what it holds, the queues
//   POST /v1/nodes/{name}/drain     admin only; also /undrain
//   GET  /v1/whoami                 the caller
//   GET  /, /console/NAME           the web console's files (no token)
//   GET  /healthz                   {"ok": true}
//   GET  /metrics                   Prometheus text format
//   POST /k8s/filter, /k8s/prioritize, /k8s/bind   with config.k8s_extender:
//                                   kube-scheduler's extender: open on a
//                                   loopback address or with
//                                   k8s.allow_unauthenticated, else a
//                                   verified client certificate or a token
//                                   of a k8s-scheduler or admin user
//   POST /k8s/release               admin only (k8s_extender.h)
// Errors are {"error": "..."} ({"Error", "error"} under /k8s/): 400
// malformed input (naming the field) or HTTP, 401 no or unknown token, 403
// wrong role, 404 unknown job, node or route, 413 body over
// max_body_bytes, 422 a valid request the service rejects, 431 a request
// head over 16 KiB, 500, 503 too many connections.
class HttpServer {
 public:
  // Binds config.listen_host:listen_port (port 0: any free one) and serves
  // until Stop. `service` must outlive the server. kBadInput when the
  // address cannot be bound or config.tls's files do not load.
  static Result<std::unique_ptr<HttpServer>> Start(Service& service,
                                                   const ServeConfig& config);
  ~HttpServer();  // Stop()
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Stops accepting, closes idle connections, finishes the requests in
  // flight and joins the threads. Idempotent.
  void Stop();
  int port() const;
  const std::string& host() const;

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Whether the extender's scheduling routes need no credentials: the
// service listens on loopback only, or k8s.allow_unauthenticated.
bool K8sOpenToAll(const ServeConfig& config);
// A line for the log at startup when the extender needs credentials: which
// it accepts, or that none are configured (every call is then a 401) and
// how to configure them. "" when the extender is off or open to all.
std::string K8sAuthWarning(const ServeConfig& config);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
