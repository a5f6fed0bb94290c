// QueueClient: one httplib::Client per call (the CLI makes a few calls;
// a pooled connection would buy nothing there).
#include "client/queue_client.h"

#include <httplib.h>

#include <cstdlib>
#include <utility>

#include "service/wire/job_json.h"

namespace tessera::client {
namespace {

using nlohmann::json;

constexpr time_t kConnectTimeoutSeconds = 5;
constexpr time_t kReadTimeoutSeconds = 60;

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

struct QueueClient::Reply {
  int status = 0;
  std::string body;
  httplib::Headers headers;
};

QueueClient::QueueClient(std::string url, std::string token)
    : url_(Resolve(std::move(url), kUrlEnv, kDefaultUrl)),
      token_(Resolve(std::move(token), kTokenEnv, "")) {
  while (!url_.empty() && url_.back() == '/') url_.pop_back();
}

Result<QueueClient::Reply> QueueClient::Send(const std::string& method,
                                             const std::string& path,
                                             const std::string& body,
                                             const char* content_type) const {
  if (url_.rfind("http://", 0) != 0 && url_.rfind("https://", 0) != 0) {
    return BadInput("--url: '" + url_ +
                    "' must start with http:// or https:// (e.g. " +
                    kDefaultUrl + ")");
  }
  httplib::Client client(url_);
  if (!client.is_valid()) return BadInput("--url: '" + url_ + "' is not a URL");
  client.set_connection_timeout(kConnectTimeoutSeconds);
  client.set_read_timeout(kReadTimeoutSeconds);
  client.set_tcp_nodelay(true);
  if (!token_.empty()) client.set_bearer_token_auth(token_);
  httplib::Result res = method == "GET" ? client.Get(path)
                                        : client.Post(path, body, content_type);
  if (!res) {
    return Unavailable("cannot reach the tessera service at " + url_ + " (" +
                       httplib::to_string(res.error()) +
                       " error); is `tessera serve` running? (--url or " +
                       kUrlEnv + ")");
  }
  Reply reply{res->status, res->body, res->headers};
  if (reply.status >= 400) {
    std::string message = ErrorMessage(reply.status, reply.body);
    if (reply.status == 401 && token_.empty()) {
      message += " (no token: set --token or " + std::string(kTokenEnv) + ")";
    }
    if (reply.status < 500) return BadInput(message);
    return reply.status == 503 ? Unavailable(message) : Internal(message);
  }
  return reply;
}

Result<json> QueueClient::SendJson(const std::string& method,
                                   const std::string& path,
                                   const std::string& body,
                                   const char* content_type) const {
  Result<Reply> reply = Send(method, path, body, content_type);
  TESSERA_RETURN_IF_ERROR(reply);
  json j = json::parse(reply->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    return Internal("the service answered something that is not JSON");
  }
  return j;
}

Result<json> QueueClient::Submit(const scheduler::JobRequest& request) const {
  return SendJson("POST", "/v1/jobs", service::JobRequestJson(request).dump());
}

Result<json> QueueClient::UploadModel(const std::string& onnx_bytes) const {
  return SendJson("POST", "/v1/models", onnx_bytes, "application/octet-stream");
}

Result<json> QueueClient::Jobs(const JobQuery& query) const {
  return SendJson(
      "GET",
      "/v1/jobs" +
          Query(
              {{"state", query.state},
               {"user", query.user},
               {"pool", query.pool},
               {"limit", query.limit > 0 ? std::to_string(query.limit) : ""}}),
      "");
}

Result<json> QueueClient::Job(int64_t id) const {
  return SendJson("GET", "/v1/jobs/" + std::to_string(id), "");
}

Result<json> QueueClient::Events(int64_t id) const {
  return SendJson("GET", "/v1/jobs/" + std::to_string(id) + "/events", "");
}

Result<LogChunk> QueueClient::Logs(int64_t id, bool stderr_log,
                                   int64_t offset) const {
  Result<Reply> reply =
      Send("GET",
           "/v1/jobs/" + std::to_string(id) +
               "/logs?stream=" + (stderr_log ? "stderr" : "stdout") +
               "&offset=" + std::to_string(offset),
           "");
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
  return SendJson("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "");
}

Result<json> QueueClient::Progress(int64_t id, int64_t steps) const {
  return SendJson("POST", "/v1/jobs/" + std::to_string(id) + "/progress",
                  json{{"steps", steps}}.dump());
}

Result<json> QueueClient::Cluster() const {
  return SendJson("GET", "/v1/cluster", "");
}

Result<json> QueueClient::Queue(const std::string& pool) const {
  return SendJson("GET", "/v1/queue" + Query({{"pool", pool}}), "");
}

Result<json> QueueClient::Drain(const std::string& node, bool undo) const {
  return SendJson("POST",
                  "/v1/nodes/" + node + "/" + (undo ? "undrain" : "drain"), "");
}

bool IsTerminalStateName(const std::string& state) {
  const std::optional<scheduler::JobState> s = scheduler::ParseJobState(state);
  return s && scheduler::IsTerminal(*s);
}

}  // namespace tessera::client
