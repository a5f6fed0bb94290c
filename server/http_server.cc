// The HTTP/JSON API: routes (http/transport.h) that authenticate, parse,
// call the Service and map its results to status codes. Handlers never
// throw: each runs inside Guarded(), and the router turns anything that
// escapes into a 500 as a second net.

#include "server/http_server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iterator>
#include <optional>
#include <tuple>
#include <utility>

#include "common/strings.h"
#include "console/assets.h"
#include "http/transport.h"
#include "k8s/k8s_extender.h"
#include "server/auth.h"
#include "service/job_json.h"

namespace tessera::scheduler {
namespace {

using http::Request;
using http::Response;
using nlohmann::json;

// One response of GET /v1/jobs/{id}/logs carries at most this much; the
// client asks again from the offset it reached (tessera logs --follow).
constexpr int64_t kMaxLogChunk = int64_t{4} << 20;
// GET /v1/jobs?limit= beyond this is refused (the answer would be huge).
constexpr int64_t kMaxListLimit = 100000;
// The longest an allocation long-poll waits (GET /v1/jobs/{id}/allocation).
constexpr int64_t kMaxAllocationWaitS = 30;

constexpr const char* kJsonType = "application/json";
constexpr const char* kMetricsType = "text/plain; version=0.0.4";

void SendJson(Response& res, int status, const json& body) {
  res.status = status;
  // Replace rather than throw on invalid UTF-8 (a command's bytes).
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  kJsonType);
}

void SendError(Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"error", message}});
}

// Whether the request's If-None-Match names `etag` (or is "*").
bool NotModified(const Request& req, std::string_view etag) {
  if (!req.has_header("If-None-Match")) return false;
  const std::string have = req.header("If-None-Match");
  if (have == "*") return true;
  size_t start = 0;
  while (start < have.size()) {
    size_t end = have.find(',', start);
    if (end == std::string::npos) end = have.size();
    std::string_view tag(have.data() + start, end - start);
    while (!tag.empty() && tag.front() == ' ') tag.remove_prefix(1);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.rfind("W/", 0) == 0) tag.remove_prefix(2);
    if (tag == etag) return true;
    start = end + 1;
  }
  return false;
}

// A 200 with `body` and its tag `etag`, or a bodiless 304 when the client
// already has it: what the console polls (docs/http_api.md, "Polling").
void SendTagged(const Request& req, Response& res, std::string body,
                const std::string& content_type, std::string_view etag) {
  res.set_header("ETag", std::string(etag));
  res.set_header("Cache-Control", "no-cache");
  if (NotModified(req, etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(std::move(body), content_type);
}

// SendTagged with the body's own tag.
void SendCached(const Request& req, Response& res, std::string body,
                const std::string& content_type) {
  const std::string etag = EntityTag(body);
  SendTagged(req, res, std::move(body), content_type, etag);
}

void SendJsonCached(const Request& req, Response& res, const json& body) {
  SendCached(req, res,
             body.dump(-1, ' ', false, json::error_handler_t::replace),
             kJsonType);
}

// The console's pages: scripts and styles from this server only, no
// framing by other sites, nothing sent elsewhere (docs/console.md).
constexpr const char* kConsolePolicy =
    "default-src 'none'; script-src 'self'; style-src 'self' "
    "'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

void SendAsset(const Request& req, Response& res, const console::Asset& a) {
  res.set_header("Content-Security-Policy", kConsolePolicy);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  SendTagged(req, res, std::string(a.body), std::string(a.content_type),
             a.etag);
}

// The extender's errors carry the protocol's Error too.
void SendExtenderError(Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"Error", message}, {"error", message}});
}

// The HTTP status of a service error: a request it rejects is 422, one to
// try again later 503, a failure of its own 500.
int ServiceErrorStatus(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInternal:
      return 500;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kRateLimited:
      return 429;
    default:
      return 422;
  }
}

void SendServiceError(Response& res, const Error& error) {
  if (error.code == ErrorCode::kRateLimited) {
    // Whole seconds, rounded up, as HTTP's Retry-After has them.
    const auto seconds = static_cast<int64_t>(std::ceil(error.retry_after_s));
    res.set_header("Retry-After",
                   std::to_string(std::max<int64_t>(1, seconds)));
  }
  SendError(res, ServiceErrorStatus(error.code), error.message);
}

std::optional<int64_t> ParseInt(std::string_view text) {
  int64_t value = 0;
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return std::nullopt;
  }
  return value;
}

// Query parameters must be among `known` (a typo is an error, not an
// unfiltered answer).
bool CheckParams(const Request& req, Response& res,
                 std::initializer_list<std::string_view> known) {
  for (const auto& [key, value] : req.params) {
    bool ok = false;
    for (std::string_view k : known) ok = ok || k == key;
    if (!ok) {
      std::string names;
      for (std::string_view k : known) {
        names += (names.empty() ? "" : ", ") + std::string(k);
      }
      SendError(res, 400,
                "unknown query parameter '" + key + "' (known: " + names + ")");
      return false;
    }
  }
  return true;
}

// Runs `handler`, turning an escaped exception into a 500.
template <typename Handler>
http::Handler Guarded(Handler handler) {
  return [handler = std::move(handler)](const Request& req, Response& res) {
    try {
      handler(req, res);
    } catch (const std::exception& e) {
      SendError(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      SendError(res, 500, "internal error");
    }
  };
}

}  // namespace

struct HttpServer::Impl {
  Impl(Service& s, const ServeConfig& config)
      : service(s),
        users(config.users),
        max_body_bytes(config.max_body_bytes),
        host(config.listen_host),
        k8s_open(K8sOpenToAll(config)) {}

  void Register();
  // Whether the caller may use /k8s/filter, prioritize and bind; else
  // answers 401 or 403 and returns false.
  bool MaySchedule(const Request& req, Response& res) const;
  // The caller, or nullopt after answering 401.
  std::optional<User> Authenticated(const Request& req, Response& res) const;
  // The job named by the path, or nullopt after answering 404 (or 500).
  std::optional<Job> PathJob(const Request& req, Response& res);

  void Submit(const Request& req, Response& res);
  void List(const Request& req, Response& res);
  void GetJob(const Request& req, Response& res);
  void Cancel(const Request& req, Response& res);
  void Progress(const Request& req, Response& res);
  // The path's job when `user` owns it or is an admin; else a 403 saying
  // who may `act` ("cancel another user's job") and nullopt.
  std::optional<Job> OwnedJob(const Request& req, Response& res,
                              const User& user, const std::string& act);
  void Events(const Request& req, Response& res);
  void Logs(const Request& req, Response& res);
  void Drain(const Request& req, Response& res, bool drained);
  void PlanPicture(const Request& req, Response& res);
  void UploadModel(const Request& req, Response& res);
  // Elastic jobs (docs/elastic.md): the allocation's long-poll and the
  // job's release of extras.
  void Allocation(const Request& req, Response& res);
  void Release(const Request& req, Response& res);
  // Long-polls waiting at once: at most half the worker threads, so that
  // they never starve the other requests; beyond, answered at once.
  std::atomic<int> long_polls{0};

  Service& service;
  std::unique_ptr<K8sExtender> k8s;  // /k8s/ routes; null unless enabled
  const std::vector<UserEntry> users;
  const int64_t max_body_bytes;
  std::string host;
  int port = 0;
  const bool k8s_open;  // the extender's routes need no credentials
  http::Router router;
  std::unique_ptr<http::Server> server;
};

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

namespace {

// The request's body as JSON, or a 400 and nullopt.
std::optional<json> JsonBody(const Request& req, Response& res) {
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    SendError(res, 400, std::string("malformed JSON: ") + e.what());
    return std::nullopt;
  }
}

}  // namespace

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
  Result<Job> job = service.Submit(*user, std::move(*request));
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
  Result<json> out = service.ReportProgress(job->id, steps.get<int64_t>());
  if (!out) {
    SendError(res,
              out.error().code == ErrorCode::kInfeasible ? 409
              : out.error().code == ErrorCode::kBadInput
                  ? 400
                  : ServiceErrorStatus(out.error().code),
              out.error().message);
    return;
  }
  SendJson(res, 200, *out);
}

// GET /v1/jobs/{id}/allocation?after=V&wait_s=S: an elastic job's
// workers, at once when their version is above V (default -1: now), else
// when they change or after S seconds (default 0, at most 30).
void HttpServer::Impl::Allocation(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  if (!CheckParams(req, res, {"after", "wait_s"})) return;
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  int64_t after = -1, wait_s = 0;
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
  Result<json> out = service.WaitAllocation(
      job->id, after, may_wait ? static_cast<double>(wait_s) : 0.0);
  if (!out) {
    SendError(res,
              out.error().code == ErrorCode::kBadInput
                  ? 409
                  : ServiceErrorStatus(out.error().code),
              out.error().message);
    return;
  }
  SendJson(res, 200, *out);
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
  Result<json> out = service.ReleaseWorkers(job->id, workers, &*user);
  if (!out) {
    SendError(res,
              out.error().code == ErrorCode::kInfeasible ? 409
              : out.error().code == ErrorCode::kBadInput
                  ? 400
                  : ServiceErrorStatus(out.error().code),
              out.error().message);
    return;
  }
  SendJson(res, 200, *out);
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

// GET /v1/jobs/{id}/plan/timeline.html and graph.html: a split job's plan
// pictures (HTML fragments of inline SVG, no script), written when it
// started.
void HttpServer::Impl::PlanPicture(const Request& req, Response& res) {
  if (!Authenticated(req, res)) return;
  if (!CheckParams(req, res, {})) return;
  const std::optional<Job> job = PathJob(req, res);
  if (!job) return;
  const bool graph = req.matches[2] == "graph";
  std::ifstream in(service.PlanPicturePath(job->id, graph), std::ios::binary);
  if (!in) {
    SendError(res, 404,
              "job " + std::to_string(job->id) +
                  (job->plan.is_null()
                       ? " was not split: it has no plan to draw"
                       : " has no plan pictures (they are drawn when a split "
                         "job starts)"));
    return;
  }
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  res.set_header("Content-Security-Policy", "default-src 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  SendCached(req, res, std::move(text), "text/html; charset=utf-8");
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
  // The web console (console/): its files need no token; its data comes
  // from the API below with the token the page holds.
  router.Get("/", Guarded([](const Request& req, Response& res) {
               if (const console::Asset* a = console::FindAsset("index.html")) {
                 SendAsset(req, res, *a);
               } else {
                 SendError(res, 404, "no console in this build");
               }
             }));
  router.Get(R"(/console/([A-Za-z0-9_.-]+))",
             Guarded([](const Request& req, Response& res) {
               const console::Asset* a = console::FindAsset(req.matches[1]);
               if (!a) {
                 SendError(res, 404,
                           "no console file '" + req.matches[1] + "'");
                 return;
               }
               SendAsset(req, res, *a);
             }));
  router.Get("/v1/whoami", Guarded([this](const Request& req, Response& res) {
               const std::optional<User> user = Authenticated(req, res);
               if (!user) return;
               SendJson(res, 200,
                        json{{"user", user->name},
                             {"team", user->team},
                             {"admin", user->admin},
                             {"token", user->token_name}});
             }));
  router.Get("/healthz", Guarded([](const Request&, Response& res) {
               SendJson(res, 200, json{{"ok", true}});
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
    RegisterK8sRoutes(
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
    Result<std::unique_ptr<K8sExtender>> k8s =
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
  auto error = [](std::string_view path, int status, const std::string& message,
                  Response& res) {
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

}  // namespace tessera::scheduler
