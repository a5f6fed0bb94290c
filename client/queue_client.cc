// QueueClient: one httplib::Client per call (the CLI makes a few calls;
// a pooled connection would buy nothing there).
#include "client/queue_client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "service/wire/job_json.h"

namespace tessera::client {
namespace {

using nlohmann::json;

constexpr time_t kConnectTimeoutSeconds = 5;
constexpr time_t kReadTimeoutSeconds = 60;
// Retries (RetryOptions) wait the service's Retry-After, or this at first,
// twice as long each time after; never less than the first nor more than
// the most.
constexpr double kFirstBackoffSeconds = 0.25;
constexpr double kMaxWaitSeconds = 4;

std::string Resolve(std::string given, const char* env, const char* fallback) {
  if (!given.empty()) return given;
  const char* value = std::getenv(env);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The server's {"error": ...} message, or the body, or the status.
std::string ErrorMessage(int status, const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    return j["error"].get<std::string>();
  }
  if (!body.empty() && body.size() < 500) return body;
  return "HTTP " + std::to_string(status);
}

std::string Query(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string q;
  for (const auto& [k, v] : kv) {
    if (v.empty()) continue;
    q += (q.empty() ? "?" : "&") + k + "=" +
         httplib::detail::encode_query_param(v);
  }
  return q;
}

}  // namespace

struct QueueClient::Call {
  Call(std::string verb, std::string target, std::string content = "",
       const char* type = "application/json")
      : method(std::move(verb)),
        path(std::move(target)),
        body(std::move(content)),
        content_type(type) {}

  std::string method;  // GET or POST
  std::string path;    // with its query
  std::string body;
  const char* content_type;
  std::string idempotency_key;  // "" = no Idempotency-Key header
};

struct QueueClient::Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
};

namespace {

bool IsHttps(const std::string& url) { return url.rfind("https://", 0) == 0; }

bool IsHttpUrl(const std::string& url) {
  return url.rfind("http://", 0) == 0 || IsHttps(url);
}

// An http(s) URL split into what httplib's client is made with
// ("http://host:port") and the path with its query; nullopt for anything
// else.
std::optional<std::pair<std::string, std::string>> SplitUrl(
    const std::string& url) {
  if (!IsHttpUrl(url)) return std::nullopt;
  const size_t host = url.find("://") + 3;
  const size_t path = url.find_first_of("/?#", host);
  if (path == host) return std::nullopt;  // no host
  if (path == std::string::npos) return std::pair{url, std::string("/")};
  std::string rest = url.substr(path);
  rest = rest.substr(0, rest.find('#'));
  if (rest.empty() || rest[0] != '/') rest = "/" + rest;
  return std::pair{url.substr(0, path), rest};
}

// A 503's Retry-After in seconds (the delay form; a date is not sent by
// tessera), or 0 when absent.
double RetryAfter(const httplib::Headers& headers) {
  const auto it = headers.find("Retry-After");
  if (it == headers.end()) return 0;
  char* end = nullptr;
  const double s = std::strtod(it->second.c_str(), &end);
  return end != it->second.c_str() && s > 0 ? s : 0;
}

}  // namespace

QueueClient::QueueClient(std::string url, std::string token)
    : url_(Resolve(std::move(url), kUrlEnv, kDefaultUrl)),
      token_(Resolve(std::move(token), kTokenEnv, "")) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

Result<QueueClient::Reply> QueueClient::Exchange(const Call& call) const {
  if (!IsHttpUrl(url_)) {
    return BadInput("--url: '" + url_ +
                    "' must start with http:// or https:// (e.g. " +
                    kDefaultUrl + ")");
  }
  // One request to `base`; when none answers, "cannot reach `who` at
  // `base` (why)`hint`".
  const auto once = [&](const std::string& base, const std::string& path,
                        const std::string& who,
                        const std::string& hint) -> Result<Reply> {
    httplib::Client client(base);
    if (!client.is_valid()) return BadInput("'" + base + "' is not a URL");
    client.set_connection_timeout(kConnectTimeoutSeconds);
    client.set_read_timeout(kReadTimeoutSeconds);
    client.set_tcp_nodelay(true);
    if (!token_.empty()) client.set_bearer_token_auth(token_);
    httplib::Headers headers;
    if (!call.idempotency_key.empty()) {
      headers.emplace("Idempotency-Key", call.idempotency_key);
    }
    httplib::Result res =
        call.method == "GET"
            ? client.Get(path, headers)
            : client.Post(path, headers, call.body, call.content_type);
    if (!res) {
      return Unavailable("cannot reach " + who + " at " + base + " (" +
                         httplib::to_string(res.error()) + " error)" + hint);
    }
    return Reply{res->status, res->body, res->headers};
  };
  Result<Reply> first = once(
      url_, call.path, "the tessera service",
      std::string("; is `tessera serve` running? (--url or ") + kUrlEnv + ")");
  if (!first || first->status != 307) return first;

  // A follower sends what only the leader does to the leader: once.
  const auto location = first->headers.find("Location");
  const std::string to =
      location == first->headers.end() ? "" : location->second;
  const auto target = SplitUrl(to);
  if (!target) {
    return Internal("the service at " + url_ + " redirected " + call.method +
                    " " + call.path + " to '" + to +
                    "', which is not an http(s) URL");
  }
  if (IsHttps(url_) && !IsHttps(to)) {
    return Internal("the service at " + url_ + " redirected " + call.method +
                    " " + call.path + " to " + to +
                    ", without TLS: not followed, so that the token does not "
                    "travel in the clear (the replicas' ha.advertise should "
                    "be https URLs)");
  }
  Result<Reply> second =
      once(target->first, target->second, "the leading replica",
           ", where the replica at " + url_ + " sent the request");
  if (second && second->status == 307) {
    return Unavailable("the service at " + url_ + " sent " + call.method + " " +
                       call.path + " to " + target->first +
                       ", which sent it on again: the replicas do not agree "
                       "which of them leads (a failover under way?)");
  }
  return second;
}

Result<QueueClient::Reply> QueueClient::Send(const Call& call) const {
  Result<Reply> reply = Exchange(call);
  TESSERA_RETURN_IF_ERROR(reply);
  if (reply->status >= 400) {
    std::string message = ErrorMessage(reply->status, reply->body);
    if (reply->status == 401 && token_.empty()) {
      message += " (no token: set --token or " + std::string(kTokenEnv) + ")";
    }
    if (reply->status < 500) return BadInput(message);
    if (reply->status != 503) return Internal(message);
    Error unavailable = Unavailable(message);
    unavailable.retry_after_s = RetryAfter(reply->headers);
    return unavailable;
  }
  return reply;
}

Result<json> QueueClient::SendJson(const Call& call) const {
  Result<Reply> reply = Send(call);
  TESSERA_RETURN_IF_ERROR(reply);
  json j = json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Internal("the service answered something that is not JSON");
  }
  return j;
}

Result<json> QueueClient::SendJsonRetried(const Call& call,
                                          const RetryOptions& retry) const {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  double backoff_s = kFirstBackoffSeconds;
  for (int tries = 1;; ++tries) {
    Result<json> answer = SendJson(call);
    if (answer || answer.error().code != ErrorCode::kUnavailable) {
      return answer;
    }
    const double wait_s = std::clamp(answer.error().retry_after_s > 0
                                         ? answer.error().retry_after_s
                                         : backoff_s,
                                     kFirstBackoffSeconds, kMaxWaitSeconds);
    backoff_s = std::min(2 * backoff_s, kMaxWaitSeconds);
    const double spent_s =
        std::chrono::duration<double>(Clock::now() - start).count();
    if (spent_s + wait_s > retry.for_s) {
      if (tries == 1) return answer;
      Error last = answer.error();
      last.message += " (tried " + std::to_string(tries) + " times over " +
                      std::to_string(std::lround(spent_s)) + " s)";
      return last;
    }
    if (retry.on_retry) retry.on_retry(answer.error(), wait_s);
    std::this_thread::sleep_for(std::chrono::duration<double>(wait_s));
  }
}

Result<json> QueueClient::Submit(const scheduler::JobRequest& request,
                                 const RetryOptions& retry) const {
  Call call{"POST", "/v1/jobs", service::JobRequestJson(request).dump()};
  call.idempotency_key = retry.idempotency_key;
  return SendJsonRetried(call, retry);
}

Result<json> QueueClient::UploadModel(const std::string& onnx_bytes,
                                      const RetryOptions& retry) const {
  return SendJsonRetried(
      Call{"POST", "/v1/models", onnx_bytes, "application/octet-stream"},
      retry);
}

Result<json> QueueClient::Jobs(const JobQuery& query) const {
  return SendJson(Call{
      "GET", "/v1/jobs" +
                 Query({{"state", query.state},
                        {"user", query.user},
                        {"pool", query.pool},
                        {"limit", query.limit > 0 ? std::to_string(query.limit)
                                                  : ""}})});
}

Result<json> QueueClient::Job(int64_t id) const {
  return SendJson(Call{"GET", "/v1/jobs/" + std::to_string(id)});
}

Result<json> QueueClient::Events(int64_t id) const {
  return SendJson(Call{"GET", "/v1/jobs/" + std::to_string(id) + "/events"});
}

Result<LogChunk> QueueClient::Logs(int64_t id, bool stderr_log,
                                   int64_t offset) const {
  Result<Reply> reply =
      Send(Call{"GET", "/v1/jobs/" + std::to_string(id) + "/logs?stream=" +
                           (stderr_log ? "stderr" : "stdout") +
                           "&offset=" + std::to_string(offset)});
  TESSERA_RETURN_IF_ERROR(reply);
  LogChunk chunk;
  chunk.text = std::move(reply->body);
  const auto next = reply->headers.find("X-Next-Offset");
  chunk.next_offset = next != reply->headers.end()
                          ? std::strtoll(next->second.c_str(), nullptr, 10)
                          : offset + static_cast<int64_t>(chunk.text.size());
  const auto state = reply->headers.find("X-Job-State");
  if (state != reply->headers.end()) chunk.job_state = state->second;
  return chunk;
}

Result<json> QueueClient::Cancel(int64_t id) const {
  return SendJson(Call{"POST", "/v1/jobs/" + std::to_string(id) + "/cancel"});
}

Result<json> QueueClient::Progress(int64_t id, int64_t steps) const {
  return SendJson(Call{"POST", "/v1/jobs/" + std::to_string(id) + "/progress",
                       json{{"steps", steps}}.dump()});
}

Result<json> QueueClient::Cluster() const {
  return SendJson(Call{"GET", "/v1/cluster"});
}

Result<json> QueueClient::Queue(const std::string& pool) const {
  return SendJson(Call{"GET", "/v1/queue" + Query({{"pool", pool}})});
}

Result<json> QueueClient::Drain(const std::string& node, bool undo) const {
  return SendJson(
      Call{"POST", "/v1/nodes/" + node + "/" + (undo ? "undrain" : "drain")});
}

std::string NewIdempotencyKey() {
  // std::random_device reads the kernel's random source (/dev/urandom).
  std::random_device random;
  std::string key;
  char hex[9];
  for (int i = 0; i < 4; ++i) {
    std::snprintf(hex, sizeof hex, "%08x", static_cast<unsigned>(random()));
    key += hex;
  }
  return key;
}

bool IsTerminalStateName(const std::string& state) {
  const std::optional<scheduler::JobState> s = scheduler::ParseJobState(state);
  return s && scheduler::IsTerminal(*s);
}

}  // namespace tessera::client
