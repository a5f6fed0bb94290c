// How the API's routes answer (http_reply_internal.h).

#include "server/http_reply_internal.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <utility>

#include "common/strings.h"

namespace tessera::server::http_reply {

using http::Request;
using http::Response;
using nlohmann::json;

void SendJson(Response& res, int status, const json& body) {
  res.status = status;
  // Replace rather than throw on invalid UTF-8 (a command's bytes).
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace),
                  kJsonType);
}

void SendError(Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"error", message}});
}

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

void SendExtenderError(Response& res, int status, const std::string& message) {
  SendJson(res, status, json{{"Error", message}, {"error", message}});
}

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

std::optional<json> JsonBody(const Request& req, Response& res) {
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    SendError(res, 400, std::string("malformed JSON: ") + e.what());
    return std::nullopt;
  }
}

}  // namespace tessera::server::http_reply
