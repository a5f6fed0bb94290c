#ifndef TESSERA_SERVER_HTTP_SERVER_INTERNAL_H_
#define TESSERA_SERVER_HTTP_SERVER_INTERNAL_H_

// The HTTP server's state and its route handlers, shared by the files that
// define them: http_server.cc (the job API, the cluster, nodes, models and
// the route table), http_job_runtime.cc (what a running job calls:
// progress, its elastic allocation and releases) and http_console_routes.cc
// (the web console's files, whoami and the plan pictures). Internal to
// server/.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/transport.h"
#include "k8s/k8s_extender.h"
#include "server/auth.h"
#include "server/http_server.h"
#include "service/wire/job_json.h"

namespace tessera::server {

// The jobs the routes read and write (service/, scheduler/).
using scheduler::GpuInfo;
using scheduler::Job;
using scheduler::JobRequest;
using scheduler::JobState;
using scheduler::JobStateName;
using scheduler::NodeInfo;
using scheduler::ParseJobState;
using service::IsoTime;
using service::JobEvent;
using service::JobFilter;
using service::JobJson;
using service::ParseJobRequest;
using service::UploadedModel;

struct HttpServer::Impl {
  using Request = http::Request;
  using Response = http::Response;

  Impl(Service& s, const ServeConfig& config)
      : service(s),
        users(config.users),
        max_body_bytes(config.max_body_bytes),
        host(config.listen_host),
        k8s_open(K8sOpenToAll(config)) {}

  // The route table (http_server.cc).
  void Register();
  // Replicas (http_replica.cc, docs/operations.md "High availability"):
  // every answer says which replica gave it and in what role; a follower
  // sends what only the leader does (drains, progress, elastic calls,
  // uploads, the scheduler extender) there with a 307, or answers 503
  // while nobody leads. The router's hook: false when it answered.
  bool BeforeRoute(const Request& req, Response& res) const;
  // The role headers alone (the transport's own errors get them too).
  void TagReplica(Response& res) const;
  // Answers a request only the leader serves, on a follower.
  void ToLeader(const Request& req, Response& res,
                const service::ReplicaStatus& replica) const;
  // GET /healthz and /readyz (?role=leader: 503 on a follower).
  void Health(const Request& req, Response& res, bool ready) const;
  // Whether the caller may use /k8s/filter, prioritize and bind; else
  // answers 401 or 403 and returns false.
  bool MaySchedule(const Request& req, Response& res) const;
  // The caller, or nullopt after answering 401.
  std::optional<User> Authenticated(const Request& req, Response& res) const;
  // The job named by the path, or nullopt after answering 404 (or 500).
  std::optional<Job> PathJob(const Request& req, Response& res);
  // The path's job when `user` owns it or is an admin; else a 403 saying
  // who may `act` ("cancel another user's job") and nullopt.
  std::optional<Job> OwnedJob(const Request& req, Response& res,
                              const User& user, const std::string& act);

  void Submit(const Request& req, Response& res);
  void List(const Request& req, Response& res);
  void GetJob(const Request& req, Response& res);
  void Cancel(const Request& req, Response& res);
  void Events(const Request& req, Response& res);
  void Logs(const Request& req, Response& res);
  void Drain(const Request& req, Response& res, bool drained);
  void UploadModel(const Request& req, Response& res);

  // What a running job calls (http_job_runtime.cc): its progress, and for
  // an elastic job (docs/elastic.md) the allocation's long-poll and the
  // release of extras.
  void Progress(const Request& req, Response& res);
  void Allocation(const Request& req, Response& res);
  void Release(const Request& req, Response& res);
  // Long-polls waiting at once: at most half the worker threads, so that
  // they never starve the other requests; beyond, answered at once.
  std::atomic<int> long_polls{0};

  // The web console (http_console_routes.cc): `/`, `/console/NAME` and
  // `/v1/whoami` added to the router, and a split job's plan pictures.
  void RegisterConsole();
  void PlanPicture(const Request& req, Response& res);

  Service& service;
  std::unique_ptr<k8s::K8sExtender> k8s;  // /k8s/ routes; null unless enabled
  const std::vector<UserEntry> users;
  const int64_t max_body_bytes;
  std::string host;
  int port = 0;
  const bool k8s_open;  // the extender's routes need no credentials
  http::Router router;
  std::unique_ptr<http::Server> server;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_INTERNAL_H_
