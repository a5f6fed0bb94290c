// The HTTP/JSON API: routes (http/transport.h) that authenticate, parse,
// call the Service and map its results to status codes, and the route
// table. Handlers never throw: each runs inside Guarded(), and the router
// turns anything that escapes into a 500 as a second net. The routes a
// running job calls are in http_job_runtime.cc, the console's in
// http_console_routes.cc; how they all answer in http_reply_internal.h.

#include "server/http_server.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <optional>
#include <utility>

#include "common/strings.h"
#include "server/http_reply_internal.h"
#include "server/http_server_internal.h"
#include "service/wire/job_json.h"

namespace tessera::server {
namespace {

using http::Request;
using http::Response;
using http_reply::CheckParams;
using http_reply::Guarded;
using http_reply::JsonBody;
using http_reply::kMetricsType;
using http_reply::ParseInt;
using http_reply::SendError;
using http_reply::SendExtenderError;
using http_reply::SendJson;
using http_reply::SendJsonCached;
using http_reply::SendServiceError;
using nlohmann::json;

// One response of GET /v1/jobs/{id}/logs carries at most this much; the
// client asks again from the offset it reached (tessera logs --follow).
constexpr int64_t kMaxLogChunk = int64_t{4} << 20;
// GET /v1/jobs?limit= beyond this is refused (the answer would be huge).
constexpr int64_t kMaxListLimit = 100000;

}  // namespace

std::optional<User> HttpServer::Impl::Authenticated(const Request& req,
                                                    Response& res) const {
  if (!req.has_header("Authorization")) {
    res.set_header("WWW-Authenticate", "Bearer");
    SendError(res, 401, "missing 'Authorization: Bearer TOKEN' header");
    return std::nullopt;
  }
  std::optional<UserEntry> entry =
      Authenticate(users, req.header("Authorization"));
  if (!entry) {
    res.set_header("WWW-Authenticate", "Bearer error=\"invalid_token\"");
    SendError(res, 401, "invalid token");
    return std::nullopt;
  }
  return entry->user;
}

std::optional<Job> HttpServer::Impl::PathJob(const Request& req,
                                             Response& res) {
  const std::optional<int64_t> id = ParseInt(req.matches[1]);
  if (!id) {
    SendError(res, 404, "no job " + req.matches[1]);
    return std::nullopt;
  }
  Result<std::optional<Job>> job = service.Get(*id);
  if (!job) {
    SendServiceError(res, job.error());
    return std::nullopt;
  }
  if (!job->has_value()) {
    SendError(res, 404, "no job " + std::to_string(*id));
    return std::nullopt;
  }
  return std::move(**job);
}

std::optional<Job> HttpServer::Impl::OwnedJob(const Request& req, Response& res,
                                              const User& user,
                                              const std::string& act) {
  std::optional<Job> job = PathJob(req, res);
  if (job && job->user != user.name && !user.admin) {
    SendError(res, 403,
              "job " + std::to_string(job->id) + " belongs to " + job->user +
                  "; only an admin may " + act);
    return std::nullopt;
  }
  return job;
}

void HttpServer::Impl::Submit(const Request& req, Response& res) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  if (static_cast<int64_t>(req.body.size()) > max_body_bytes) {
    SendError(res, 413,
              "the request body is larger than max_body_bytes (" +
                  std::to_string(max_body_bytes) + " bytes)");
    return;
  }
  const std::optional<json> body = JsonBody(req, res);
  if (!body) return;
  Result<JobRequest> request = ParseJobRequest(*body);
  if (!request) {
    SendError(res, request.error().code == ErrorCode::kInternal ? 500 : 400,
              request.error().message);
    return;
  }
  if (request->model && !request->model->upload.empty()) {
    // Uploads are kept where the leader runs: its jobs are sized there.
    if (const service::ReplicaStatus r = service.Replica(); !r.leader) {
      ToLeader(req, res, r);
      return;
    }
  }
  const std::string key = req.has_header("Idempotency-Key")
                              ? req.header("Idempotency-Key")
                              : std::string();
  if (key.size() > 255) {
    SendError(res, 400, "Idempotency-Key: at most 255 characters");
    return;
  }
  Result<Job> job = service.Submit(*user, std::move(*request), key);
  if (!job) {
    SendServiceError(res, job.error());
    return;
  }
  res.set_header("Location", "/v1/jobs/" + std::to_string(job->id));
  SendJson(res, 201, JobJson(*job, service.topology()));
}

void HttpServer::Impl::List(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  if (!CheckParams(req, res, {"state", "user", "pool", "limit"})) return;
  JobFilter filter;
  if (req.has_param("state")) {
    const std::string text = req.param("state");
    filter.state = ParseJobState(text);
    if (!filter.state) {
      SendError(res, 400,
                "state: unknown state '" + text +
                    "' (queued, running, succeeded, failed, cancelled, "
                    "preempted)");
      return;
    }
  }
  filter.user = req.param("user");
  filter.pool = req.param("pool");
  if (req.has_param("limit")) {
    const std::string text = req.param("limit");
    const std::optional<int64_t> limit = ParseInt(text);
    if (!limit || *limit < 1 || *limit > kMaxListLimit) {
      SendError(res, 400,
                "limit: '" + text + "' must be a whole number from 1 to " +
                    std::to_string(kMaxListLimit));
      return;
    }
    filter.limit = *limit;
  }
  Result<std::vector<Job>> jobs = service.List(filter);
  if (!jobs) {
    SendServiceError(res, jobs.error());
    return;
  }
  json list = json::array();
  for (const Job& job : *jobs) list.push_back(JobJson(job, service.topology()));
  SendJsonCached(req, res, json{{"jobs", std::move(list)}});
}

void HttpServer::Impl::GetJob(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  json j = JobJson(*job, service.topology());
  j["decision"] = service.DecisionOf(job->id);
  SendJsonCached(req, res, j);
}

// GET /v1/jobs/{id}/events: who did what to the job, oldest first.
void HttpServer::Impl::Events(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  Result<std::vector<JobEvent>> events = service.Events(job->id);
  if (!events) {
    SendServiceError(res, events.error());
    return;
  }
  json list = json::array();
  for (const JobEvent& e : *events) {
    list.push_back({{"at", IsoTime(e.at)},
                    {"actor", e.actor},
                    {"token", e.token},
                    {"action", e.action},
                    {"detail", e.detail}});
  }
  SendJsonCached(req, res, json{{"job", job->id}, {"events", std::move(list)}});
}

void HttpServer::Impl::Cancel(const Request& req, Response& res) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  const std::optional<Job> job =
      OwnedJob(req, res, *user, "cancel another user's job");
  if (!job) return;
  Result<Job> cancelled =
      service.Cancel(job->id, "cancelled by " + user->name, &*user);
  if (!cancelled) {
    SendServiceError(res, cancelled.error());
    return;
  }
  SendJson(res, 200, JobJson(*cancelled, service.topology()));
}

// The bytes of the job's log from `offset` (at most kMaxLogChunk); the
// X-Next-Offset header says where to ask next, X-Log-Size how much there is.
void HttpServer::Impl::Logs(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  if (!CheckParams(req, res, {"stream", "offset"})) return;
  const std::string stream =
      req.has_param("stream") ? req.param("stream") : "stdout";
  if (stream != "stdout" && stream != "stderr") {
    SendError(res, 400, "stream: '" + stream + "' must be stdout or stderr");
    return;
  }
  int64_t offset = 0;
  if (req.has_param("offset")) {
    const std::string text = req.param("offset");
    const std::optional<int64_t> parsed = ParseInt(text);
    if (!parsed || *parsed < 0) {
      SendError(res, 400, "offset: '" + text + "' must be a whole number >= 0");
      return;
    }
    offset = *parsed;
  }
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  std::string text;
  int64_t size = 0;
  // No file yet (the job has not started): an empty log.
  std::ifstream in(service.LogPath(job->id, stream == "stderr"),
                   std::ios::binary | std::ios::ate);
  if (in) {
    size = static_cast<int64_t>(in.tellg());
    if (offset < size) {
      text.resize(static_cast<size_t>(std::min(size - offset, kMaxLogChunk)));
      in.seekg(offset);
      in.read(text.data(), static_cast<std::streamsize>(text.size()));
      text.resize(
          static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    }
  }
  const int64_t next =
      std::min(offset, size) + static_cast<int64_t>(text.size());
  res.set_header("X-Log-Size", std::to_string(size));
  res.set_header("X-Next-Offset", std::to_string(next));
  res.set_header("X-Job-State", std::string(JobStateName(job->state)));
  res.status = 200;
  res.set_content(text, "text/plain; charset=utf-8");
}

void HttpServer::Impl::Drain(const Request& req, Response& res, bool drained) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  if (!user->admin) {
    SendError(res, 403,
              std::string("only an admin may ") +
                  (drained ? "drain" : "undrain") + " a node");
    return;
  }
  const std::string node = req.matches[1];
  if (service.topology().FindNode(node) < 0) {
    SendError(res, 404, "no node '" + node + "'");
    return;
  }
  const Status status = service.SetDrained(node, drained, &*user);
  if (!status) {
    SendServiceError(res, status.error());
    return;
  }
  SendJson(res, 200, json{{"node", node}, {"drained", drained}});
}

// POST /v1/models: the body is an ONNX model (application/octet-stream);
// 201 {"id", "bytes", "nodes"}, the id for a submission's model.upload.
void HttpServer::Impl::UploadModel(const Request& req, Response& res) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  if (static_cast<int64_t>(req.body.size()) > service.max_upload_bytes()) {
    SendError(res, 413,
              "the model is larger than max_upload_bytes (" +
                  std::to_string(service.max_upload_bytes()) + " bytes)");
    return;
  }
  Result<UploadedModel> model = service.UploadModel(*user, req.body);
  if (!model) {
    SendServiceError(res, model.error());
    return;
  }
  SendJson(
      res, 201,
      json{
          {"id", model->id}, {"bytes", model->bytes}, {"nodes", model->nodes}});
}

void HttpServer::Impl::Register() {
  RegisterConsole();
  router.Before([this](const Request& req, Response& res) {
    return BeforeRoute(req, res);
  });
  router.Get("/healthz", Guarded([this](const Request& req, Response& res) {
               Health(req, res, false);
             }));
  router.Get("/readyz", Guarded([this](const Request& req, Response& res) {
               Health(req, res, true);
             }));
  router.Get("/metrics", Guarded([this](const Request& req, Response& res) {
               if (!Authenticated(req, res)) return;
               res.status = 200;
               res.set_content(service.MetricsText(), kMetricsType);
             }));
  router.Post("/v1/jobs", Guarded([this](const Request& req, Response& res) {
                Submit(req, res);
              }));
  router.Post("/v1/models", Guarded([this](const Request& req, Response& res) {
                UploadModel(req, res);
              }));
  router.Get("/v1/jobs", Guarded([this](const Request& req, Response& res) {
               List(req, res);
             }));
  router.Get(
      R"(/v1/jobs/([^/]+))",
      Guarded([this](const Request& req, Response& res) { GetJob(req, res); }));
  router.Post(
      R"(/v1/jobs/([^/]+)/cancel)",
      Guarded([this](const Request& req, Response& res) { Cancel(req, res); }));
  router.Post(R"(/v1/jobs/([^/]+)/progress)",
              Guarded([this](const Request& req, Response& res) {
                Progress(req, res);
              }));
  router.Get(R"(/v1/jobs/([^/]+)/allocation)",
             Guarded([this](const Request& req, Response& res) {
               Allocation(req, res);
             }));
  router.Post(R"(/v1/jobs/([^/]+)/release)",
              Guarded([this](const Request& req, Response& res) {
                Release(req, res);
              }));
  router.Get(
      R"(/v1/jobs/([^/]+)/logs)",
      Guarded([this](const Request& req, Response& res) { Logs(req, res); }));
  router.Get(R"(/v1/jobs/([^/]+)/plan/(timeline|graph)\.html)",
             Guarded([this](const Request& req, Response& res) {
               PlanPicture(req, res);
             }));
  router.Get(
      R"(/v1/jobs/([^/]+)/events)",
      Guarded([this](const Request& req, Response& res) { Events(req, res); }));
  router.Get(
      "/v1/queue", Guarded([this](const Request& req, Response& res) {
        if (!Authenticated(req, res)) return;
        if (!CheckParams(req, res, {"pool"})) return;
        const std::string pool = req.param("pool");
        if (!pool.empty() && std::find(service.topology().pools.begin(),
                                       service.topology().pools.end(), pool) ==
                                 service.topology().pools.end()) {
          SendError(res, 404, "no pool '" + pool + "'");
          return;
        }
        SendJsonCached(req, res, service.QueueJson(pool));
      }));
  router.Get("/v1/cluster", Guarded([this](const Request& req, Response& res) {
               if (!Authenticated(req, res)) return;
               SendJsonCached(req, res, service.ClusterJson());
             }));
  router.Post(R"(/v1/nodes/([^/]+)/drain)",
              Guarded([this](const Request& req, Response& res) {
                Drain(req, res, true);
              }));
  router.Post(R"(/v1/nodes/([^/]+)/undrain)",
              Guarded([this](const Request& req, Response& res) {
                Drain(req, res, false);
              }));
  if (k8s) {
    // Releasing a reservation takes an admin's token.
    k8s::RegisterK8sRoutes(
        router, *k8s,
        [this](const Request& req, Response& res) {
          return MaySchedule(req, res);
        },
        [this](const Request& req, Response& res) {
          const std::optional<User> user = Authenticated(req, res);
          if (user && !user->admin) {
            SendError(res, 403,
                      "only an admin may release a pod's reservation");
          }
          return user && user->admin;
        });
  }
}

// kube-scheduler authenticates with a client certificate (its extender
// tlsConfig) or a bearer token; docs/kubernetes.md.
bool HttpServer::Impl::MaySchedule(const Request& req, Response& res) const {
  if (k8s_open || req.client_cert_verified) return true;
  if (req.has_header("Authorization")) {
    const std::optional<UserEntry> entry =
        Authenticate(users, req.header("Authorization"));
    if (!entry) {
      res.set_header("WWW-Authenticate", "Bearer error=\"invalid_token\"");
      SendExtenderError(res, 401, "invalid token");
      return false;
    }
    if (entry->user.admin || entry->k8s_scheduler) return true;
    SendExtenderError(res, 403,
                      "user '" + entry->user.name +
                          "' may not call the scheduler extender (roles "
                          "k8s-scheduler and admin may)");
    return false;
  }
  res.set_header("WWW-Authenticate", "Bearer");
  SendExtenderError(
      res, 401,
      "the scheduler extender needs credentials on a non-loopback "
      "address: a client certificate signed by tls.client_ca_file, or "
      "'Authorization: Bearer TOKEN' of a k8s-scheduler or admin user "
      "(or set k8s.allow_unauthenticated: true)");
  return false;
}

bool K8sOpenToAll(const ServeConfig& config) {
  return config.k8s.allow_unauthenticated ||
         http::IsLoopbackHost(config.listen_host);
}

std::string K8sAuthWarning(const ServeConfig& config) {
  if (!config.k8s_extender || K8sOpenToAll(config)) return "";
  const bool certs = !config.tls.client_ca_file.empty();
  bool tokens = false;
  for (const UserEntry& u : config.users) {
    tokens = tokens || u.k8s_scheduler || u.user.admin;
  }
  std::string how = certs && tokens ? "client certificates signed by "
                                      "tls.client_ca_file or bearer tokens "
                                      "of k8s-scheduler or admin users"
                    : certs         ? "client certificates signed by "
                                      "tls.client_ca_file"
                    : tokens ? "bearer tokens of k8s-scheduler or admin users"
                             : "";
  if (how.empty()) {
    return "the scheduler extender listens on " + config.listen_host +
           ", not loopback, and no credentials are configured: "
           "/k8s/filter, /k8s/prioritize and /k8s/bind answer 401 to every "
           "call. Configure tls.client_ca_file and give kube-scheduler's "
           "extender tlsConfig a client certificate it signs, or a user with "
           "role k8s-scheduler whose token kube-scheduler sends, or set "
           "k8s.allow_unauthenticated: true (docs/kubernetes.md)";
  }
  return "the scheduler extender listens on " + config.listen_host +
         ", not loopback: /k8s/filter, /k8s/prioritize and /k8s/bind accept "
         "only " +
         how + " (docs/kubernetes.md)";
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    Service& service, const ServeConfig& config) {
  auto impl = std::make_unique<Impl>(service, config);
  if (config.k8s_extender) {
    Result<std::unique_ptr<k8s::K8sExtender>> k8s =
        MakeK8sExtender(service, config.k8s);
    if (!k8s) return k8s.error();
    impl->k8s = std::move(k8s).value();
  }
  impl->Register();
  http::ServerOptions options;
  options.host = config.listen_host;
  options.port = config.listen_port;
  options.max_body_bytes = config.max_body_bytes;
  options.path_body_limits["/v1/models"] = {service.max_upload_bytes(),
                                            "max_upload_bytes"};
  options.header_timeout_s = config.header_timeout_s;
  options.body_timeout_s = config.body_timeout_s;
  options.max_connections_per_client = config.max_connections_per_client;
  options.max_connections = config.max_connections;
  options.tls = config.tls;
  // Errors the transport answers itself (no route, body too large, a
  // malformed request, too many connections) get the same JSON bodies.
  auto error = [replica = impl.get()](std::string_view path, int status,
                                      const std::string& message,
                                      Response& res) {
    replica->TagReplica(res);
    if (path.rfind("/k8s/", 0) == 0) {
      SendExtenderError(res, status, message);
    } else {
      SendError(res, status, message);
    }
  };
  Result<std::unique_ptr<http::Server>> server =
      http::Server::Start(options, std::move(impl->router), error);
  if (!server) {
    const std::string address =
        config.listen_host + ":" + std::to_string(config.listen_port);
    if (server.error().message.rfind("tls.", 0) == 0) return server.error();
    return BadInput("listen: cannot listen on " + address +
                    " (the port is in use, or the host is not an address of "
                    "this machine: " +
                    server.error().message + ")");
  }
  impl->server = std::move(*server);
  impl->port = impl->server->port();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::Stop() { impl_->server->Stop(); }

int HttpServer::port() const { return impl_->port; }

const std::string& HttpServer::host() const { return impl_->host; }

}  // namespace tessera::server
