// Replicas over HTTP (docs/operations.md, "High availability"): the role
// headers every answer carries, the routes a follower sends to the leader,
// and /healthz and /readyz.

#include <cctype>
#include <cstdio>
#include <cstring>
#include <regex>
#include <string>

#include "server/http_reply_internal.h"
#include "server/http_server_internal.h"

namespace tessera::server {
namespace {

using http::Request;
using http::Response;
using http_reply::SendError;
using http_reply::SendExtenderError;
using http_reply::SendJson;

// A follower's view older than this (the store unreachable) is not ready.
inline constexpr double kStaleViewS = 10;

// What only the leader does: it decides (drains, the scheduler
// extender), it measures (progress), it holds the elastic jobs' workers
// and the uploaded models.
bool LeaderOnly(const Request& req) {
  static const std::regex kPaths(
      R"(/v1/nodes/[^/]+/(drain|undrain)|/v1/jobs/[^/]+/(progress|allocation|release)|/v1/models|/k8s/.*)");
  return std::regex_match(req.path, kPaths);
}

// RFC 3986's unreserved characters stay; `keep` ("/" in a path) too.
std::string Encoded(const std::string& text, const char* keep) {
  std::string out;
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' ||
        std::strchr(keep, c) != nullptr) {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string Fixed3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", v);
  return buf;
}

}  // namespace

namespace {

void Tag(const service::ReplicaStatus& r, Response& res) {
  if (!r.replicated) return;
  res.headers.emplace_back("X-Tessera-Replica", r.name);
  res.headers.emplace_back("X-Tessera-Role", r.leader ? "leader" : "follower");
  if (!r.leader) {
    // How old the follower's view of the jobs is (at most about a round).
    res.headers.emplace_back("X-Tessera-View-Age", Fixed3(r.view_age_s));
  }
}

}  // namespace

void HttpServer::Impl::TagReplica(Response& res) const {
  Tag(service.Replica(), res);
}

bool HttpServer::Impl::BeforeRoute(const Request& req, Response& res) const {
  const service::ReplicaStatus r = service.Replica();
  Tag(r, res);
  if (!r.replicated || r.leader || !LeaderOnly(req)) return true;
  ToLeader(req, res, r);
  return false;
}

void HttpServer::Impl::ToLeader(const Request& req, Response& res,
                                const service::ReplicaStatus& r) const {
  const bool extender = req.path.rfind("/k8s/", 0) == 0;
  if (r.leader_address.empty() || r.leader_name == r.name) {
    res.headers.emplace_back("Retry-After", "1");
    const std::string why =
        "replica " + r.name +
        " follows and no replica leads now (one takes over within the "
        "lease); try again";
    extender ? SendExtenderError(res, 503, why) : SendError(res, 503, why);
    return;
  }
  std::string location = r.leader_address + Encoded(req.path, "/");
  for (size_t i = 0; i < req.params.size(); ++i) {
    location += (i == 0 ? "?" : "&") + Encoded(req.params[i].first, "") + "=" +
                Encoded(req.params[i].second, "");
  }
  res.headers.emplace_back("Location", location);
  const std::string why = "replica " + r.name + " follows; replica " +
                          r.leader_name + " leads at " + r.leader_address +
                          ", which serves " + req.method + " " + req.path;
  if (extender) {
    SendExtenderError(res, 307, why);
    return;
  }
  SendJson(res, 307,
           nlohmann::json{{"error", why}, {"leader", r.leader_address}});
}

void HttpServer::Impl::Health(const Request& req, Response& res,
                              bool ready) const {
  const service::ReplicaStatus r = service.Replica();
  nlohmann::json body = service::ReplicaStatusJson(r);
  body["ok"] = true;
  if (!ready) {
    SendJson(res, 200, body);
    return;
  }
  // Ready: the leader, or a follower whose view is recent; with
  // ?role=leader (a load balancer's check) the leader alone.
  std::string why;
  if (req.param("role") == "leader" && !r.leader) {
    why = "replica " + r.name + " follows";
  } else if (!r.leader && r.view_age_s > kStaleViewS) {
    why = "replica " + r.name + "'s view of the jobs is " +
          Fixed3(r.view_age_s) + " s old (the store is unreachable)";
  }
  body["ready"] = why.empty();
  if (!why.empty()) body["reason"] = why;
  SendJson(res, why.empty() ? 200 : 503, body);
}

}  // namespace tessera::server
