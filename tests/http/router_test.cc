// The router: method and whole-path regex matching, groups, 404 and 500
// through the error writer; and which hosts count as loopback.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "http/transport.h"

namespace tessera::http {
namespace {

void WriteError(std::string_view path, int status, const std::string& message,
                Response& res) {
  res.status = status;
  res.set_content(std::string(path) + ": " + message, "text/plain");
}

Request Make(std::string method, std::string path) {
  Request req;
  req.method = std::move(method);
  req.path = std::move(path);
  return req;
}

TEST(Router, MatchesMethodAndWholePathWithGroups) {
  Router router;
  router.Get(R"(/v1/jobs/([^/]+))", [](const Request& req, Response& res) {
    res.set_content("job " + req.matches[1], "text/plain");
  });
  router.Post(R"(/v1/jobs/([^/]+))",
              [](const Request&, Response& res) { res.status = 201; });
  Request get = Make("GET", "/v1/jobs/42");
  Response res;
  router.Dispatch(get, res, WriteError);
  EXPECT_EQ(res.status, 200);
  EXPECT_EQ(res.body, "job 42");

  Request post = Make("POST", "/v1/jobs/42");
  Response created;
  router.Dispatch(post, created, WriteError);
  EXPECT_EQ(created.status, 201);

  Request longer = Make("GET", "/v1/jobs/42/logs");
  Response missing;
  router.Dispatch(longer, missing, WriteError);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body, "/v1/jobs/42/logs: no route GET /v1/jobs/42/logs");
}

TEST(Router, AnEscapingExceptionIs500) {
  Router router;
  router.Get("/boom", [](const Request&, Response& res) {
    res.set_header("X-Half", "done");
    throw std::runtime_error("kaput");
  });
  Request req = Make("GET", "/boom");
  Response res;
  router.Dispatch(req, res, WriteError);
  EXPECT_EQ(res.status, 500);
  EXPECT_EQ(res.body, "/boom: internal error: kaput");
  EXPECT_TRUE(res.headers.empty());
}

TEST(Request, HeadersMatchInAnyCaseParamsExactly) {
  Request req;
  req.headers = {{"authorization", "Bearer t"}};
  req.params = {{"state", "running"}, {"state", "queued"}};
  EXPECT_TRUE(req.has_header("Authorization"));
  EXPECT_EQ(req.header("AUTHORIZATION"), "Bearer t");
  EXPECT_EQ(req.header("X-None"), "");
  EXPECT_EQ(req.param("state"), "running");
  EXPECT_FALSE(req.has_param("State"));
}

TEST(IsLoopbackHost, OnlyThisMachine) {
  for (const char* host : {"127.0.0.1", "127.1.2.3", "::1", "localhost"}) {
    EXPECT_TRUE(IsLoopbackHost(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "::", "10.0.0.1", "127.0.0.1.example.com",
                           "", "128.0.0.1"}) {
    EXPECT_FALSE(IsLoopbackHost(host)) << host;
  }
}

}  // namespace
}  // namespace tessera::http
