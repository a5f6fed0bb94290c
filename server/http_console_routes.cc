// The web console's side of the API (docs/console.md): its embedded files
// (`/`, `/console/NAME`: no token, a strict content security policy),
// `GET /v1/whoami` for its login, and a split job's plan pictures.

#include <fstream>
#include <iterator>
#include <string>

#include "console/assets.h"
#include "server/http_reply_internal.h"
#include "server/http_server_internal.h"

namespace tessera::server {
namespace {

using http::Request;
using http::Response;
using http_reply::CheckParams;
using http_reply::Guarded;
using http_reply::SendCached;
using http_reply::SendError;
using http_reply::SendJson;
using http_reply::SendTagged;
using nlohmann::json;

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

}  // namespace

void HttpServer::Impl::RegisterConsole() {
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

}  // namespace tessera::server
