#ifndef TESSERA_SERVER_HTTP_REPLY_INTERNAL_H_
#define TESSERA_SERVER_HTTP_REPLY_INTERNAL_H_

// How the API's routes answer (server/http_server.cc and the route files
// beside it): JSON bodies and errors, the service's errors mapped to HTTP
// statuses, ETags and 304s for what clients poll, query parameters and
// bodies checked, and handlers that never throw. Internal to server/.

#include <cstdint>
#include <exception>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>
#include "common/result.h"
#include "http/transport.h"

namespace tessera::server::http_reply {

inline constexpr const char* kJsonType = "application/json";
inline constexpr const char* kMetricsType = "text/plain; version=0.0.4";

// `body` with `status`; invalid UTF-8 (a command's bytes) replaced.
void SendJson(http::Response& res, int status, const nlohmann::json& body);
// {"error": message} with `status`.
void SendError(http::Response& res, int status, const std::string& message);
// The extender's errors carry the protocol's Error too.
void SendExtenderError(http::Response& res, int status,
                       const std::string& message);

// Whether the request's If-None-Match names `etag` (or is "*").
bool NotModified(const http::Request& req, std::string_view etag);
// A 200 with `body` and its tag `etag`, or a bodiless 304 when the client
// already has it: what the console polls (docs/http_api.md, "Polling").
void SendTagged(const http::Request& req, http::Response& res, std::string body,
                const std::string& content_type, std::string_view etag);
// SendTagged with the body's own tag.
void SendCached(const http::Request& req, http::Response& res, std::string body,
                const std::string& content_type);
void SendJsonCached(const http::Request& req, http::Response& res,
                    const nlohmann::json& body);

// The HTTP status of a service error: a request it rejects is 422, one to
// try again later 503 (429 when rate limited), a failure of its own 500.
int ServiceErrorStatus(ErrorCode code);
// SendError with ServiceErrorStatus, and Retry-After when rate limited.
void SendServiceError(http::Response& res, const Error& error);

// A whole decimal number, the whole of `text`; nullopt otherwise.
std::optional<int64_t> ParseInt(std::string_view text);
// Query parameters must be among `known` (a typo is an error, not an
// unfiltered answer): else a 400 naming them and false.
bool CheckParams(const http::Request& req, http::Response& res,
                 std::initializer_list<std::string_view> known);
// The request's body as JSON, or a 400 and nullopt.
std::optional<nlohmann::json> JsonBody(const http::Request& req,
                                       http::Response& res);

// Runs `handler`, turning an escaped exception into a 500.
template <typename Handler>
http::Handler Guarded(Handler handler) {
  return [handler = std::move(handler)](const http::Request& req,
                                        http::Response& res) {
    try {
      handler(req, res);
    } catch (const std::exception& e) {
      SendError(res, 500, std::string("internal error: ") + e.what());
    } catch (...) {
      SendError(res, 500, "internal error");
    }
  };
}

}  // namespace tessera::server::http_reply

#endif  // TESSERA_SERVER_HTTP_REPLY_INTERNAL_H_
