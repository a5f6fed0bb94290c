// What a running job calls on the API: POST /v1/jobs/{id}/progress, and
// for an elastic job (docs/elastic.md) GET /v1/jobs/{id}/allocation (a
// long-poll) and POST /v1/jobs/{id}/release.

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "server/http_reply_internal.h"
#include "server/http_server_internal.h"

namespace tessera::server {
namespace {

using http::Request;
using http::Response;
using http_reply::CheckParams;
using http_reply::JsonBody;
using http_reply::ParseInt;
using http_reply::SendError;
using http_reply::SendJson;
using http_reply::ServiceErrorStatus;
using nlohmann::json;

// The longest an allocation long-poll waits (GET /v1/jobs/{id}/allocation).
constexpr int64_t kMaxAllocationWaitS = 30;

// 200 with the service's answer; its refusals: `infeasible` for a job whose
// state does not allow it, `bad_input` for a request it rejects, else
// ServiceErrorStatus.
void SendOutcome(Response& res, const Result<json>& out, int infeasible,
                 int bad_input) {
  if (out) {
    SendJson(res, 200, *out);
    return;
  }
  const ErrorCode code = out.error().code;
  SendError(res,
            code == ErrorCode::kInfeasible ? infeasible
            : code == ErrorCode::kBadInput ? bad_input
                                           : ServiceErrorStatus(code),
            out.error().message);
}

// An elastic job's allocation as the wire shows it, or the error.
Result<json> AllocationOf(const Result<Job>& job, const Topology& t) {
  if (!job) return job.error();
  return service::ElasticAllocationJson(*job, t);
}

}  // namespace

// POST /v1/jobs/{id}/progress {"steps": N}: the job's steps done in all
// (its owner, or an admin).
void HttpServer::Impl::Progress(const Request& req, Response& res) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  const std::optional<Job> job =
      OwnedJob(req, res, *user, "report another user's job's progress");
  if (!job) return;
  const std::optional<json> parsed = JsonBody(req, res);
  if (!parsed) return;
  const json& body = *parsed;
  if (!body.is_object() || !body.contains("steps") || body.size() != 1) {
    SendError(res, 400,
              "the body must be {\"steps\": N}: the steps done in all");
    return;
  }
  const json& steps = body["steps"];
  if (!steps.is_number_integer() ||
      (steps.is_number_unsigned() && steps.get<uint64_t>() > uint64_t{1}
                                                                 << 62) ||
      steps.get<int64_t>() < 0) {
    SendError(res, 400, "steps: must be a whole number >= 0");
    return;
  }
  if (job->state != JobState::kRunning) {
    SendError(res, 409,
              "job " + std::to_string(job->id) + " is " +
                  std::string(JobStateName(job->state)) +
                  ": only a running job reports progress");
    return;
  }
  const Result<service::ProgressReport> out =
      service.ReportProgress(job->id, steps.get<int64_t>());
  SendOutcome(res,
              out ? Result<json>(service::ProgressJson(*out)) : out.error(),
              409, 400);
}

// GET /v1/jobs/{id}/allocation?after=V&wait_s=S: an elastic job's
// workers, at once when their version is above V (default -1: now), else
// when they change or after S seconds (default 0, at most 30).
void HttpServer::Impl::Allocation(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  if (!CheckParams(req, res, {"after", "wait_s"})) return;
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  int64_t after = -1;
  int64_t wait_s = 0;
  for (const auto& [key, out, max] :
       {std::tuple<const char*, int64_t*, int64_t>{"after", &after, INT64_MAX},
        {"wait_s", &wait_s, kMaxAllocationWaitS}}) {
    if (!req.has_param(key)) continue;
    const std::string text = req.param(key);
    const std::optional<int64_t> v = ParseInt(text);
    if (!v || *v < 0 || *v > max) {
      SendError(res, 400,
                std::string(key) + ": '" + text +
                    "' must be a whole number from 0 to " +
                    std::to_string(max));
      return;
    }
    *out = *v;
  }
  struct Counted {  // this long-poll, while it waits (even if it throws)
    std::atomic<int>& n;
    ~Counted() { n.fetch_sub(1); }
  };
  const int waiting = long_polls.fetch_add(1) + 1;
  const Counted counted{long_polls};
  const bool may_wait = waiting <= std::max(1, http::kDefaultWorkerThreads / 2);
  if (!may_wait) res.set_header("Retry-After", "1");
  const Result<Job> out = service.WaitAllocation(
      job->id, after, may_wait ? static_cast<double>(wait_s) : 0.0);
  SendOutcome(res, AllocationOf(out, service.topology()), 409, 409);
}

// POST /v1/jobs/{id}/release {"workers": [ids]}: the job let these extras
// go (its owner, or an admin).
void HttpServer::Impl::Release(const Request& req, Response& res) {
  const std::optional<User> user = Authenticated(req, res);
  if (!user) return;
  const std::optional<Job> job =
      OwnedJob(req, res, *user, "release another user's workers");
  if (!job) return;
  const std::optional<json> parsed = JsonBody(req, res);
  if (!parsed) return;
  const json& body = *parsed;
  if (!body.is_object() || !body.contains("workers") || body.size() != 1 ||
      !body["workers"].is_array()) {
    SendError(res, 400,
              "the body must be {\"workers\": [ids]}: the workers released");
    return;
  }
  std::vector<int> workers;
  for (const json& w : body["workers"]) {
    if (!w.is_number_integer() || w.get<int64_t>() < 0 ||
        w.get<int64_t>() > 1 << 20) {
      SendError(res, 400, "workers: must be worker ids (whole numbers >= 0)");
      return;
    }
    workers.push_back(w.get<int>());
  }
  const Result<Job> out = service.ReleaseWorkers(job->id, workers, &*user);
  SendOutcome(res, AllocationOf(out, service.topology()), 409, 400);
}

}  // namespace tessera::server
