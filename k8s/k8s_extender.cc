// The extender's handlers: parse (k8s_protocol.cc), ask the Service
// (k8s_pods.cc), answer in the protocol's shapes; bind also talks to the
// API server (k8s_api.h). The routes are registered on the queue API's
// router (http/transport.h, server/http_server.cc).

#include "k8s/k8s_extender.h"

#include "http/transport.h"

#include <chrono>
#include <exception>
#include <set>
#include <utility>

#include "common/json_depth.h"

namespace tessera::k8s {
namespace {

using nlohmann::json;

constexpr const char* kJsonType = "application/json";

K8sReply Failure(int status, const std::string& message) {
  return {status, json{{"Error", message}, {"error", message}}};
}

// A service error: the store failed (500), else the request was refused.
K8sReply ServiceFailure(const Error& e) {
  return Failure(e.code == ErrorCode::kInternal      ? 500
                 : e.code == ErrorCode::kUnavailable ? 503
                                                     : 422,
                 e.message);
}

std::optional<json> ParseBody(std::string_view body, K8sReply* reply) {
  // Copying the Nodes it was sent into the answer recurses once per level.
  if (JsonDepth(body, kMaxJsonDepth) > kMaxJsonDepth) {
    *reply = Failure(400, "malformed JSON: nested deeper than " +
                              std::to_string(kMaxJsonDepth) + " levels");
    return std::nullopt;
  }
  try {
    return json::parse(body);
  } catch (const json::parse_error& e) {
    *reply = Failure(400, std::string("malformed JSON: ") + e.what());
    return std::nullopt;
  }
}

// The message of the API server's Status answer, else the body itself.
std::string ApiMessage(const K8sApiReply& r) {
  const json status = json::parse(r.body, nullptr, false);
  if (status.is_object() && status.contains("message") &&
      status["message"].is_string()) {
    return status["message"].get<std::string>();
  }
  return r.body.substr(0, 200);
}

std::string PodName(const K8sPodRef& ref) { return ref.ns + "/" + ref.name; }

}  // namespace

K8sExtender::K8sExtender(Service& service, K8sConfig config,
                         std::unique_ptr<K8sApiClient> api)
    : pods_(service), config_(std::move(config)), api_(std::move(api)) {}

K8sExtender::~K8sExtender() {
  {
    std::lock_guard lock(resync_mu_);
    stopping_ = true;
  }
  resync_wake_.notify_all();
  if (resync_.joinable()) resync_.join();
}

void K8sExtender::StartResync(int interval_s) {
  if (!api_ || interval_s <= 0 || resync_.joinable()) return;
  resync_ = std::thread([this, interval_s] {
    std::unique_lock lock(resync_mu_);
    while (!resync_wake_.wait_for(lock, std::chrono::seconds(interval_s),
                                  [this] { return stopping_; })) {
      lock.unlock();
      Resync();
      lock.lock();
    }
  });
}

int K8sExtender::Resync() {
  if (!api_) return 0;
  int freed = 0;
  for (const K8sPodRef& ref : pods_.BoundPods()) {
    Result<K8sApiReply> r = api_->Send(
        "GET", "/api/v1/namespaces/" + ref.ns + "/pods/" + ref.name, "");
    if (!r) break;  // the API server is down: keep everything
    JobState end = JobState::kCancelled;
    std::string reason;
    if (r->status == 404) {
      reason = "released: the pod was deleted (resync with the API server)";
    } else if (r->status == 200) {
      const json pod = json::parse(r->body, nullptr, false);
      if (!pod.is_object()) continue;
      const json meta = pod.value("metadata", json::object());
      const json status = pod.value("status", json::object());
      const std::string uid =
          meta.is_object() && meta.contains("uid") && meta["uid"].is_string()
              ? meta["uid"].get<std::string>()
              : "";
      const std::string phase = status.is_object() &&
                                        status.contains("phase") &&
                                        status["phase"].is_string()
                                    ? status["phase"].get<std::string>()
                                    : "";
      if (!ref.uid.empty() && !uid.empty() && uid != ref.uid) {
        reason = "released: the pod was replaced by uid " + uid +
                 " (resync with the API server)";
      } else if (phase == "Succeeded" || phase == "Failed") {
        end = phase == "Succeeded" ? JobState::kSucceeded : JobState::kFailed;
        reason = "released: the pod ended (" + phase + ")";
      }
    }
    if (reason.empty()) continue;
    Result<std::optional<Job>> released = pods_.Release(ref, end, reason);
    if (released && released->has_value()) ++freed;
  }
  return freed;
}

K8sReply K8sExtender::Filter(std::string_view body) {
  K8sReply reply;
  const std::optional<json> j = ParseBody(body, &reply);
  if (!j) return reply;
  Result<K8sExtenderArgs> args = ParseExtenderArgs(*j);
  if (!args) return Failure(400, args.error().message);
  const std::vector<K8sNodeVerdict> verdicts = pods_.Evaluate(
      args->pod, args->nodes, config_.pool, args->sharing_strategy);
  std::set<std::string> passed;
  json failed = json::object();
  json unresolvable = json::object();
  for (const K8sNodeVerdict& v : verdicts) {
    if (v.fits) {
      passed.insert(v.node);
    } else {
      (v.resolvable ? failed : unresolvable)[v.node] = v.reason;
    }
  }
  json names = nullptr;
  if (args->has_node_names) {
    names = json::array();
    for (const std::string& n : args->nodes) {
      if (passed.contains(n)) names.push_back(n);
    }
  }
  json nodes = nullptr;
  if (!args->node_list.is_null()) {
    nodes = args->node_list;
    json items = json::array();
    if (nodes.contains("items") && nodes["items"].is_array()) {
      for (const json& item : nodes["items"]) {
        if (passed.contains(item["metadata"]["name"].get<std::string>())) {
          items.push_back(item);
        }
      }
    }
    nodes["items"] = std::move(items);
  }
  reply.body = {{"Nodes", std::move(nodes)},
                {"NodeNames", std::move(names)},
                {"FailedNodes", std::move(failed)},
                {"FailedAndUnresolvableNodes", std::move(unresolvable)},
                {"Error", ""}};
  return reply;
}

K8sReply K8sExtender::Prioritize(std::string_view body) {
  K8sReply reply;
  const std::optional<json> j = ParseBody(body, &reply);
  if (!j) return reply;
  Result<K8sExtenderArgs> args = ParseExtenderArgs(*j);
  if (!args) return Failure(400, args.error().message);
  reply.body = json::array();
  for (const K8sNodeVerdict& v : pods_.Evaluate(
           args->pod, args->nodes, config_.pool, args->sharing_strategy)) {
    reply.body.push_back({{"Host", v.node}, {"Score", v.score}});
  }
  return reply;
}

Result<K8sPod> K8sExtender::FetchPod(const K8sPodRef& ref) {
  Result<K8sApiReply> r = api_->Send(
      "GET", "/api/v1/namespaces/" + ref.ns + "/pods/" + ref.name, "");
  TESSERA_RETURN_IF_ERROR(r);
  if (r->status != 200) {
    return BadInput("the API server answered " + std::to_string(r->status) +
                    " for pod " + PodName(ref) + ": " + ApiMessage(*r));
  }
  const json pod = json::parse(r->body, nullptr, false);
  Result<K8sPod> parsed = ParseK8sPod(pod, "the API server's pod");
  TESSERA_RETURN_IF_ERROR(parsed);
  if (!ref.uid.empty() && parsed->ref.uid != ref.uid) {
    return BadInput("pod " + PodName(ref) + " has uid " + parsed->ref.uid +
                    " at the API server, not " + ref.uid +
                    " (it was replaced)");
  }
  return parsed;
}

std::string K8sExtender::PostBinding(
    const K8sPodRef& pod, const std::string& node,
    const std::map<std::string, std::string>& notes, bool retry) {
  Result<K8sApiReply> r = api_->Send(
      "POST", "/api/v1/namespaces/" + pod.ns + "/pods/" + pod.name + "/binding",
      BindingJson(pod, node, notes).dump());
  if (!r) return r.error().message;
  // A retried bind whose first Binding got through is already bound.
  if (r->status == 200 || r->status == 201 || (retry && r->status == 409)) {
    return "";
  }
  return "the API server refused the binding (" + std::to_string(r->status) +
         "): " + ApiMessage(*r);
}

K8sReply K8sExtender::Bind(std::string_view body) {
  K8sReply reply;
  const std::optional<json> j = ParseBody(body, &reply);
  if (!j) return reply;
  Result<K8sBindingArgs> args = ParseBindingArgs(*j, /*node_required=*/true);
  if (!args) return Failure(400, args.error().message);
  const K8sPodRef& ref = args->pod;
  using Kind = K8sBindOutcome::Kind;
  Result<K8sBindOutcome> outcome =
      pods_.Bind(ref, args->node, nullptr, config_.pool);
  if (outcome && outcome->kind == Kind::kUnknownPod && api_) {
    // Filtered before a restart, or by another replica: ask the API server.
    Result<K8sPod> pod = FetchPod(ref);
    if (!pod) {
      const bool down = pod.error().code == ErrorCode::kInternal ||
                        pod.error().code == ErrorCode::kUnavailable;
      return Failure(down ? 503 : 404, pod.error().message);
    }
    outcome = pods_.Bind(ref, args->node, &*pod, config_.pool);
  }
  if (!outcome) return ServiceFailure(outcome.error());
  switch (outcome->kind) {
    case Kind::kUnknownPod:
      return Failure(404, outcome->message +
                              " and no api_server is configured to fetch it");
    case Kind::kUnknownNode:
      return Failure(404, outcome->message);
    case Kind::kRefused:
      reply.body = {{"Error", outcome->message}};
      return reply;
    case Kind::kNotManaged:
      if (!api_) {
        reply.body = {
            {"Error", "pod " + PodName(ref) +
                          " asks for no tessera resource and no api_server "
                          "is configured to bind it (list tessera's resources "
                          "under the extender's managedResources)"}};
        return reply;
      }
      reply.body = {{"Error", PostBinding(ref, args->node, {}, false)}};
      return reply;
    case Kind::kBound:
    case Kind::kAlreadyBound:
      break;
  }
  std::string error;
  if (api_) {
    error = PostBinding(ref, args->node, outcome->annotations,
                        outcome->kind == Kind::kAlreadyBound);
  }
  if (!error.empty()) {
    // Not bound: free the GPU share, kube-scheduler will try again.
    Result<std::optional<Job>> released =
        pods_.Release(ref, JobState::kFailed, error);
    if (!released) return ServiceFailure(released.error());
  }
  reply.body = {{"Error", error}};
  return reply;
}

K8sReply K8sExtender::Release(std::string_view body) {
  K8sReply reply;
  const std::optional<json> j = ParseBody(body, &reply);
  if (!j) return reply;
  Result<K8sBindingArgs> args = ParseBindingArgs(*j, /*node_required=*/false);
  if (!args) return Failure(400, args.error().message);
  Result<std::optional<Job>> job = pods_.Release(
      args->pod, JobState::kCancelled,
      "released: the pod ended or was deleted (POST /k8s/release)");
  if (!job) return ServiceFailure(job.error());
  if (!job->has_value()) {
    return Failure(
        404, "pod " + PodName(args->pod) +
                 (args->pod.uid.empty() ? "" : " (uid " + args->pod.uid + ")") +
                 " holds no reservation");
  }
  reply.body = {{"Error", ""}, {"JobId", (*job)->id}};
  return reply;
}

Result<std::unique_ptr<K8sExtender>> MakeK8sExtender(Service& service,
                                                     const K8sConfig& config) {
  std::unique_ptr<K8sApiClient> api;
  if (!config.api_server.empty()) {
    Result<std::unique_ptr<K8sApiClient>> client = MakeK8sApiClient(config);
    TESSERA_RETURN_IF_ERROR(client);
    api = std::move(client).value();
  }
  auto extender =
      std::make_unique<K8sExtender>(service, config, std::move(api));
  extender->StartResync(config.resync_s);
  return extender;
}

void RegisterK8sRoutes(http::Router& router, K8sExtender& extender,
                       const K8sGate& may_schedule, K8sGate may_release) {
  using Handler = K8sReply (K8sExtender::*)(std::string_view);
  auto route = [&](const char* path, Handler handler, K8sGate gate) {
    router.Post(path, [&extender, handler, gate = std::move(gate)](
                          const http::Request& req, http::Response& res) {
      K8sReply reply;
      try {
        if (!gate(req, res)) return;
        reply = (extender.*handler)(req.body);
      } catch (const std::exception& e) {
        reply = Failure(500, std::string("internal error: ") + e.what());
      } catch (...) {
        reply = Failure(500, "internal error");
      }
      res.status = reply.status;
      res.set_content(
          reply.body.dump(-1, ' ', false, json::error_handler_t::replace),
          kJsonType);
    });
  };
  route("/k8s/filter", &K8sExtender::Filter, may_schedule);
  route("/k8s/prioritize", &K8sExtender::Prioritize, may_schedule);
  route("/k8s/bind", &K8sExtender::Bind, may_schedule);
  route("/k8s/release", &K8sExtender::Release, std::move(may_release));
}

}  // namespace tessera::k8s
